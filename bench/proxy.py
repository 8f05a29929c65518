"""The recording proxy against a direct connection to the same fake provider, on loopback.

Three processes: a fake provider (this script with `--fake PORT`: it streams N chunks of a
tool call's arguments, each stamped with `time.monotonic_ns()` when it is sent), `streamviz
serve --upstream` on a throwaway SQLite store, and the clients (this process, httpx's async
client). `time.monotonic_ns` is one clock for every process of the machine, so a chunk's
latency is its arrival at the client minus its stamp.

1. Latency: streams of `--chunks` paced chunks (`--pause-ms` apart), one at a time, direct
   and proxied in turn; per-chunk latency p50/p95 of each and the difference (the goal: at
   most 2 ms added at p95).
2. Throughput: `--streams` concurrent unpaced streams of `--burst` chunks through the proxy,
   `--rounds` times; chunks per second per stream (the goal: at least 1,000 with 20 at once),
   and the same directly; the server's RSS after every round (the goal: flat).

Stops by itself; prints one line per measure and a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import HOST, ROOT, Server, free_port, throwaway_store

PAD = "x" * 120
"""Makes a chunk about as long as a real one with a short argument fragment (~260 bytes)."""


_TEMPLATE = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "model": "gpt-bench",
        "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {
            "arguments": PAD}}]}, "finish_reason": None}],
        "t": 0,
    },
    separators=(",", ":"),
).encode()[:-2]  # fmt: skip


def chunk() -> bytes:
    """One event, stamped with the time it is sent (the template is made once)."""
    return b"data: " + _TEMPLATE + b"%d}\n\n" % time.monotonic_ns()


SHAPES = ("call", "drops")
"""A fixed stream's shapes: `call`, a call opened (id and name) whose JSON arguments then come
in pieces, its finish_reason with the last, as providers send one; `drops`, argument pieces
with no call ever opened (each one dropped, an anomaly: the figures before 2026-12-05)."""
_HEAD = b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"gpt-bench",'


def fixed_chunk(i: int, n: int = 0, shape: str = "drops") -> bytes:
    """An unstamped event, the i-th of a stream of n known in advance (`sidebyside.py` checks
    every target's bytes against it), of one of `SHAPES`."""
    if shape == "drops":
        piece = f"x{i:07d}" * 15
        return (
            _HEAD + b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
            b'{"arguments":"' + piece.encode() + b'"}}]},"finish_reason":null}]}\n\n'
        )
    if i == 0:
        return (
            _HEAD + b'"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,'
            b'"id":"call_bench","type":"function","function":{"name":"lookup","arguments":'
            b'"{\\"rows\\": ["}}]},"finish_reason":null}]}\n\n'
        )
    last = i == n - 1
    piece = f'\\"x{i:07d}{"y" * 90}\\"' + ("]}" if last else ",")
    return (
        _HEAD + b'"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
        b'{"arguments":"'
        + piece.encode()
        + b'"}}]},"finish_reason":'
        + (b'"tool_calls"' if last else b"null")
        + b"}]}\n\n"
    )


async def fake(scope: dict[str, object], receive: object, send: object) -> None:
    """POST {"n": N, "pause_ms": P}: N stamped chunks, P ms apart, then [DONE]; with
    "fixed": true, `fixed_chunk`'s unstamped chunks instead (of "shape", `SHAPES`)."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()  # type: ignore[operator]
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    asked = json.loads(body or b"{}")
    n, pause = int(asked.get("n", 100)), float(asked.get("pause_ms", 0)) / 1000
    shape = str(asked.get("shape", "drops"))
    make = (lambda i: fixed_chunk(i, n, shape)) if asked.get("fixed") else (lambda i: chunk())
    headers = [(b"content-type", b"text/event-stream")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})  # type: ignore[operator]
    for i in range(n):
        if pause:
            await asyncio.sleep(pause)
        await send({"type": "http.response.body", "body": make(i), "more_body": True})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})  # type: ignore[operator]


async def one_stream(
    client: httpx.AsyncClient, url: str, n: int, pause_ms: float, timed: bool = True
) -> tuple[list[float], float]:
    """Latencies (ms) of the stream's chunks (when `timed`) and its chunks per second."""
    latencies: list[float] = []
    start = time.monotonic()
    buffer = b""
    events = 0
    body = {"model": "gpt-bench", "stream": True, "n": n, "pause_ms": pause_ms}
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200, response.status_code
        async for piece in response.aiter_raw():
            now = time.monotonic_ns()
            buffer += piece
            *done, buffer = buffer.split(b"\n\n")
            events += len(done)
            if timed:
                for event in done:
                    if event.startswith(b"data: {"):
                        latencies.append((now - int(event[event.rindex(b":") + 1 : -1])) / 1e6)
    elapsed = time.monotonic() - start
    assert events == n + 1, (events, n)  # and [DONE]
    return latencies, n / elapsed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rss_mb(pid: int) -> float:
    """The process's resident set, in MB (with its children: uvicorn runs in the process)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def measure(args: argparse.Namespace, direct: str, proxied: str, pid: int) -> int:
    limits = httpx.Limits(max_connections=args.streams * 2)
    timeout = httpx.Timeout(120.0)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        await one_stream(client, proxied, 50, 0)  # warm both paths
        await one_stream(client, direct, 50, 0)
        lat: dict[str, list[float]] = {"direct": [], "proxy": []}
        for _ in range(args.latency_runs):
            for name, url in (("direct", direct), ("proxy", proxied)):
                found, _ = await one_stream(client, url, args.chunks, args.pause_ms)
                lat[name] += found
        p50 = {k: statistics.median(v) for k, v in lat.items()}
        p95 = {k: pct(v, 0.95) for k, v in lat.items()}
        for name in ("direct", "proxy"):
            print(f"latency {name:6} {len(lat[name])} chunks, {args.pause_ms:g} ms apart: "
                  f"p50 {p50[name]:.3f} ms, p95 {p95[name]:.3f} ms")  # fmt: skip
        added50, added95 = p50["proxy"] - p50["direct"], p95["proxy"] - p95["direct"]
        print(f"latency added by the proxy: p50 {added50:.3f} ms, p95 {added95:.3f} ms "
              f"(goal: at most 2 ms at p95)")  # fmt: skip
        rss = [rss_mb(pid)]
        rates: dict[str, list[float]] = {"direct": [], "proxy": []}
        for round_ in range(args.rounds):
            for name, url in (("direct", direct), ("proxy", proxied)):
                jobs = [
                    one_stream(client, url, args.burst, 0, timed=False) for _ in range(args.streams)
                ]
                results = await asyncio.gather(*jobs)
                rates[name] += [rate for _, rate in results]
            rss.append(rss_mb(pid))
            print(f"round {round_ + 1}: {args.streams} streams x {args.burst} chunks each way; "
                  f"server RSS {rss[-1]:.1f} MB")  # fmt: skip
        for name in ("direct", "proxy"):
            print(f"throughput {name:6} {args.streams} at once: per stream min "
                  f"{min(rates[name]):,.0f}, median {statistics.median(rates[name]):,.0f} "
                  "chunks/s")  # fmt: skip
        growth = rss[-1] - rss[1] if len(rss) > 2 else 0.0
        print(f"server RSS: {' '.join(f'{r:.1f}' for r in rss)} MB "
              f"(after the first round to the last: {growth:+.1f} MB)")  # fmt: skip
        ok_latency = added95 <= 2.0
        ok_rate = min(rates["proxy"]) >= 1000
        ok_memory = growth < 20
        worst = min(rates["proxy"])
        print(f"summary: added p95 {added95:.3f} ms ({'met' if ok_latency else 'not met'}), "
              f"min {worst:,.0f} chunks/s per stream ({'met' if ok_rate else 'not met'}), "
              f"RSS {growth:+.1f} MB ({'flat' if ok_memory else 'grew'})")  # fmt: skip
        return 0 if (ok_latency and ok_rate and ok_memory) or args.no_fail else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fake", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--chunks", type=int, default=500, help="chunks per latency stream")
    parser.add_argument("--pause-ms", type=float, default=2.0, help="pause between them")
    parser.add_argument("--latency-runs", type=int, default=4, help="latency streams each way")
    parser.add_argument("--streams", type=int, default=20, help="concurrent streams")
    parser.add_argument("--burst", type=int, default=5000, help="chunks per throughput stream")
    parser.add_argument("--rounds", type=int, default=5, help="throughput rounds")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even if a goal is missed")
    args = parser.parse_args()
    if args.fake is not None:
        import uvicorn

        uvicorn.run(fake, host=HOST, port=args.fake, log_level="warning", access_log=False)
        return 0
    port = free_port()
    fake_process = subprocess.Popen([sys.executable, __file__, "--fake", str(port)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(f"http://{HOST}:{port}/", json={"n": 1}, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or fake_process.poll() is not None:
                    raise RuntimeError("the fake provider did not start") from None
                time.sleep(0.05)
        with throwaway_store("sqlite", None) as db:
            server = Server(db, extra=["--upstream", f"http://{HOST}:{port}"])
            server.start()
            try:
                assert server.process is not None
                direct = f"http://{HOST}:{port}/v1/chat/completions"
                proxied = f"{server.base}/proxy/default/v1/chat/completions"
                print(f"fake provider http://{HOST}:{port}, streamviz {server.base} "
                      f"(pid {server.process.pid}), SQLite store")  # fmt: skip
                return asyncio.run(measure(args, direct, proxied, server.process.pid))
            finally:
                server.stop()
    finally:
        fake_process.terminate()
        fake_process.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
