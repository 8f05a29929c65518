"""The web app on a long stream, the way issue 34 measures it: the upload through the home
form, then random jumps from the very first request after it; and the earlier figures.

Generates one of bench.py's inputs (`--input`, default "one call, bare continuations") of
`--chunks` chunks (1,000,000: about 210 MB of one-call), times `streamviz trace --format json`
on it (the CLI, a fresh process, the package the server runs), starts `streamviz serve` on
loopback with a throwaway store (bench/serving.py), and measures:

- the quiet baseline: a 20-chunk stream uploaded the same way, then random steps on it (full
  pages and htmx partials, after a few untimed ones) while the server does nothing else,
  before the upload and again after the jumps: the two pooled are the p95 the goals compare
  to (on shared cores a minute can be a third slower than the next; measured on both sides
  of the jumps, the baseline is not all taken in a quieter or a busier one);
- the upload until its page answers (issue 34): the long stream POSTed as the home page's form
  sends it (multipart to `/streams`, every field of the form), the 303 followed to `/s/ID`;
  against the CLI's trace (goal 1.5x; `--via api` posts to `/api/streams` then GETs the page,
  as this bench did before, goal 3x);
- the jumps (issue 34): from the first request after that page, for `--early` seconds, random
  steps on the long stream (as users jump: shared step links load the full page, anomaly links
  and the overview strip ask for the htmx partial; `--kinds`), each beside a random step of the
  20-chunk stream asked in the same turn; p50/p95 per `--window` seconds against the 20-chunk
  stream's asked beside them (goal 1.5x in every window) and against the quiet baseline's
  (printed); the server's RSS sampled every 0.1 s during (goal: its most under 500 MB).
  `--alone` asks the long stream's steps alone, held to the quiet baseline (this bench's
  measure before 2026-12-06);
- each half of the baseline printed on its own, so that a ratio over the goal can be told
  apart as the long page's cost or the minute it was measured in;
- `--pace MS`: the jumps (and the quiet baseline's) one every MS ms, as a person clicks, each
  timed from when it was due. Back to back, a slow answer is one sample however long it
  holds the jumps behind it (the loop asks fewer while the server is slow); paced, every jump
  it delays counts its share of the wait;
- `--interleaved` (the earlier first-minutes figure, issue 18): steps on the long and the small
  stream interleaved, the small one's p95 taken in the same busy server;
- after a restart (`--no-restart` to skip): the reopen (goal 1 s), random-step p95 against the
  small stream's, RSS after stepping.

Prints each number beside its goal and exits 1 when a goal is missed (`--no-fail` prints only).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serving import ROOT, Server, percentile, throwaway_store  # noqa: E402

import bench  # noqa: E402

HX = {"HX-Request": "true", "HX-Request-Type": "partial"}
TIMEOUT = 900.0
KINDS = {"full": None, "partial": HX}
WARM = 20
"""Untimed steps of each kind before a baseline's timed ones."""
"""A jump's kind and the headers it is asked with: a page loaded from its URL, or an htmx swap."""
FORM_FIELDS = {
    "text": "",
    "title": "",
    "policy": "adr-0019",
    "path": "",
    "server_tools": "",
    "choice": "0",
    "format": "auto",
}
"""The home form's fields besides the file, as a browser sends them untouched
(templates/_form.html)."""
Result = tuple[str, float, str, bool]


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


class Sampler:
    """The server's RSS every `every` seconds in a thread of its own, while it runs."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.pid = pid
        self.every = every
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), rss_bytes(self.pid)))
            self._stop.wait(self.every)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def most(self, since: float = 0.0, until: float = float("inf")) -> float:
        """The most RSS sampled between two `perf_counter` times, in MB."""
        inside = [rss for at, rss in self.samples if since <= at < until]
        return max(inside, default=0) / 1e6


def timed_get(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    response = client.get(url, headers=headers)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"GET {url}: {response.status_code} {response.text[:300]}")
    return elapsed


def upload_api(client: httpx.Client, base: str, data: bytes, name: str) -> str:
    """POST to the API (multipart), then GET the page: the stream's id."""
    files = {"file": (name, data, "text/event-stream")}
    response = client.post(f"{base}/api/streams", files=files)
    if response.status_code != 201:
        raise RuntimeError(f"upload: {response.status_code} {response.text[:300]}")
    stream_id = str(response.json()["id"])
    timed_get(client, f"{base}/s/{stream_id}")
    return stream_id


