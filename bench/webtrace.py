"""The web app on a long stream: first open, reopen after a restart, random steps, memory.

Generates bench.py's "one call, bare continuations" input of `--chunks` chunks (1,000,000:
about 210 MB), times `streamviz trace --format json` on it (the CLI, a fresh process), then
starts `streamviz serve` on loopback with a throwaway store (bench/serving.py), uploads it
and a 20-chunk stream, and measures against the goals of issue #8:

- first open (`GET /s/{id}` after the upload) within 3x the CLI's trace time;
- reopen after a restart (a new server process on the same store) under 1 s;
- p95 of random-step htmx requests within 1.5x of the 20-chunk stream's;
- the server's memory (RSS of its process group) after stepping under 500 MB;
- the first minutes (issue #18): right after the upload and first open, in the same server,
  random steps on the long and the small stream interleaved, p95 per `--window` seconds
  since the first open and the RSS at each window's end (goal: within 1.5x, under 500 MB,
  from the first window on).

Prints each number beside its goal and exits 1 when a goal is missed (`--no-fail` prints only).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serving import ROOT, Server, percentile, throwaway_store  # noqa: E402

import bench  # noqa: E402

HX = {"HX-Request": "true", "HX-Request-Type": "partial"}
TIMEOUT = 900.0


def cli_trace_seconds(path: Path, package: Path = ROOT) -> float:
    """Wall time of `streamviz trace --format json PATH` in a fresh process (output dropped),
    with the package the server runs (bench/serving.py)."""
    env = {**os.environ, "PYTHONPATH": str(package)}
    command = [sys.executable, "-P", "-c", "from webapp.cli import main; main()", "trace"]
    started = time.perf_counter()
    subprocess.run(
        [*command, "--format", "json", str(path)],
        check=True,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def rss_bytes(pid: int) -> int:
    """The resident memory of `pid` and its children (Linux /proc)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        pgid = int(fields[2])
        if pgid != pid:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) * 1024
    return total


def timed_get(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    response = client.get(url, headers=headers)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:300]}")
    return elapsed


def upload(client: httpx.Client, base: str, data: bytes, name: str) -> str:
    files = {"file": (name, data, "text/event-stream")}
    response = client.post(f"{base}/api/streams", files=files)
    if response.status_code != 201:
        raise RuntimeError(f"upload: {response.status_code} {response.text[:300]}")
    return str(response.json()["id"])


def steps_p95(client: httpx.Client, base: str, stream_id: str, last: int, n: int) -> float:
    rng = random.Random(8)
    times = sorted(
        timed_get(client, f"{base}/s/{stream_id}?step={rng.randint(0, last)}", HX) for _ in range(n)
    )
    return percentile(times, 0.95)


