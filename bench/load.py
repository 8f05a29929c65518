"""N clients for T seconds against `streamviz serve` on loopback, with a throwaway store.

The mix: posts (`POST /api/streams`, a small SSE stream as JSON), pages (`GET /s/{id}`),
htmx steps (`GET /s/{id}?step=K` with `HX-Request: true`: the stage partial) and trace API
calls (`GET /api/streams/{id}/trace`). Prints throughput, p50/p95/p99 latency and errors per
kind; a 503 with Retry-After (the server reading `--max-uploads` uploads already) is counted
apart from other 5xx, as a refusal: the documented back-pressure, which a client retries.
Exits 1 on any other 5xx or a request that got no answer (`--strict` also on busy refusals);
2 if the server did not start.

`--proxy-streams N` also starts a fake provider (`bench/proxy.py --fake`) and the server with
`--upstream` to it, and keeps N streams of `--proxy-chunks` unpaced chunks going through
`/proxy/default/v1/chat/completions` for the whole run (each stream is captured: written in
batches, indexed and its view kept when it ends), then reports the streams and chunks relayed
and how the htmx steps fared meanwhile (the goal: no step waits past 1 s).

`--heavy-mb N` also stores a stream of about N MB of bare continuations before the clock
starts and, a second in, opens its compare page once (both policies' traces of a long stream
with exact-key's phantom blocks: the heaviest page there is), then reports the htmx steps that
ran while it was being made beside those that did not: one request must not hold the others.

Run: `.venv/bin/python bench/load.py [--clients 20] [--seconds 20] [--store sqlite|postgresql]
[--db URL] [--workers 1] [--max-uploads N] [--heavy-mb N] [--proxy-streams N] [--strict]`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from serving import HOST, ROOT, Server, free_port, percentile, small_stream, throwaway_store

import bench

# kind -> weight in the mix
MIX = {"post": 1, "page": 3, "step": 4, "trace": 2}
SEED_STREAMS = 8


@dataclass
class Tally:
    """Latencies and answers of one kind of request."""

    seconds: list[float] = field(default_factory=list)
    errors: int = 0  # 4xx
    busy: int = 0  # 503 with Retry-After: too many uploads at once (the server's back-pressure)
    server_errors: int = 0  # any other 5xx
    failures: int = 0  # no answer (connection refused, reset, timeout)


@dataclass
class Run:
    """Shared by the clients: the streams posted so far and the tallies."""

    ids: list[str]
    steps: dict[str, int]
    tallies: defaultdict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    stepped: list[tuple[float, float]] = field(default_factory=list)
    """Each htmx step's start and end (`time.perf_counter` seconds)."""
    heavy: tuple[float, float] | None = None
    """When the heavy page was being made (`--heavy-mb`)."""
    relayed: list[int] = field(default_factory=list)
    """The chunks of each stream read whole through the proxy (`--proxy-streams`)."""
    cut: int = 0
    """Streams through the proxy that failed or came short."""
    why: list[str] = field(default_factory=list)
    """What each of those got, in words."""
    began: float = 0.0
    """When the clients began (`time.perf_counter` seconds)."""


async def post(client: httpx.AsyncClient, rng: random.Random, tag: str) -> httpx.Response:
    text = small_stream(rng, tag)
    return await client.post("/api/streams", json={"text": text, "title": f"bench {tag}"})


async def one(client: httpx.AsyncClient, run: Run, rng: random.Random, n: int, who: int) -> None:
    """One request of a kind drawn from the mix, tallied."""
    kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
    stream = rng.choice(run.ids)
    started = time.perf_counter()
    tally = run.tallies[kind]
    try:
        if kind == "post":
            answer = await post(client, rng, f"c{who}n{n}")
            if answer.status_code == 201:
                run.ids.append(answer.json()["id"])
        elif kind == "page":
            answer = await client.get(f"/s/{stream}")
        elif kind == "step":
            step = rng.randint(0, run.steps.get(stream, 8))
            answer = await client.get(f"/s/{stream}?step={step}", headers={"HX-Request": "true"})
        else:
            answer = await client.get(f"/api/streams/{stream}/trace")
    except httpx.TransportError:
        tally.failures += 1
        return
    ended = time.perf_counter()
    tally.seconds.append(ended - started)
    if kind == "step":
        run.stepped.append((started, ended))
    if answer.status_code == 503 and "retry-after" in answer.headers:
        tally.busy += 1
    elif answer.status_code >= 500:
        tally.server_errors += 1
    elif answer.status_code >= 400:
        tally.errors += 1