def upload_form(client: httpx.Client, base: str, data: bytes, name: str) -> str:
    """POST the home form (multipart, every field), then follow its 303: the stream's id."""
    files = {"file": (name, data, "application/octet-stream")}
    response = client.post(f"{base}/streams", data=FORM_FIELDS, files=files)
    if response.status_code != 303:
        raise RuntimeError(f"form: {response.status_code} {response.text[:300]}")
    location = response.headers["location"]
    timed_get(client, base + location)
    return location.split("/s/", 1)[1].split("?", 1)[0]


UPLOADS: dict[str, Callable[[httpx.Client, str, bytes, str], str]] = {
    "form": upload_form,
    "api": upload_api,
}


@dataclass
class Jumps:
    """Jump times by kind, with when each was asked (`perf_counter`)."""

    times: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def add(self, kind: str, at: float, took: float) -> None:
        self.times.setdefault(kind, []).append((at, took))

    def p(self, kind: str, fraction: float, since: float = 0.0, until: float = 1e18) -> float:
        found = sorted(took for at, took in self.times.get(kind, []) if since <= at < until)
        return percentile(found, fraction)

    def count(self, kind: str) -> int:
        return len(self.times.get(kind, []))

    def __add__(self, other: Jumps) -> Jumps:
        kinds = self.times.keys() | other.times.keys()
        return Jumps({k: self.times.get(k, []) + other.times.get(k, []) for k in kinds})


def jump(
    client: httpx.Client,
    base: str,
    stream_id: str,
    last: int,
    kinds: list[str],
    rng: random.Random,
    jumps: Jumps,
) -> None:
    """One random step, of a kind picked at random among `kinds`."""
    kind = rng.choice(kinds)
    url = f"{base}/s/{stream_id}?step={rng.randint(0, last)}"
    at = time.perf_counter()
    jumps.add(kind, at, timed_get(client, url, KINDS[kind]))


def quiet_jumps(
    client: httpx.Client,
    base: str,
    stream_id: str,
    last: int,
    kinds: list[str],
    n: int,
    pace: float = 0.0,
    seed: int = 34,
) -> Jumps:
    """`n` random steps of each kind on a server doing nothing else, one every `pace` seconds
    when the long stream's jumps are paced (a server woken now and then answers slower than
    one kept busy: the two are compared at the same pace), after `WARM` untimed ones of each
    kind (a route's first answers compile its templates)."""
    rng = random.Random(seed)
    for _ in range(WARM):
        for kind in kinds:
            timed_get(client, f"{base}/s/{stream_id}?step={rng.randint(0, last)}", KINDS[kind])
    jumps = Jumps()
    due = time.perf_counter()
    for _ in range(n * len(kinds)):
        time.sleep(max(0.0, due - time.perf_counter()))
        jump(client, base, stream_id, last, kinds, rng, jumps)
        due = (due + pace) if pace else time.perf_counter()
    return jumps


def early_jumps(
    client: httpx.Client,
    base: str,
    targets: list[tuple[str, int]],
    kinds: list[str],
    seconds: float,
    pace: float = 0.0,
) -> tuple[list[Jumps], float]:
    """Random steps for `seconds` from now, on each of `targets` (stream id, last step) in
    turn, the same kind for each turn, in an order drawn each turn: each target's jumps, and
    when they started. Back to back when `pace` is 0; else a turn every `pace` seconds, as a
    person clicks (`--pace`), each jump timed from when it was due (a jump due while the one
    before is still waiting counts that wait: a slow answer is not hidden by the jumps it
    delays; a turn's second jump is due when its first is answered)."""
    rng = random.Random(18)
    jumps = [Jumps() for _ in targets]
    started = time.perf_counter()
    due = started
    while due - started < seconds:
        if pace:
            time.sleep(max(0.0, due - time.perf_counter()))
        kind = rng.choice(kinds)
        turn = rng.sample(range(len(targets)), len(targets))
        at = due if pace else time.perf_counter()
        for number in turn:
            stream_id, last = targets[number]
            url = f"{base}/s/{stream_id}?step={rng.randint(0, last)}"
            timed_get(client, url, KINDS[kind])
            answered = time.perf_counter()
            jumps[number].add(kind, at, answered - at)
            at = answered
        due = (due + pace) if pace else time.perf_counter()
    return jumps, started


def interleaved(
    client: httpx.Client,
    base: str,
    ids: tuple[str, str],
    lasts: tuple[int, int],
    seconds: float,
    window: float,
    pid: int,
) -> list[tuple[float, float, float, float]]:
    """Issue 18's first minutes: htmx steps on the small and the long stream, interleaved, for
    `seconds` from now: per `window` seconds, (window end s, p95 small, p95 long, RSS MB at
    its end). The small stream's steps share the busy server with the long one's."""
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


def baseline_line(name: str, quiet: Jumps) -> str:
    kinds = sorted(quiet.times)
    return f"{name}: " + ", ".join(
        f"{k} p50 {quiet.p(k, 0.5) * 1000:.1f} p95 {quiet.p(k, 0.95) * 1000:.1f} ms" for k in kinds
    )


