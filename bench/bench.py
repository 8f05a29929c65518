"""How `streamviz trace --format json` scales, against the floor of parsing every chunk's JSON.

Inputs (raw SSE, written to a temporary folder), each at full size and at 1/10:
- one-call-bare:  one call, a header chunk then 1 MB of arguments in 100,000 fragments that
  carry no index, no id and no name (rule `continuation` under adr-0019);
- one-call-index: the same with `"index": 0` on every fragment (rule `exact-index`);
- openai:         a call writing a source file as OpenAI streams it: 1 MB of JSON arguments
  whose pieces hold quotes and escapes, `"index": 0`, and `logprobs`, `usage` and a random
  `obfuscation` field in every chunk, so that no two chunks are the same text but for their
  arguments (what `webapp.core.shapes` learns a chunk's shape from);
- parallel:       1,000 calls opened up front, then 100 fragments each, interleaved round robin
  (100,000 fragments; the 1/10 input has 100 calls).

For each input, best of --repeat runs (of five times as many for the 1/10 input), after one
untimed run of every command on a small stream:
- floor:      `json.loads` of every chunk's JSON text, pre-split, with the standard library;
- in-proc:    bytes -> `decode` -> `read` -> `assemble` -> trace document -> `orjson` bytes, the
  functions as they are (`read` and `assemble` pause the cyclic GC themselves, the rest not);
- gc-paused:  the same pipeline with the cyclic GC paused around all of it, as the CLI runs it;
- cli json:   the `streamviz trace --format json` command itself, output to /dev/null;
- cli text:   `streamviz trace` (the text table, plain), output to /dev/null;
- cli check:  `streamviz check` (the anomalies, plain), output to /dev/null.
Peak memory (tracemalloc, a separate run): the floor splits the text and keeps every parsed
chunk; `cli json` runs from the file to /dev/null. Both are also printed against the input size.

Run: `.venv/bin/python bench/bench.py` (or `make bench`); `--profile NAME` prints where the
in-process time goes for one full-size input. A full run ends with the minimiser on a 5,000-chunk
stream with one ambiguous continuation buried in it (time, tests, records left), and the
published clients (`streamviz clients`' lenses: pi-ai, the Vercel AI SDK, openai-python,
LangChain, LiteLLM, when installed) on the index-0 input beside ours (`peers`); `--minimize`
and `--peers` run only those.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import itertools
import json
import pstats
import random
import string
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from webapp.cli import main as cli_main
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import decode, read
from webapp.core.tracejson import trace_document_parts

ARGUMENT_BYTES = 1_000_000
FRAGMENTS = 100_000
CALLS = 1_000
SMALL_REPEAT = 5


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "bench-model",
        "choices": [choice],
    }
    return json.dumps(chunk, separators=(",", ":"))


def _header(index: int, name: str) -> str:
    call = {
        "index": index,
        "id": f"call_{index}",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    return _chunk({"role": "assistant", "tool_calls": [call]})


def _arguments(total: int) -> str:
    """A JSON object of about `total` characters."""
    filler = "abcdefghij" * (total // 10)
    return '{"data":"' + filler[: max(0, total - 11)] + '"}'


def one_call(fragments: int, indexed: bool) -> list[str]:
    """One call's header, then its arguments in `fragments` pieces of equal size."""
    text = _arguments(ARGUMENT_BYTES * fragments // FRAGMENTS)
    size = -(-len(text) // fragments)
    payloads = [_header(0, "write_file")]
    for start in range(0, len(text), size):
        call: dict[str, Any] = {"function": {"arguments": text[start : start + size]}}
        if indexed:
            call["index"] = 0
        payloads.append(_chunk({"tool_calls": [call]}))
    payloads.append(_chunk({}, "tool_calls"))
    return payloads


def openai(fragments: int) -> list[str]:
    """A call writing a source file, as OpenAI streams it: JSON arguments whose pieces hold
    quotes and escapes, `"index": 0` on each, and the fields OpenAI adds to every chunk,
    among them `obfuscation`: random characters of random length (a fixed seed)."""
    line = 'print("hello, %s" % name)  # a \\ b\n'
    content = line * (ARGUMENT_BYTES * fragments // FRAGMENTS // len(line))
    text = json.dumps({"path": "src/app.py", "content": content})
    bounds = [len(text) * piece // fragments for piece in range(fragments + 1)]
    noise = random.Random(19)
    letters = string.ascii_letters + string.digits
    payloads = [_header(0, "write_file")]
    for start, end in itertools.pairwise(bounds):
        call = {"index": 0, "function": {"arguments": text[start:end]}}
        payloads.append(_chunk({"tool_calls": [call]}))
    payloads.append(_chunk({}, "tool_calls"))
    out = []
    for payload in payloads:
        value = json.loads(payload)
        value["choices"][0]["logprobs"] = None
        value["usage"] = None
        value["obfuscation"] = "".join(noise.choices(letters, k=noise.randint(1, 16)))
        out.append(json.dumps(value, separators=(",", ":")))
    return out


def parallel(calls: int, per_call: int | None = None) -> list[str]:
    """`calls` headers, then `per_call` fragments of each call, round robin."""
    per_call = FRAGMENTS // CALLS if per_call is None else per_call
    text = _arguments(per_call * 8)
    size = -(-len(text) // per_call)
    pieces = [text[start : start + size] for start in range(0, len(text), size)]
    payloads = [_header(index, f"tool_{index}") for index in range(calls)]
    for piece in pieces:
        for index in range(calls):
            call = {"index": index, "function": {"arguments": piece}}
            payloads.append(_chunk({"tool_calls": [call]}))
    payloads.append(_chunk({}, "tool_calls"))
    return payloads


def sse(payloads: list[str]) -> bytes:
    """The payloads as a raw SSE body."""
    return "".join(f"data: {payload}\n\n" for payload in [*payloads, "[DONE]"]).encode()


INPUTS: dict[str, Callable[[int], list[str]]] = {
    "one-call-bare": lambda scale: one_call(FRAGMENTS // scale, indexed=False),
    "one-call-index": lambda scale: one_call(FRAGMENTS // scale, indexed=True),
    "openai": lambda scale: openai(FRAGMENTS // scale),
    "parallel": lambda scale: parallel(CALLS // scale),
}


def floor(payloads: list[str]) -> None:
    """Parse every chunk's JSON text with the standard library."""
    loads = json.loads
    for payload in payloads:
        loads(payload)


def floor_kept(text: str) -> list[Any]:
    """The floor for memory: split the text and keep every parsed chunk."""
    lines = [line[6:] for line in text.split("\n") if line.startswith("data: {")]
    return [json.loads(line) for line in lines]


def in_process(path: Path) -> bytes:
    """The pipeline `streamviz trace --format json` runs, to bytes in memory."""
    source = read(decode(path.read_bytes()), "auto")
    trace = assemble(source.records, Options())
    return b"".join(trace_document_parts(trace, source))


def in_process_paused(path: Path) -> bytes:
    """The same with the cyclic garbage collector paused, as the CLI runs it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return in_process(path)
    finally:
        if enabled:
            gc.enable()


def through_cli(path: Path, output: str = "json", command: str = "trace") -> None:
    """The click command itself, stdout sent to /dev/null."""
    with open("/dev/null", "wb") as sink, _stdout(sink), contextlib.suppress(SystemExit):
        cli_main.main([command, str(path), "--format", output], standalone_mode=False)


@contextlib.contextmanager
def _stdout(sink: io.BufferedWriter) -> Iterator[None]:
    saved = sys.stdout
    sys.stdout = io.TextIOWrapper(sink, encoding="utf-8", write_through=True)
    try:
        yield
    finally:
        sys.stdout.detach()
        sys.stdout = saved


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]
"""CPU time of this process by default: on a machine shared with other work, the wall clock
measures the neighbours too (`--clock wall` for the elapsed time)."""


def best(run: Callable[[], object], repeat: int) -> float:
    """The best time of `repeat` runs, in seconds, on `clock`."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = clock()
        run()
        times.append(clock() - start)
    return min(times)


def peak(run: Callable[[], object]) -> int:
    """Peak traced memory of one run, in bytes."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def warm_up(folder: Path) -> None:
    """Run every command once on a small stream, untimed: the first run of a command imports
    modules that the floor never needs, which would be counted to whichever input came first."""
    path = folder / "warm-up.sse"
    path.write_bytes(sse(one_call(100, indexed=True)))
    in_process_paused(path)
    for output, command in (("json", "trace"), ("text", "trace"), ("text", "check")):
        through_cli(path, output, command)


def measure(name: str, scale: int, folder: Path, repeat: int) -> dict[str, Any]:
    """Time and memory of floor, in-process and CLI on one input.

    The 1/10 input is timed best of `SMALL_REPEAT` times as often: its runs take tens of
    milliseconds, where a neighbour's burst moves the "10x the input" ratio by a whole point.
    """
    if scale != 1:
        repeat *= SMALL_REPEAT
    payloads = INPUTS[name](scale)
    path = folder / f"{name}-{scale}.sse"
    path.write_bytes(sse(payloads))
    text = path.read_text()
    return {
        "name": name,
        "scale": scale,
        "bytes": path.stat().st_size,
        "chunks": len(payloads),
        "floor": best(lambda: floor(payloads), repeat),
        "inproc": best(lambda: in_process(path), repeat),
        "paused": best(lambda: in_process_paused(path), repeat),
        "cli": best(lambda: through_cli(path), repeat),
        "text": best(lambda: through_cli(path, "text"), repeat),
        "check": best(lambda: through_cli(path, "text", "check"), repeat),
        "floor_mem": peak(lambda: floor_kept(text)),
        "trace_mem": peak(lambda: through_cli(path)),
    }


_TIMES = (
    ("inproc", "in-proc"),
    ("paused", "gc-paused"),
    ("cli", "cli json"),
    ("text", "cli text"),
    ("check", "cli check"),
)


def table(rows: list[dict[str, Any]]) -> Iterator[str]:
    """The results, one line per input and size: seconds (ratio to the floor), then scaling."""
    head = "".join(f" {label:>16}" for _, label in _TIMES)
    yield (
        f"{'input':<15} {'size':>4} {'MB':>5} {'chunks':>7} {'floor s':>7}{head} "
        f"{'peak MB (x floor, x input)':>27}"
    )
    for row in rows:
        size = "1/10" if row["scale"] == 10 else "full"
        times = "".join(
            f" {row[key]:>7.3f} (x{row[key] / row['floor']:>5.1f})" for key, _ in _TIMES
        )
        memory = (
            f"{row['trace_mem'] / 1e6:>5.0f} (x{row['trace_mem'] / row['floor_mem']:>4.1f}, "
            f"x{row['trace_mem'] / row['bytes']:>4.1f} input)"
        )
        yield (
            f"{row['name']:<15} {size:>4} {row['bytes'] / 1e6:>5.1f} {row['chunks']:>7} "
            f"{row['floor']:>7.3f}{times} {memory:>14}"
        )
    yield ""
    keys = ("floor", *(key for key, _ in _TIMES))
    labels = "".join(f" {label:>9}" for label in ("floor", *(label for _, label in _TIMES)))
    yield f"{'scaling: time(full) / time(1/10)':<32}{labels}"
    by_key = {(row["name"], row["scale"]): row for row in rows}
    for name in INPUTS:
        big, small = by_key.get((name, 1)), by_key.get((name, 10))
        if big is not None and small is not None:
            ratios = "".join(f" {big[key] / small[key]:>9.2f}" for key in keys)
            yield f"{name:<32}{ratios}"


def profile(name: str, folder: Path, limit: int) -> None:
    """Where the in-process time goes on the full-size input `name`."""
    path = folder / f"{name}-profile.sse"
    path.write_bytes(sse(INPUTS[name](1)))
    profiler = cProfile.Profile()
    profiler.runcall(in_process, path)
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(limit)
    stats.sort_stats("tottime").print_stats(limit)


def peers(name: str, folder: Path, repeat: int) -> Iterator[str]:
    """The published clients (the lenses of `streamviz clients`) on the full-size input `name`.

    Each runs unmodified in its own process (Node for pi-ai and the Vercel AI SDK, Python for
    openai-python, LangChain and LiteLLM) and is timed from the request to its reply, as the
    lens runner times it; the same lens on a one-chunk stream gives its start-up, which is
    taken off. Wall-clock time (other processes), so on a shared machine read it loosely.
    """
    from webapp.lenses import default_lenses
    from webapp.lenses.runner import run_lens

    payloads = INPUTS[name](1)
    text = sse(payloads).decode()
    tiny = sse(payloads[:1] + payloads[-1:]).decode()
    global clock
    saved, clock = clock, CLOCKS["wall"]  # the lenses are timed by the wall clock too
    try:
        floor_time = best(lambda: floor(payloads), repeat)
        path = folder / f"{name}-peers.sse"
        path.write_text(text)
        ours = best(lambda: through_cli(path), repeat)
    finally:
        clock = saved
    yield f"peers on {name} ({len(payloads):,} chunks), floor {floor_time:.3f} s:"
    yield f"  {'streamviz trace --format json':<34} {ours:>7.3f} s  x{ours / floor_time:>5.1f}"
    for lens in default_lenses():
        label = f"{lens.pin.client} {lens.pin.version}"
        if lens.missing is not None:
            yield f"  {label:<34} not installed ({lens.missing}; `make clients`)"
            continue
        start = min(_lens_seconds(lens, tiny, run_lens) for _ in range(repeat))
        runs = [_lens_seconds(lens, text, run_lens) for _ in range(repeat)]
        if any(isinstance(run, str) for run in (start, *runs)):
            failed = next(run for run in (start, *runs) if isinstance(run, str))
            yield f"  {label:<34} failed: {failed[:120]}"
            continue
        work = min(runs) - start  # type: ignore[operator]
        yield (
            f"  {label:<34} {work:>7.3f} s  x{work / floor_time:>5.1f}  "
            f"(start-up {start:.2f} s taken off)"
        )


PEER_TIMEOUT = 180.0
"""Seconds a published client gets on the full-size input (LangChain needs more than 600)."""


def _lens_seconds(lens: Any, text: str, run_lens: Callable[..., Any]) -> float | str:
    """The lens's time on `text`, or what went wrong."""
    result = run_lens(lens, [text], timeout=PEER_TIMEOUT, memory=8 << 30)[0]
    if result.status != "ok" or result.seconds is None:
        return f"{result.status}: {result.error}"
    return float(result.seconds)


def buried_continuation(size: int) -> list[str]:
    """`size` chunks: text, then two headers and one bare continuation, then index-1 pieces."""
    payloads = [_chunk({"content": f"word {i} "}) for i in range(size // 2)]
    payloads += [_header(0, "get_weather"), _header(1, "book_flight")]
    payloads.append(_chunk({"tool_calls": [{"function": {"arguments": '{"city":"Paris"}'}}]}))
    while len(payloads) < size - 1:
        payloads.append(_chunk({"tool_calls": [{"index": 1, "function": {"arguments": " "}}]}))
    payloads.append(_chunk({}, "tool_calls"))
    return payloads


def minimizer(size: int = 5_000) -> None:
    """Minimise a stream with one ambiguous continuation buried in it: time and result size."""
    from webapp.triage.minimise import minimize
    from webapp.triage.predicates import parse_until

    source = read(decode(sse(buried_continuation(size))))
    until = parse_until("anomaly:ambiguous-continuation", Options())
    start = time.perf_counter()
    result = minimize(source.records, until.predicate)
    took = time.perf_counter() - start
    print(
        f"minimize {len(source.records):,} records until {until.text}: {took:.2f} s, "
        f"{result.tests:,} tests, {len(result.records)} records left"
    )


def _resize(fragments: int) -> None:
    """Full-size inputs of `fragments` fragments, each fragment as large as by default."""
    global ARGUMENT_BYTES, FRAGMENTS
    ARGUMENT_BYTES = ARGUMENT_BYTES * fragments // FRAGMENTS
    FRAGMENTS = fragments


def main() -> None:
    """Generate the inputs, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (best is kept)")
    parser.add_argument("--only", choices=tuple(INPUTS), action="append", help="inputs to run")
    parser.add_argument("--profile", choices=tuple(INPUTS), help="profile one input instead")
    parser.add_argument("--minimize", action="store_true", help="time the minimiser instead")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="what time counts")
    parser.add_argument("--peers", action="store_true", help="time the published clients only")
    parser.add_argument(
        "--fragments",
        type=int,
        default=FRAGMENTS,
        help="fragments in a full-size input (1000000: the 1M-chunk inputs, about 220 MB each)",
    )
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    if args.minimize:
        minimizer()
        return
    _resize(args.fragments)
    with tempfile.TemporaryDirectory(prefix="streamviz-bench-") as folder:
        if args.profile:
            profile(args.profile, Path(folder), 30)
            return
        if args.peers:
            for name in args.only or INPUTS:
                print("\n".join(peers(name, Path(folder), args.repeat)))
            return
        rows = []
        warm_up(Path(folder))
        for name in args.only or INPUTS:
            for scale in (10, 1):
                rows.append(measure(name, scale, Path(folder), args.repeat))
                print(f"measured {name} at 1/{scale}", file=sys.stderr)
        print("\n".join(table(rows)))
        if not args.only:
            minimizer()
            print("\n".join(peers("one-call-index", Path(folder), 1)))


if __name__ == "__main__":
    main()
