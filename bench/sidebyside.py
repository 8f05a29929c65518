"""The recording proxy, mitmproxy and a direct connection, side by side in one run.

One fake provider (`bench/proxy.py --fake PORT`, in its own process), one client (this process,
httpx's async client, the same for every target), and the targets in turn:

- `direct`: the fake provider itself;
- `streamviz`: `streamviz serve --upstream` of this checkout on a throwaway SQLite store
  (recording every stream, as a team's server does);
- `before` (with `--against DIR`): the same from another checkout (a `git worktree`);
- `mitmproxy`: `mitmdump --mode reverse:URL --set stream_large_bodies=1` (bodies streamed, not
  buffered), from a venv of its own (`bench/.venv-mitm`, made when missing: mitmproxy pins its
  own h11 and cryptography, so it stays out of the project's venv).

Measured for each target, the targets alternating inside every measure so that this shared
machine's drift falls on all of them alike:

- CPU per chunk: the proxy process's user + system time (`/proc/PID/stat`, with its children)
  over a measure, divided by the chunks it relayed. The machine is shared (2 cores, often a
  load of 10): wall-clock figures measure the neighbours too; CPU time per chunk does not, so
  it is the figure to compare.
- chunks/s in total with 1, 20 and 50 concurrent unpaced streams of `--burst` chunks (run
  again until `--least` chunks were relayed: CPU time is counted in 10 ms ticks), of
  `--shape` (`call`, by default: a call opened, then its JSON arguments in pieces, as
  providers send one; `drops`: pieces of no call, the figures before 2026-12-05);
- latency added per chunk (p50/p95/p99 of arrival minus the fake's stamp, minus direct's) on
  paced streams, one at a time;
- the proxy's RSS after each of `--rounds` identical rounds;
- that the bytes the client got are the bytes the fake sent (a digest per stream, every
  target).

Prints a table, ratios against mitmproxy's figures of the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proxy import SHAPES, fixed_chunk, pct
from serving import HOST, ROOT, Server, free_port, throwaway_store

MITM_VERSION = "11.0.2"
MITM_VENV = ROOT / "bench" / ".venv-mitm"
TICKS = os.sysconf("SC_CLK_TCK")


def expected_digest(n: int, shape: str) -> str:
    """The digest of a fixed stream of n chunks of `shape` and its `[DONE]`."""
    digest = hashlib.sha256()
    for i in range(n):
        digest.update(fixed_chunk(i, n, shape))
    digest.update(b"data: [DONE]\n\n")
    return digest.hexdigest()


def mitmdump() -> Path:
    """mitmdump from `bench/.venv-mitm`, installed there first when missing."""
    binary = MITM_VENV / "bin" / "mitmdump"
    if not binary.exists():
        print(f"installing mitmproxy {MITM_VERSION} into {MITM_VENV} (once)", flush=True)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(MITM_VENV)], check=True)
        pip = [str(MITM_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, f"mitmproxy=={MITM_VERSION}"], check=True)
    return binary


def process_tree(pid: int) -> list[int]:
    """The process and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def _ticks(stat: Path) -> int:
    """utime + stime (fields 14 and 15) of a /proc stat file, 0 once it is gone."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int) -> tuple[float, float]:
    """User + system CPU seconds so far: of the process and its descendants, and of the
    process's main thread alone (the event loop's, for uvicorn and mitmdump)."""
    total = sum(_ticks(Path(f"/proc/{each}/stat")) for each in process_tree(pid))
    return total / TICKS, _ticks(Path(f"/proc/{pid}/task/{pid}/stat")) / TICKS


def settled_cpu(pid: int, most_s: float = 120.0) -> tuple[float, float]:
    """`cpu_seconds` once the process has done the work its streams left behind (streamviz
    indexes each capture in a background thread as it ends): read again every 0.25 s until
    it has stopped growing (under 2 ticks in one such window), or after `most_s`."""
    last, deadline = cpu_seconds(pid), time.monotonic() + most_s
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = cpu_seconds(pid)
        if now[0] - last[0] < 2 / TICKS:
            return now
        last = now
    return last


def rss_mb(pid: int) -> float:
    """Resident set of the process and its descendants, MB."""
    total = 0
    for each in process_tree(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


@dataclass
class Target:
    """One way to the fake provider: a URL and the process relaying it (None: direct)."""

    name: str
    url: str
    pid: int | None
    cpu: dict[int, list[float]] = field(default_factory=dict)
    """Streams at once -> CPU microseconds per chunk, one per round."""
    loop_cpu: dict[int, list[float]] = field(default_factory=dict)
    """The same of the main thread alone (the relay's event loop; the rest is other threads:
    streamviz's recording, mitmproxy's few helpers)."""
    rate: dict[int, list[float]] = field(default_factory=dict)
    """Streams at once -> chunks/s in total, one per round."""
    latency: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    bytes_ok: bool = True


async def fixed_stream(client: httpx.AsyncClient, url: str, n: int, shape: str = "call") -> str:
    """One unpaced fixed stream of n chunks of `shape`; the digest of the bytes received."""
    digest = hashlib.sha256()
    body = {"model": "gpt-bench", "stream": True, "n": n, "fixed": True, "shape": shape}
    async with client.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            said = (await response.aread())[:500].decode("utf-8", "replace")
            raise RuntimeError(f"{url}: {response.status_code} {said}")
        async for piece in response.aiter_raw():
            digest.update(piece)
    return digest.hexdigest()


async def paced_stream(client: httpx.AsyncClient, url: str, n: int, pause_ms: float) -> list[float]:
    """Latencies (ms) of a paced stream's chunks: arrival minus the fake's stamp."""
    latencies: list[float] = []
    buffer = b""
    body = {"model": "gpt-bench", "stream": True, "n": n, "pause_ms": pause_ms}
    async with client.stream("POST", url, json=body) as response:
        async for piece in response.aiter_raw():
            now = time.monotonic_ns()
            buffer += piece
            *done, buffer = buffer.split(b"\n\n")
            for event in done:
                if event.startswith(b"data: {"):
                    latencies.append((now - int(event[event.rindex(b":") + 1 : -1])) / 1e6)
    return latencies


async def throughput(
    client: httpx.AsyncClient,
    target: Target,
    streams: int,
    burst: int,
    want: str,
    least: int,
    shape: str,
) -> None:
    """`streams` fixed streams at once through `target`, again until `least` chunks were
    relayed (CPU time is counted in 10 ms ticks): chunks/s and CPU per chunk (all the CPU the
    streams cost, counted until the process is quiet again: `settled_cpu`)."""
    before = cpu_seconds(target.pid) if target.pid else (0.0, 0.0)
    start = time.perf_counter()
    digests: list[str] = []
    while not digests or len(digests) * (burst + 1) < least:
        digests += await asyncio.gather(
            *(fixed_stream(client, target.url, burst, shape) for _ in range(streams))
        )
    elapsed = time.perf_counter() - start
    chunks = len(digests) * (burst + 1)
    target.rate.setdefault(streams, []).append(chunks / elapsed)
    if target.pid:
        after = await asyncio.to_thread(settled_cpu, target.pid)
        target.cpu.setdefault(streams, []).append((after[0] - before[0]) / chunks * 1e6)
        target.loop_cpu.setdefault(streams, []).append((after[1] - before[1]) / chunks * 1e6)
    target.bytes_ok &= all(d == want for d in digests)


async def measure(args: argparse.Namespace, targets: list[Target]) -> None:
    # Idle connections dropped before the servers' 5 s (uvicorn's, the fake's): a reused one that
    # the server is closing would fail a stream (ReadError), as it did once.
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=2.0)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(300.0)) as client:
        want = expected_digest(args.burst, args.shape)
        for target in targets:  # warm every path (connections, imports, the store)
            await fixed_stream(client, target.url, 50)
            await paced_stream(client, target.url, 20, 0)
        for run in range(args.latency_runs):
            for target in targets if run % 2 == 0 else targets[::-1]:
                target.latency += await paced_stream(client, target.url, args.chunks, args.pause_ms)
        print(f"latency: {args.latency_runs} paced streams of {args.chunks} each", flush=True)
        for round_ in range(args.rounds):
            for streams in args.concurrency:
                order = targets if (round_ + streams) % 2 == 0 else targets[::-1]
                for target in order:
                    await throughput(
                        client, target, streams, args.burst, want, args.least, args.shape
                    )
            for target in targets:
                if target.pid:
                    target.rss.append(rss_mb(target.pid))
            print(f"round {round_ + 1} of {args.rounds} done", flush=True)


def report(args: argparse.Namespace, targets: list[Target]) -> None:
    """The table, with ratios against mitmproxy's figures."""
    mitm = next((t for t in targets if t.name == "mitmproxy"), None)
    direct = next(t for t in targets if t.name == "direct")
    d50, d95, d99 = (pct(direct.latency, q) for q in (0.5, 0.95, 0.99))
    print(f"\nper target ({args.rounds} rounds of {args.burst}-chunk {args.shape} streams; "
          "CPU and chunks/s the median of the rounds; latency added over direct's "
          f"p50/p95/p99 {d50:.2f}/{d95:.2f}/{d99:.2f} ms):")  # fmt: skip
    head = " | ".join(
        [f"CPU us/chunk @{n}" for n in args.concurrency]
        + [f"loop thread's @{n}" for n in args.concurrency]
        + [f"chunks/s @{n}" for n in args.concurrency]
    )
    print(f"| target | {head} | added p50/p95/p99 ms | RSS per round MB | bytes identical |")
    print("|---" * (3 + 3 * len(args.concurrency)) + "|---|")
    for target in targets:
        cells = []
        for figures, theirs in (
            (target.cpu, mitm and mitm.cpu),
            (target.loop_cpu, mitm and mitm.loop_cpu),
        ):
            for n in args.concurrency:
                cpu = statistics.median(figures[n]) if figures.get(n) else None
                ratio = ""
                if cpu is not None and theirs and target is not mitm and theirs.get(n):
                    ratio = f" ({cpu / statistics.median(theirs[n]):.2f}x)"
                cells.append("-" if cpu is None else f"{cpu:.1f}{ratio}")
        for n in args.concurrency:
            rate = statistics.median(target.rate[n])
            ratio = ""
            if mitm is not None and target is not mitm:
                ratio = f" ({rate / statistics.median(mitm.rate[n]):.2f}x)"
            cells.append(f"{rate:,.0f}{ratio}")
        if target is direct:
            added = f"{d50:.2f}/{d95:.2f}/{d99:.2f} (itself)"
        else:
            qs = (pct(target.latency, q) for q in (0.5, 0.95, 0.99))
            added = "/".join(f"{a - d:+.2f}" for a, d in zip(qs, (d50, d95, d99), strict=True))
        rss = " ".join(f"{r:.0f}" for r in target.rss) or "-"
        ok = "yes" if target.bytes_ok else "NO"
        print(f"| {target.name} | {' | '.join(cells)} | {added} | {rss} | {ok} |")