def jumps_report(
    long: Jumps,
    beside: Jumps | None,
    quiet: Jumps,
    started: float,
    args: argparse.Namespace,
    sampler: Sampler,
) -> list[Result]:
    """Print the long stream's jumps per window beside the 20-chunk stream's, asked side by
    side in the same turns (`beside`, None with `--alone`) and quiet (before the upload and
    after the jumps, pooled); the goals' rows.

    Side by side, both pages meet the same seconds of two shared cores, whose speed moves by
    half from one 10 s window to the next while the server's own CPU a second stays the same
    (bench/README.md, round ten): that ratio is the long page's own cost, and the goal's, in
    every window. The small page's handler takes the same CPU beside the long one as alone (no
    penalty for asking the two in turn). Against the quiet baseline each window is printed
    too, not judged: it measures the minute as much as the page."""
    kinds = sorted(long.times)
    print("jumps from the first request after the upload; p95 of the 20-chunk stream's asked")
    print("beside them, and quiet (before the upload and after the jumps, pooled):")
    print("  window   kind     n   p50 ms   p95 ms   beside     x   quiet     x   most RSS")
    worst, first, windows = 0.0, 0.0, max(1, round(args.early / args.window))
    for number in range(windows):
        since = started + number * args.window
        until = since + args.window if number + 1 < windows else 1e18
        for kind in kinds:
            p95, base = long.p(kind, 0.95, since, until), quiet.p(kind, 0.95)
            near = beside.p(kind, 0.95, since, until) if beside else float("nan")
            n = sum(1 for at, _ in long.times[kind] if since <= at < until)
            worst = max(worst, p95 / near if beside else p95 / base)
            first = max(first, p95 / base) if number == 0 else first
            p50 = long.p(kind, 0.5, since, until)
            print(f"  {number * args.window:4.0f} s {kind:8} {n:4} {p50 * 1000:8.1f} "
                  f"{p95 * 1000:8.1f} {near * 1000:8.1f} {p95 / near:5.2f} {base * 1000:7.1f} "
                  f"{p95 / base:5.2f} {sampler.most(since, until):6.0f} MB")  # fmt: skip
    results: list[Result] = []
    against, name = (beside, "20-chunk beside") if beside else (quiet, "quiet small's")
    for kind in kinds:
        ratio = long.p(kind, 0.95) / against.p(kind, 0.95)
        results.append((f"jumps p95 {kind} / {name}, all", ratio, "<= 1.5x", ratio <= 1.5))
    results.append((f"jumps p95, worst window / {name}", worst, "<= 1.5x", worst <= 1.5))
    if beside:
        print(f"the first window against the quiet baseline (not a goal): {first:.2f}x")
    most = sampler.most(started)
    results.append(("most RSS sampled during the jumps, MB", most, "< 500 MB", most < 500))
    return results