async def client_loop(base: str, run: Run, deadline: float, who: int, seed: int) -> None:
    rng = random.Random(seed * 1000 + who)
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        n = 0
        while time.monotonic() < deadline:
            await one(client, run, rng, n, who)
            n += 1


async def seed_streams(base: str, seed: int) -> Run:
    """Post a few streams before the clock starts, so that every client has something to read."""
    rng = random.Random(seed)
    run = Run(ids=[], steps={})
    async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
        for n in range(SEED_STREAMS):
            answer = await post(client, rng, f"seed{n}")
            answer.raise_for_status()
            stream = answer.json()["id"]
            run.ids.append(stream)
            trace = (await client.get(f"/api/streams/{stream}/trace")).json()
            run.steps[stream] = len(trace.get("steps", [])) or 8
    return run


async def store_heavy(base: str, megabytes: float) -> str:
    """Store about `megabytes` MB of one call's bare continuations; its id."""
    fragments = max(10, int(megabytes * 1e6 / 217))  # bench.one_call's chunks are ~217 bytes
    data = bench.sse(bench.one_call(fragments, indexed=False)).encode()
    async with httpx.AsyncClient(base_url=base, timeout=900.0) as client:
        files = {"file": ("heavy.sse", data, "text/event-stream")}
        answer = await client.post("/api/streams", files=files)
        answer.raise_for_status()
        return str(answer.json()["id"])


async def open_heavy(base: str, run: Run, stream: str) -> None:
    """A second in, open the heavy stream's compare page once; note when it was made."""
    await asyncio.sleep(1.0)
    async with httpx.AsyncClient(base_url=base, timeout=900.0) as client:
        started = time.perf_counter()
        answer = await client.get(f"/s/{stream}/compare")
        run.heavy = (started, time.perf_counter())
        if answer.status_code != 200:
            raise RuntimeError(f"the heavy page answered {answer.status_code}")


async def proxy_loop(base: str, run: Run, deadline: float, chunks: int) -> None:
    """Stream `chunks` unpaced chunks through the proxy, again and again until the deadline."""
    body = {"model": "gpt-bench", "stream": True, "n": chunks, "pause_ms": 0}
    url = f"{base}/proxy/default/v1/chat/completions"
    async with httpx.AsyncClient(timeout=120.0) as client:
        while time.monotonic() < deadline:
            events, last = 0, b""
            try:
                async with client.stream("POST", url, json=body) as answer:
                    said = b""
                    async for piece in answer.aiter_raw():
                        # a piece is what a read brought: an event's "\n\n" may straddle two
                        events += (last + piece[:1] == b"\n\n") + piece.count(b"\n\n")
                        last = piece[-1:]
                        said = said or (piece[:300] if answer.status_code != 200 else b"")
            except httpx.TransportError as error:
                run.cut += 1
                run.why.append(f"{type(error).__name__} {error}")
                continue
            if answer.status_code != 200 or events != chunks + 1:  # and [DONE]
                run.cut += 1
                run.why.append(f"{answer.status_code}, {events} of {chunks + 1} events: {said!r}")
            else:
                run.relayed.append(chunks)