def first_minutes(
    client: httpx.Client,
    base: str,
    ids: tuple[str, str],
    lasts: tuple[int, int],
    seconds: float,
    window: float,
    pid: int,
) -> list[tuple[float, float, float, float]]:
    """Steps on the small and the long stream, interleaved, for `seconds` from now: per
    `window` seconds, (window end s, p95 small, p95 long, RSS MB at its end)."""
    rng = random.Random(18)
    (small_id, long_id), (small_last, long_last) = ids, lasts
    started = time.perf_counter()
    rows: list[tuple[float, float, float, float]] = []
    small: list[float] = []
    long: list[float] = []
    end = window
    while True:
        now = time.perf_counter() - started
        if now >= end:
            rows.append((end, percentile(sorted(small), 0.95), percentile(sorted(long), 0.95),
                         rss_bytes(pid) / 1e6))  # fmt: skip
            small, long = [], []
            end += window
            if end > seconds + 1e-9:
                return rows
        url = f"{base}/s/{small_id}?step={rng.randint(0, small_last)}"
        small.append(timed_get(client, url, HX))
        long.append(timed_get(client, f"{base}/s/{long_id}?step={rng.randint(0, long_last)}", HX))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200, help="random-step requests per stream")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db", default=None, help="a store URL of your own")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when goals are missed")
    parser.add_argument("--early", type=float, default=60.0, help="seconds of first-minutes steps")
    parser.add_argument("--window", type=float, default=10.0, help="seconds per first-minutes row")
    parser.add_argument(
        "--package",
        type=Path,
        default=ROOT,
        help="run the package found here (build/pure after `make pure`: the pure-Python wheel)",
    )
    args = parser.parse_args()
    package = args.package.resolve()

    with tempfile.TemporaryDirectory(prefix="streamviz-webtrace-") as folder:
        path = Path(folder) / "long.sse"
        data = bench.sse(bench.one_call(args.chunks, indexed=False)).encode()
        path.write_bytes(data)
        small = bench.sse(bench.one_call(20, indexed=False)).encode()
        print(f"input: {args.chunks:,} chunks, {len(data) / 1e6:.1f} MB; small: 20 chunks")
        cli = cli_trace_seconds(path, package)
        print(f"cli trace --format json (the package in {package}, as served): {cli:.2f} s")
        results: list[tuple[str, float, str, bool]] = []
        limit = ["--max-bytes", str(max(64 * 1024 * 1024, 2 * len(data)))]
        with throwaway_store(args.store, args.db) as db:
            server = Server(db, extra=limit, package=package)
            server.start()
            try:
                with httpx.Client(timeout=TIMEOUT) as client:
                    started = time.perf_counter()
                    long_id = upload(client, server.base, data, "long.sse")
                    uploaded = time.perf_counter() - started
                    small_id = upload(client, server.base, small, "small.sse")
                    first = timed_get(client, f"{server.base}/s/{long_id}")
                    print(f"upload {uploaded:.2f} s, then first open {first:.2f} s")
                    timed_get(client, f"{server.base}/s/{small_id}")
                    assert server.process is not None
                    rows = first_minutes(
                        client, server.base, (small_id, long_id), (21, args.chunks + 2),
                        args.early, args.window, server.process.pid,
                    )  # fmt: skip
                    print("first minutes after upload: window  p95 small  p95 long  ratio  RSS")
                    for end, p_small, p_long, rss in rows:
                        print(f"  {end:5.0f} s {p_small * 1000:9.1f} ms {p_long * 1000:7.1f} ms "
                              f"{p_long / p_small:5.1f}x {rss:5.0f} MB")  # fmt: skip
                    worst = max(p_long / p_small for _, p_small, p_long, _ in rows)
                    most = max(rss for *_, rss in rows)
                    results.append(("first minutes: worst p95 long / small", worst, "<= 1.5x",
                                    worst <= 1.5))  # fmt: skip
                    results.append(("first minutes: most RSS, MB", most, "< 500 MB", most < 500))
                    results.append(
                        (
                            "first open (upload + GET /s/{id}) / CLI trace",
                            (uploaded + first) / cli,
                            "<= 3.0x",
                            (uploaded + first) <= 3 * cli,
                        )
                    )
                server.stop()
                server.start()
                with httpx.Client(timeout=TIMEOUT) as client:
                    reopen = timed_get(client, f"{server.base}/s/{long_id}")
                    results.append(("reopen after a restart, s", reopen, "< 1 s", reopen < 1.0))
                    small_last, long_last = 21, args.chunks + 2
                    timed_get(client, f"{server.base}/s/{small_id}")
                    p95_small = steps_p95(client, server.base, small_id, small_last, args.steps)
                    p95_long = steps_p95(client, server.base, long_id, long_last, args.steps)
                    print(
                        f"random steps p95: 20 chunks {p95_small * 1000:.1f} ms, "
                        f"{args.chunks:,} chunks {p95_long * 1000:.1f} ms"
                    )
                    ratio = p95_long / p95_small
                    results.append(("p95 random step long / small", ratio, "<= 1.5x", ratio <= 1.5))
                    assert server.process is not None
                    memory = rss_bytes(server.process.pid) / 1e6
                    results.append(
                        ("server RSS after stepping, MB", memory, "< 500 MB", memory < 500)
                    )
            finally:
                server.stop()
    for name, value, goal, met in results:
        print(f"{name:48} {value:10.2f}   goal {goal:9} {'met' if met else 'NOT MET'}")
    missed = [name for name, _, _, met in results if not met]
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