def after_restart(
    server: Server, ids: tuple[str, str], lasts: tuple[int, int], steps: int
) -> list[Result]:
    """Restart on the same store: the reopen, random-step p95 long / small, RSS after."""
    (small_id, long_id), (small_last, long_last) = ids, lasts
    server.stop()
    server.start()
    results: list[Result] = []
    with httpx.Client(timeout=TIMEOUT) as client:
        reopen = timed_get(client, f"{server.base}/s/{long_id}")
        results.append(("reopen after a restart, s", reopen, "< 1 s", reopen < 1.0))
        timed_get(client, f"{server.base}/s/{small_id}")
        p95_small = quiet_jumps(client, server.base, small_id, small_last, ["partial"], steps)
        p95_long = quiet_jumps(client, server.base, long_id, long_last, ["partial"], steps)
        small, long = p95_small.p("partial", 0.95), p95_long.p("partial", 0.95)
        print(f"after a restart, random htmx steps p95: 20 chunks {small * 1000:.1f} ms, "
              f"long {long * 1000:.1f} ms")  # fmt: skip
        results.append(("restarted: p95 step long / small", long / small, "<= 1.5x",
                        long / small <= 1.5))  # fmt: skip
        assert server.process is not None
        memory = rss_bytes(server.process.pid) / 1e6
        results.append(("restarted: RSS after stepping, MB", memory, "< 500 MB", memory < 500))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--input", choices=sorted(bench.INPUTS), default="one-call-bare")
    parser.add_argument("--via", choices=sorted(UPLOADS), default="form", help="the upload's path")
    parser.add_argument("--kinds", default="full,partial", help="the jumps' kinds: full, partial")
    parser.add_argument("--steps", type=int, default=200, help="quiet steps per stream and kind")
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db", default=None, help="a store URL of your own")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when goals are missed")
    parser.add_argument("--early", type=float, default=60.0, help="seconds of jumps after upload")
    parser.add_argument("--window", type=float, default=10.0, help="seconds per jumps row")
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        help="ms between jumps, as a person clicks (default: back to back)",
    )
    parser.add_argument("--interleaved", action="store_true",
                        help="issue 18's first minutes instead of the jumps")  # fmt: skip
    parser.add_argument("--alone", action="store_true",
                        help="the long stream's jumps alone, against the quiet ones")  # fmt: skip
    parser.add_argument("--no-restart", action="store_true", help="skip the restart's figures")
    parser.add_argument(
        "--package",
        type=Path,
        default=ROOT,
        help="run the package found here (build/pure after `make pure`: the pure-Python wheel)",
    )
    args = parser.parse_args()
    package = args.package.resolve()
    kinds = [kind for kind in args.kinds.split(",") if kind]
    upload = UPLOADS[args.via]
    results: list[Result] = []
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="streamviz-webtrace-") as folder:
        path = Path(folder) / "long.sse"
        data = bench.INPUTS[args.input](args.chunks).encode()
        path.write_bytes(data)
        small = bench.sse(bench.one_call(20, indexed=False)).encode()
        lasts = (21, data.count(b"\ndata: ") + 1)
        print(f"input: {args.input}, {args.chunks:,} chunks, {len(data) / 1e6:.1f} MB; small: 20")
        cli = cli_trace_seconds(path, package)
        print(f"cli trace --format json (the package in {package}, as served): {cli:.2f} s")
        limit = ["--max-bytes", str(max(64 * 1024 * 1024, 2 * len(data)))]
        with throwaway_store(args.store, args.db) as db:
            server = Server(db, extra=limit, package=package)
            server.start()
            assert server.process is not None
            try:
                with httpx.Client(timeout=TIMEOUT) as client, Sampler(server.process.pid) as rss:
                    small_id = upload(client, server.base, small, "small.sse")
                    quiet = quiet_jumps(client, server.base, small_id, lasts[0], kinds, args.steps,
                                        args.pace / 1000)  # fmt: skip
                    print(baseline_line("quiet 20-chunk jumps, before the upload", quiet))
                    started = time.perf_counter()
                    long_id = upload(client, server.base, data, "long.sse")
                    until_page = time.perf_counter() - started
                    print(f"upload via {args.via} until its page answers: {until_page:.2f} s "
                          f"({until_page / cli:.2f}x the CLI)")  # fmt: skip
                    goal = 1.5 if args.via == "form" else 3.0
                    met = until_page <= goal * cli
                    results.append((f"upload via {args.via} until its page / CLI trace",
                                    until_page / cli, f"<= {goal}x", met))  # fmt: skip
                    ids = (small_id, long_id)
                    if args.interleaved:
                        rows = interleaved(client, server.base, ids, lasts, args.early,
                                           args.window, server.process.pid)  # fmt: skip
                        print("first minutes, interleaved: window  p95 small  p95 long  ratio  RSS")
                        for end, p_small, p_long, mb in rows:
                            print(f"  {end:5.0f} s {p_small * 1000:9.1f} ms {p_long * 1000:7.1f} ms"
                                  f" {p_long / p_small:5.1f}x {mb:5.0f} MB")  # fmt: skip
                        worst = max(p_long / p_small for _, p_small, p_long, _ in rows)
                        results.append(("interleaved: worst p95 long / small", worst, "<= 1.5x",
                                        worst <= 1.5))  # fmt: skip
                    else:
                        targets = [(long_id, lasts[1])]
                        targets += [] if args.alone else [(small_id, lasts[0])]
                        jumps, since = early_jumps(
                            client, server.base, targets, kinds, args.early, args.pace / 1000
                        )
                        again = quiet_jumps(client, server.base, small_id, lasts[0], kinds,
                                            args.steps, args.pace / 1000, seed=43)  # fmt: skip
                        print(baseline_line("the same, after the long one's jumps", again))
                        beside = None if args.alone else jumps[1]
                        results += jumps_report(jumps[0], beside, quiet + again, since, args, rss)
                    print(f"most RSS from the upload on: {rss.most(started):.0f} MB")
                if not args.no_restart:
                    results += after_restart(server, ids, lasts, args.steps)
            finally:
                server.stop()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    for name, value, wanted, met in results:
        print(f"{name:48} {value:10.2f}   goal {wanted:9} {'met' if met else 'NOT MET'}")
    missed = [name for name, _, _, met in results if not met]
    return 1 if missed and not args.no_fail else 0


if __name__ == "__main__":
    sys.exit(main())