def start_fake() -> tuple[subprocess.Popen[bytes], int]:
    """The loopback fake provider of bench/proxy.py, answering; it and its port."""
    port = free_port()
    script = Path(__file__).with_name("proxy.py")
    process = subprocess.Popen([sys.executable, str(script), "--fake", str(port)], cwd=ROOT)
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.post(f"http://{HOST}:{port}/", json={"n": 1}, timeout=1)
            return process, port
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the fake provider did not start") from None
            time.sleep(0.05)


async def drive(
    base: str,
    clients: int,
    seconds: float,
    seed: int,
    heavy_mb: float = 0.0,
    proxy_streams: int = 0,
    proxy_chunks: int = 0,
) -> tuple[Run, float]:
    run = await seed_streams(base, seed)
    heavy = await store_heavy(base, heavy_mb) if heavy_mb else None
    started = time.monotonic()
    deadline = started + seconds
    run.began = time.perf_counter()
    loops = [client_loop(base, run, deadline, i, seed) for i in range(clients)]
    if heavy is not None:
        loops.append(open_heavy(base, run, heavy))
    if not proxy_streams:
        await asyncio.gather(*loops)
        return run, time.monotonic() - started
    with ProcessPoolExecutor(1) as pool:  # the streams read in a process of their own
        proxied = asyncio.get_running_loop().run_in_executor(
            pool, proxy_process, base, deadline, proxy_chunks, proxy_streams
        )
        await asyncio.gather(*loops)
        run.relayed, run.cut, run.why = await proxied
    return run, time.monotonic() - started


def proxy_process(
    base: str, deadline: float, chunks: int, streams: int
) -> tuple[list[int], int, list[str]]:
    """`streams` proxy loops until the deadline, in this (child) process, so that reading them
    does not slow the clients' own loop (whose steps are timed); what they relayed."""
    run = Run(ids=[], steps={})

    async def loops() -> None:
        await asyncio.gather(*(proxy_loop(base, run, deadline, chunks) for _ in range(streams)))

    asyncio.run(loops())
    return run.relayed, run.cut, run.why


def report_heavy(run: Run) -> None:
    """The steps that ran while the heavy page was made, beside the others."""
    if run.heavy is None:
        return
    begun, done = run.heavy
    during = sorted(end - start for start, end in run.stepped if start < done and end > begun)
    others = sorted(end - start for start, end in run.stepped if end <= begun or start >= done)
    for label, times in (("during", during), ("outside", others)):
        if times:
            print(
                f"steps {label} the heavy page: {len(times)}, "
                f"p95 {1000 * percentile(times, 0.95):.1f} ms, max {1000 * times[-1]:.1f} ms"
            )
    print(f"heavy page (compare of a --heavy-mb stream): {done - begun:.2f} s")


def report_proxy(run: Run, elapsed: float) -> bool:
    """The streams through the proxy and the steps served meanwhile; True if no step waited
    past 1 s and no stream came short."""
    steps = sorted(end - start for start, end in run.stepped)
    slow = sum(1 for took in steps if took > 1.0)
    worst = 1000 * steps[-1] if steps else 0.0
    print(
        f"proxy: {len(run.relayed)} streams read whole ({sum(run.relayed):,} chunks, "
        f"{sum(run.relayed) / elapsed:,.0f} chunks/s), {run.cut} failed or short; steps "
        f"meanwhile: {len(steps)}, p99 {1000 * percentile(steps, 0.99):.1f} ms, slowest "
        f"{worst:.1f} ms, {slow} over 1 s"
    )
    late = [f"{start - run.began:.1f} s ({end - start:.2f} s)" for start, end in run.stepped
            if end - start > 1.0]  # fmt: skip
    if late:
        print(f"  steps over 1 s began at: {', '.join(late)}")
    for said in sorted(set(run.why)):
        print(f"  failed or short: {said} ({run.why.count(said)}x)")
    return slow == 0 and run.cut == 0