@contextmanager
def started(command: list[str], ready: str, **popen: object) -> Iterator[subprocess.Popen[bytes]]:
    """A process that answers `ready` (a URL) within 60 s; stopped at the end."""
    process = subprocess.Popen(command, **popen)  # type: ignore[call-overload]
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(ready, json={"n": 1}, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"{command[0]} did not start") from None
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burst", type=int, default=2000, help="chunks per unpaced stream")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 20, 50])
    parser.add_argument(
        "--shape", choices=SHAPES, default="call", help="the unpaced streams' shape (`SHAPES`)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="identical rounds")
    parser.add_argument(
        "--least", type=int, default=20_000, help="chunks relayed in each measure at least "
        "(the streams at once are run again until then)",
    )  # fmt: skip
    parser.add_argument("--chunks", type=int, default=300, help="chunks per paced stream")
    parser.add_argument("--pause-ms", type=float, default=2.0, help="pause between them")
    parser.add_argument("--latency-runs", type=int, default=4, help="paced streams per target")
    parser.add_argument("--no-mitm", action="store_true", help="leave mitmproxy out")
    parser.add_argument(
        "--serve-arg", action="append", default=[], metavar="ARG",
        help="one more argument to every `streamviz serve` (e.g. --serve-arg=--cache-mb=16)",
    )  # fmt: skip
    parser.add_argument(
        "--against", type=Path, metavar="DIR", help="also `streamviz serve` from checkout DIR"
    )
    args = parser.parse_args()
    port = free_port()
    fake = [sys.executable, str(ROOT / "bench" / "proxy.py"), "--fake", str(port)]
    upstream = f"http://{HOST}:{port}"
    path = "/v1/chat/completions"
    with ExitStack() as stack:
        stack.enter_context(started(fake, upstream + "/", cwd=ROOT))
        targets = [Target("direct", upstream + path, None)]
        roots = [("streamviz", ROOT)] + (
            [("before", args.against.resolve())] if args.against else []
        )
        servers: list[tuple[str, Server]] = []
        for name, root in roots:
            db = stack.enter_context(throwaway_store("sqlite", None))
            server = Server(db, extra=["--upstream", upstream, *args.serve_arg], package=root)
            server.start()
            servers.append((name, server))
            stack.callback(server.stop)
            assert server.process is not None
            targets.append(Target(name, f"{server.base}/proxy/default{path}", server.process.pid))
        if not args.no_mitm:
            mitm_port = free_port()
            command = [
                str(mitmdump()), "--mode", f"reverse:{upstream}", "--listen-host", HOST,
                "--listen-port", str(mitm_port), "--set", "stream_large_bodies=1", "--quiet",
            ]  # fmt: skip
            mitm = stack.enter_context(
                started(command, f"http://{HOST}:{mitm_port}/", stdout=subprocess.DEVNULL)
            )
            targets.append(Target("mitmproxy", f"http://{HOST}:{mitm_port}{path}", mitm.pid))
        load = os.getloadavg()
        print(f"fake {upstream}; targets {', '.join(t.name for t in targets)}; "
              f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)  # fmt: skip
        try:
            asyncio.run(measure(args, targets))
        except Exception:
            for name, server in servers:  # what the servers said, for a 502 (say)
                print(f"--- {name}'s log, its end:\n{server.output()[-4000:]}", file=sys.stderr)
            raise
        report(args, targets)
        load = os.getloadavg()
        print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
