"""Peak memory under the cache bound with 16 concurrent misses, and stalls of small requests.

Starts `streamviz serve` (one worker, a throwaway SQLite store, loopback) with `--cache-mb`,
posts a large stream (one call with `--fragments` pieces of its arguments: 90,000 make about
20 MB) and then sends 16 requests at once that all miss the cache, twice: 16 for the same
options (one key), then 16 for 16 different option sets (16 keys). It reads the server's peak
resident memory (VmHWM in /proc/PID/status) after starting, after the upload, and after each
burst, and prints it against the cache bound and the input size.

All the while a probe asks for a small page (a stream of a dozen chunks) every `--every`
seconds and times it: the largest wait of a small request while the large upload and the
assemblies run, and how many took over 1 s, are printed per phase.

A burst request may be refused with 503 (the documented answer when the budget for traces
being made stays full for a minute): those are counted apart. Exits 1 if a request failed or
got another 5xx, 2 if the server did not start; it does not judge the numbers. Run:
`.venv/bin/python bench/memory.py [--cache-mb 64] [--fragments 90000] [--every 0.05]`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from serving import Server, small_stream

from bench import one_call, sse  # bench/bench.py: the generator of `make bench`

MB = 1024 * 1024
CONCURRENT = 16
STALL = 1.0


def peak_kb(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) in kB of a process and its children (uvicorn's workers, if any)."""
    pids = [pid, *children(pid)]
    hwm = rss = 0
    for one in pids:
        try:
            status = Path(f"/proc/{one}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                hwm += int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss += int(line.split()[1])
    return hwm, rss


def children(pid: int) -> list[int]:
    """Every descendant of `pid`, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


@dataclass
class Probe:
    """Latencies of the small requests, per phase."""

    phase: str = "idle"
    seconds: dict[str, list[float]] = field(default_factory=dict)
    failures: int = 0

    def record(self, took: float) -> None:
        self.seconds.setdefault(self.phase, []).append(took)


async def probe(client: httpx.AsyncClient, url: str, state: Probe, every: float) -> None:
    """Ask for the small page every `every` s until cancelled, timing each answer."""
    while True:
        started = time.perf_counter()
        try:
            answer = await client.get(url)
            if answer.status_code >= 500:
                state.failures += 1
        except httpx.TransportError:
            state.failures += 1
        state.record(time.perf_counter() - started)
        await asyncio.sleep(every)


@dataclass
class Burst:
    """The answers of one burst of concurrent requests."""

    statuses: list[int]
    seconds: float


async def burst(client: httpx.AsyncClient, urls: list[str]) -> Burst:
    started = time.perf_counter()

    async def get(url: str) -> int:
        try:
            return (await client.get(url)).status_code
        except httpx.TransportError:
            return 0

    statuses = await asyncio.gather(*(get(url) for url in urls))
    return Burst(list(statuses), time.perf_counter() - started)


def option_sets(stream: str) -> list[str]:
    """16 different option sets for one stream's page: 16 cache keys."""
    urls = []
    for k in range(CONCURRENT):
        policy = "exact-key" if k % 2 else "adr-0019"
        if k < 2:
            urls.append(f"/s/{stream}?policy={policy}")
        else:
            urls.append(f"/s/{stream}?policy={policy}&path=server-tools&server_tools=tool_{k}")
    return urls


async def drive(server: Server, body: bytes, every: float) -> tuple[list[str], bool]:
    assert server.process is not None
    pid = server.process.pid
    lines: list[str] = []
    ok = True
    state = Probe()

    def memory(when: str) -> None:
        hwm, rss = peak_kb(pid)
        lines.append(f"{when:<34} peak {hwm / 1024:7.0f} MB   now {rss / 1024:7.0f} MB")

    memory("started")
    async with httpx.AsyncClient(base_url=server.base, timeout=600.0) as client:
        small = await client.post(
            "/api/streams", json={"text": small_stream(random.Random(1), "p"), "title": "small"}
        )
        small.raise_for_status()
        probe_url = f"/s/{small.json()['id']}"
        await client.get(probe_url)
        memory("small stream stored")
        watcher = asyncio.create_task(probe(client, probe_url, state, every))
        try:
            state.phase = "upload"
            started = time.perf_counter()
            posted = await client.post(
                "/api/streams", files={"file": ("large.sse", body)}, data={"title": "large"}
            )
            if posted.status_code != 201:
                return [f"the large post got {posted.status_code}: {posted.text[:300]}"], False
            took = time.perf_counter() - started
            stream = posted.json()["id"]
            memory(f"large stream stored ({took:.1f} s)")
            for phase, urls in (
                ("16 misses, one key", [f"/s/{stream}"] * CONCURRENT),
                ("16 misses, 16 keys", option_sets(stream)),
            ):
                state.phase = phase
                done = await burst(client, urls)
                busy = done.statuses.count(503)
                bad = [s for s in done.statuses if s not in (200, 503)]
                ok = ok and not bad
                memory(f"{phase} ({done.seconds:.1f} s)")
                if busy:
                    lines.append(f"  {busy} refused as busy (503 with Retry-After: no room)")
                if bad:
                    lines.append(f"  answers other than 200 or 503: {bad}")
        finally:
            watcher.cancel()
    lines.append("")
    lines.append(f"small requests (a small stream's page every {every:g} s), by phase:")
    for phase, seconds in state.seconds.items():
        over = sum(took > STALL for took in seconds)
        lines.append(
            f"  {phase:<20} {len(seconds):5} requests, max {max(seconds) * 1000:7.0f} ms, "
            f"{over} over {STALL:g} s"
        )
    if state.failures:
        lines.append(f"  {state.failures} small requests failed")
    return lines, ok and not state.failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-mb", type=int, default=64)
    parser.add_argument("--fragments", type=int, default=90_000)
    parser.add_argument("--every", type=float, default=0.05)
    args = parser.parse_args()
    body = sse(one_call(args.fragments, indexed=False))
    limit = max(len(body) + MB, 20_000_000)
    with tempfile.TemporaryDirectory(prefix="streamviz-memory-") as folder:
        db = str(Path(folder) / "memory.sqlite3")
        extra = ["--cache-mb", str(args.cache_mb), "--max-bytes", str(limit)]
        server = Server(db, workers=1, extra=extra)
        try:
            server.start()
        except RuntimeError as error:
            print(f"memory: {error}", file=sys.stderr)
            return 2
        try:
            print(
                f"memory: input {len(body) / MB:.1f} MB ({args.fragments} fragments), "
                f"--cache-mb {args.cache_mb}, 1 worker, {os.cpu_count()} cores, {server.base}",
                flush=True,
            )
            lines, ok = asyncio.run(drive(server, body, args.every))
        finally:
            server.stop()
    print("\n".join(lines))
    print(f"summary: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