def report(run: Run, elapsed: float, strict: bool = False) -> bool:
    """Print the table; True if every request got an answer below 500 or a busy refusal (with
    `strict`, only below 500)."""
    head = (
        "kind",
        "requests",
        "req/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "4xx",
        "503",
        "5xx",
        "failed",
    )
    print("{:<6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>5} {:>6}".format(*head))
    every = Tally()
    for kind in [*MIX, "all"]:
        tally = every if kind == "all" else run.tallies[kind]
        if kind != "all":
            every.seconds += tally.seconds
            every.errors += tally.errors
            every.busy += tally.busy
            every.server_errors += tally.server_errors
            every.failures += tally.failures
        ordered = sorted(tally.seconds)
        p50, p95, p99 = (1000 * percentile(ordered, f) for f in (0.50, 0.95, 0.99))
        count = len(ordered) + tally.failures
        answered = (tally.errors, tally.busy, tally.server_errors, tally.failures)
        row = (kind, count, count / elapsed, p50, p95, p99, *answered)
        print(
            "{:<6} {:>8} {:>8.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>5} {:>5} {:>5} {:>6}".format(*row)
        )
    answers = len(every.seconds)
    p95 = 1000 * percentile(sorted(every.seconds), 0.95)
    print(
        f"summary: {answers} answers in {elapsed:.1f} s, {answers / elapsed:.1f} req/s, "
        f"p95 {p95:.1f} ms, {every.errors} 4xx, {every.busy} busy 503, "
        f"{every.server_errors} other 5xx, {every.failures} without answer"
    )
    if every.busy:
        print(
            f"refused, busy: {every.busy} posts got 503 with Retry-After (more than "
            "--max-uploads at once); a client retries them"
            + ("; --strict counts them as failures" if strict else "")
        )
    return every.server_errors + every.failures + (every.busy if strict else 0) == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--store", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--db", default=None, help="use this store instead of a throwaway one")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--max-uploads", type=int, default=None, help="passed to the server (its default: 4)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 on busy 503s too (refused uploads)"
    )
    parser.add_argument(
        "--heavy-mb", type=float, default=0.0, help="open a compare page of this many MB"
    )
    parser.add_argument(
        "--proxy-streams", type=int, default=0, help="streams kept going through the proxy"
    )
    parser.add_argument("--proxy-chunks", type=int, default=2000, help="chunks per such stream")
    parser.add_argument(
        "--package", type=Path, default=ROOT, help="serve the package found here (another checkout)"
    )
    args = parser.parse_args()
    fake = start_fake() if args.proxy_streams else None
    with throwaway_store(args.store, args.db) as db:
        extra = [] if args.max_uploads is None else ["--max-uploads", str(args.max_uploads)]
        if fake is not None:
            extra += ["--upstream", f"http://{HOST}:{fake[1]}"]
        server = Server(db, workers=args.workers, extra=extra, package=args.package.resolve())
        try:
            server.start()
        except RuntimeError as error:
            print(f"load: {error}", file=sys.stderr)
            return 2
        try:
            store = args.store if not args.db else "given --db"
            print(
                f"load: {args.clients} clients for {args.seconds:g} s against {server.base} "
                f"({store}, {args.workers} worker(s))"
            )
            run, elapsed = asyncio.run(
                drive(
                    server.base,
                    args.clients,
                    args.seconds,
                    args.seed,
                    args.heavy_mb,
                    args.proxy_streams,
                    args.proxy_chunks,
                )
            )
        finally:
            server.stop()
            server.log.seek(0)
            said = server.log.read().decode("utf-8", "replace").splitlines()
            for line in [line for line in said if "could not be reached" in line][:5]:
                print(f"server: {line}")  # the cause of a 502, as the proxy logs it
            again = sum(1 for line in said if "sent again on a new one" in line)
            if again:
                print(f"server: {again} request(s) sent again (a kept connection closed)")
            if fake is not None:
                fake[0].terminate()
                fake[0].wait(timeout=30)
    fine = report(run, elapsed, args.strict)
    report_heavy(run)
    if args.proxy_streams:
        fine = report_proxy(run, elapsed) and fine
    return 0 if fine else 1


if __name__ == "__main__":
    sys.exit(main())
