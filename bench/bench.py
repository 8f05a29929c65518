"""How `streamviz trace --format json` and `streamviz check` cost against the floor of parsing
every chunk's JSON, as whole processes, on synthetic and on real-framed streams.

Inputs (raw SSE files in a temporary folder), at 100,000 chunks (`--chunks`) and at 1/10:
- real-framed: the chunks of a recording in `bench/recordings/` (origins in its ORIGINS.md),
  repeated byte for byte (`real_framed`): every run of argument-only or reasoning chunks is
  repeated whole, in place, as often as it takes to reach the size; every other event (the
  call's header, the finish and usage chunks, comments, `[DONE]`) is kept once, where it was;
- synthetic: one call whose arguments come in bare continuations (`one-call-bare`) or in
  `"index": 0` fragments (`one-call-index`), a call writing a source file with OpenAI's extra
  fields and a random `obfuscation` in every chunk (`openai`), and 1,000 calls interleaved
  round robin (`parallel`).

For each input, best of --repeat rounds in this one run (each round runs every command once),
each command a process of its own:
- floor:  `python -c` reading the file, splitting its lines and `json.loads`-ing every
  `data: {` line (the standard library, as any Python tool would);
- json:   `streamviz trace --format json FILE > /dev/null`;
- check:  `streamviz check FILE > /dev/null` (exit 1 on errors is not a failure here);
- json src, check src: the same on a copy of this checkout's package without its compiled
  modules (`webapp.compiled.copy_sources`): the core interpreted, as the pure-Python wheel
  installs it where no C compiler is (hatch_build.py);
- pi-ai:  `node lens.mjs pi-ai` (webapp/lenses/node, the published library unmodified, fed the
  file through a loopback HTTP server as `streamviz clients` runs it), real-framed inputs only
  (`--peers-all`: every input).
Times are CPU (user + system of the process and its threads, from `wait4`) and wall clock,
both printed; peak memory is the process's maximum resident set, against the input's size.

Run: `.venv/bin/python bench/bench.py` (or `make bench`); `--only NAME` repeats to choose
inputs, `--profile NAME` prints where the in-process time goes on one full-size input.
`--against DIR` compares this checkout with another one (a `git worktree` of an older commit,
compiled there with `make compile`): json and check of each input, the two checkouts' runs
alternating, --repeat rounds, best and median CPU of each side. On a machine whose speed
drifts from minute to minute (a shared host), alternating keeps the drift out of the ratio.
`--instructions` counts instead of timing: each command once under valgrind (cachegrind, no
cache simulation, PYTHONHASHSEED=0), the instructions it ran against the floor's, for this
checkout or, with `--against DIR`, beside the other one's. Counts do not drift with the
machine's speed, so a change of a few percent shows in one run where CPU seconds need many
alternating rounds; but an instruction is not a unit of time (a scan of bytes runs several a
cycle, a lookup in a dict just made waits on memory), so the goals stay in CPU seconds.
Measured numbers go to bench/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import pstats
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = Path(__file__).resolve().parent / "recordings"
LENS = ROOT / "webapp" / "lenses" / "node" / "lens.mjs"
CHUNKS = 100_000
ARGUMENT_BYTES = 1_000_000
"""Synthetic inputs: the arguments' size at `CHUNKS` chunks (scaled with it)."""
CALLS = 1_000

REAL = {
    "openrouter-claude": "openrouter-claude45haiku-reasoning-tool.sse",
    "openrouter-kimi": "openrouter-kimi-k25-reasoning-parallel.sse",
    "gateway-gpt5": "vercel-gateway-gpt5-reasoning-tool.sse",
    "openai-gpt4o": "openai-gpt4o-long-arguments.sse",
}
"""Real-framed inputs: the recording each repeats (bench/recordings/ORIGINS.md)."""

FLOOR = (
    "import json, sys\n"
    "loads = json.loads\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    text = f.read()\n"
    "for line in text.split('\\n'):\n"
    "    if line.startswith('data: {'):\n"
    "        loads(line[6:])\n"
)
SOURCES = "sources"
"""The folder, in the bench's temporary one, of the package's copy without compiled modules."""
STREAMVIZ = "import sys\nfrom webapp.cli import main\nsys.exit(main())\n"
"""The CLI's entry point, run from this checkout (PYTHONPATH) rather than the installed one."""


# Real-framed inputs.


def events(text: str) -> list[str]:
    """An SSE text's events, each with the blank line that ends it, byte for byte."""
    parts = text.split("\n\n")
    out = [part + "\n\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def repeatable(event: str) -> str | None:
    """ "reasoning" or "arguments" for an event that is one chunk carrying only reasoning text or
    only argument text for calls already opened (no id, no name, no finish_reason); else None."""
    if not event.startswith("data: {") or event.count("\n") != 2:
        return None
    try:
        chunk = json.loads(event[6:])
        (choice,) = chunk["choices"]
    except (ValueError, KeyError, TypeError):
        return None
    delta = choice.get("delta") or {}
    if choice.get("finish_reason") is not None or not isinstance(delta, dict):
        return None
    calls = delta.get("tool_calls")
    if calls:
        plain = all(
            isinstance(call, dict)
            and not call.get("id")
            and not (call.get("function") or {}).get("name")
            for call in calls
        )
        return "arguments" if plain else None
    text = delta.get("reasoning") or delta.get("reasoning_content")
    return "reasoning" if isinstance(text, str) and text else None


def real_framed(recording: str, chunks: int) -> str:
    """The recording with each run of repeatable events repeated whole, in place, so that the
    stream holds about `chunks` chunks; every byte is the recording's."""
    found = events((RECORDINGS / recording).read_text(encoding="utf-8"))
    runs: list[tuple[str | None, list[str]]] = []
    for event in found:
        kind = repeatable(event)
        if runs and kind is not None and runs[-1][0] == kind:
            runs[-1][1].append(event)
        else:
            runs.append((kind, [event]))
    fixed = sum(len(run) for kind, run in runs if kind is None)
    moving = sum(len(run) for kind, run in runs if kind is not None)
    times = max(1, round((chunks - fixed) / moving))
    return "".join("".join(run * (1 if kind is None else times)) for kind, run in runs)


# Synthetic inputs.


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
    text = _arguments(ARGUMENT_BYTES * fragments // CHUNKS)
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
    content = line * (ARGUMENT_BYTES * fragments // CHUNKS // len(line))
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


def parallel(calls: int, chunks: int) -> list[str]:
    """`calls` headers, then fragments of each call round robin, `chunks` in all."""
    per_call = max(1, chunks // calls)
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


def sse(payloads: list[str]) -> str:
    """The payloads as a raw SSE body."""
    return "".join(f"data: {payload}\n\n" for payload in [*payloads, "[DONE]"])


SYNTHETIC: dict[str, Callable[[int], str]] = {
    "one-call-bare": lambda chunks: sse(one_call(chunks, indexed=False)),
    "one-call-index": lambda chunks: sse(one_call(chunks, indexed=True)),
    "openai": lambda chunks: sse(openai(chunks)),
    "parallel": lambda chunks: sse(parallel(max(1, CALLS * chunks // CHUNKS), chunks)),
}
INPUTS: dict[str, Callable[[int], str]] = {
    **{name: (lambda chunks, file=file: real_framed(file, chunks)) for name, file in REAL.items()},
    **SYNTHETIC,
}


# Measuring whole processes.


@dataclass(frozen=True, slots=True)
class Run:
    """One process: CPU seconds (user + system), wall seconds, peak resident set in bytes."""

    cpu: float
    wall: float
    rss: int
    status: int


LAUNCH = (
    "import json, os, sys, time\n"
    "start = time.perf_counter()\n"
    "pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "wall = time.perf_counter() - start\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump([usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss * 1024,\n"
    "               os.waitstatus_to_exitcode(status)], out)\n"
)
"""Run a command and write its CPU, wall, peak memory and exit code. The command is started
by this small process, not by the bench: a process's peak resident set counts the one it was
started from (Linux keeps the larger at `exec`), and the bench holds the inputs."""


PYCACHE = Path(tempfile.gettempdir()) / "streamviz-bench-pycache"
"""Where the commands keep their bytecode: an installed package has its modules compiled, so the
bench lets Python write (and then read) bytecode there even where the environment says not to
(PYTHONDONTWRITEBYTECODE: every start would compile every module from source again)."""


def run(command: list[str], stdin: Path | None = None, root: Path = ROOT) -> Run:
    """Run `command` to completion, stdout to /dev/null, and measure it with `wait4`; `root`:
    the checkout it runs from."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.NamedTemporaryFile("r", suffix=".json") as report:
        with open(os.devnull, "wb") as sink, open(stdin or os.devnull, "rb") as source:
            done = subprocess.run(
                [sys.executable, "-c", LAUNCH, report.name, *command],
                stdin=source, stdout=sink, stderr=subprocess.PIPE, env=env, cwd=root,
            )  # fmt: skip
        cpu, wall, rss, code = json.load(report)
    if done.returncode != 0 or code not in (0, 1):
        problem = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{' '.join(command)} exited {code}: {problem}")
    return Run(cpu, wall, rss, code)


def best(runs: list[Run]) -> Run:
    """The best of some runs: least CPU, least wall and least memory, each on its own."""
    return Run(
        min(r.cpu for r in runs),
        min(r.wall for r in runs),
        min(r.rss for r in runs),
        runs[0].status,
    )


def copy_sources(folder: Path) -> None:
    """The package without its compiled modules, in `folder` / SOURCES ("src" columns)."""
    sys.path.insert(0, str(ROOT))
    from webapp.compiled import copy_sources as copy

    copy(str(folder / SOURCES), str(ROOT))


def commands(path: Path) -> dict[str, list[str]]:
    """The commands timed on one input file (in the bench's folder, beside SOURCES)."""
    python = sys.executable
    # The core interpreted: the copy first on the path, and not the working directory (-P).
    interpreted = ["env", f"PYTHONPATH={path.parent / SOURCES}", python, "-P"]
    return {
        "floor": [python, "-c", FLOOR, str(path)],
        "json": [python, "-c", STREAMVIZ, "trace", str(path), "--format", "json"],
        "check": [python, "-c", STREAMVIZ, "check", str(path)],
        "json src": [*interpreted, "-c", STREAMVIZ, "trace", str(path), "--format", "json"],
        "check src": [*interpreted, "-c", STREAMVIZ, "check", str(path)],
    }


def pi_ai_request(path: Path) -> Path:
    """The lens's stdin for `path`: {"streams": [the file's text]}."""
    request = path.with_suffix(".pi-ai.json")
    request.write_text(json.dumps({"streams": [path.read_text(encoding="utf-8")]}))
    return request


def warm_up(folder: Path) -> None:
    """Run every command once on a small stream, untimed: the first run compiles the modules'
    bytecode (`PYCACHE`) and reads them into the page cache."""
    path = folder / "warm-up.sse"
    path.write_text(INPUTS["openai-gpt4o"](100), encoding="utf-8")
    for command in commands(path).values():
        run(command)
    run(["node", str(LENS), "pi-ai"], pi_ai_request(path))


def measure(name: str, chunks: int, folder: Path, repeat: int, peers: bool) -> dict[str, Any]:
    """Every command on one input, best of `repeat` rounds of them all."""
    path = folder / f"{name}-{chunks}.sse"
    text = INPUTS[name](chunks)
    path.write_text(text, encoding="utf-8")
    row: dict[str, Any] = {
        "name": name,
        "chunks": text.count("\ndata: {") + text.startswith("data: {"),
        "bytes": path.stat().st_size,
    }
    timed: dict[str, tuple[list[str], Path | None]] = {
        label: (command, None) for label, command in commands(path).items()
    }
    if peers:
        timed["pi-ai"] = (["node", str(LENS), "pi-ai"], pi_ai_request(path))
    runs: dict[str, list[Run]] = {label: [] for label in timed}
    for _ in range(repeat):  # each round runs every command: a drift in speed hits them all
        for label, (command, stdin) in timed.items():
            runs[label].append(run(command, stdin))
    row.update((label, best(done)) for label, done in runs.items())
    return row


def against(other: Path, names: list[str], folder: Path, chunks: int, rounds: int) -> None:
    """`--against`: json and check of each input from this checkout and from `other`, the
    runs alternating; best and median CPU seconds of each, and the ratio of the bests."""
    print(f"CPU s, {rounds} rounds alternating, {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"{'input':<18} {'command':<7} {'here best':>9} {'median':>7} "
          f"{'there best':>10} {'median':>7} {'here/there':>10}")  # fmt: skip
    for name in names:
        path = folder / f"{name}-{chunks}.sse"
        path.write_text(INPUTS[name](chunks), encoding="utf-8")
        for label in ("json", "check"):
            command = commands(path)[label]
            for root in (ROOT, other):  # untimed: bytecode and page cache
                run(command, root=root)
            times: dict[Path, list[float]] = {ROOT: [], other: []}
            for _ in range(rounds):
                for root, seconds in times.items():
                    seconds.append(run(command, root=root).cpu)
            here, there = times[ROOT], times[other]
            print(f"{name:<18} {label:<7} {min(here):9.3f} {statistics.median(here):7.3f} "
                  f"{min(there):10.3f} {statistics.median(there):7.3f} "
                  f"{min(here) / min(there):9.2f}x")  # fmt: skip


def instructions(command: list[str], root: Path = ROOT) -> int:
    """The instructions `command` runs, counted by valgrind (`--instructions`)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONHASHSEED"] = "0"  # the same dict probes in every run
    counted = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        *command,
    ]  # fmt: skip
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(counted, stdout=sink, stderr=subprocess.PIPE, env=env, cwd=root)
    report = done.stderr.decode(errors="replace")
    found = [line for line in report.splitlines() if "I   refs:" in line or "I refs:" in line]
    if not found:
        raise RuntimeError(f"{' '.join(command)}: no instruction count: {report[-2000:]}")
    return int(found[-1].split(":")[1].replace(",", ""))


def count_instructions(names: list[str], folder: Path, chunks: int, other: Path | None) -> None:
    """`--instructions`: json and check of each input against the floor, in instructions."""
    roots = [ROOT] if other is None else [ROOT, other]
    print(f"millions of instructions (x the floor), {time.strftime('%Y-%m-%d %H:%M')}")
    sides = ("",) if other is None else (" here", " there")
    heads = "".join(f" {label + side:>20}" for label in ("json", "check") for side in sides)
    print(f"{'input':<18} {'floor':>8}{heads}")
    for name in names:
        path = folder / f"{name}-{chunks}.sse"
        path.write_text(INPUTS[name](chunks), encoding="utf-8")
        for root in roots:  # bytecode written once, uncounted
            run(commands(path)["check"], root=root)
        floor = instructions(commands(path)["floor"])
        cells = ""
        for label in ("json", "check"):
            for root in roots:
                counted = instructions(commands(path)[label], root)
                cells += f" {counted / 1e6:>11.0f} (x{counted / floor:>4.2f})"
        print(f"{name:<18} {floor / 1e6:>8.0f}{cells}")


def table(rows: list[dict[str, Any]], clock: str) -> Iterator[str]:
    """One line per input: the floor's seconds, each command's seconds (x the floor), memory."""
    labels = ("json", "check", "json src", "check src", "pi-ai")
    head = "".join(f" {label:>15}" for label in labels)
    yield (
        f"{clock:<5} {'input':<18} {'MB':>5} {'chunks':>7} {'floor s':>8}{head}"
        f" {'peak MB json (x in)':>20} {'check':>13}"
    )
    for row in rows:
        floor = getattr(row["floor"], clock)
        cells = ""
        for label in labels:
            if label in row:
                seconds = getattr(row[label], clock)
                cells += f" {seconds:>7.3f} (x{seconds / floor:>4.2f})"
            else:
                cells += f" {'':>15}"
        memory = "".join(
            f" {row[key].rss / 1e6:>6.0f} (x{row[key].rss / row['bytes']:>4.1f})"
            for key in ("json", "check")
        )
        yield (
            f"{'':<5} {row['name']:<18} {row['bytes'] / 1e6:>5.1f} {row['chunks']:>7} "
            f"{floor:>8.3f}{cells}     {memory}"
        )


def profile(name: str, folder: Path, limit: int, chunks: int) -> None:
    """Where the in-process time of `trace --format json` goes on the input `name`."""
    sys.path.insert(0, str(ROOT))
    from webapp.cli import main as cli_main

    path = folder / f"{name}-profile.sse"
    path.write_text(INPUTS[name](chunks), encoding="utf-8")
    profiler = cProfile.Profile()
    with open(os.devnull, "w") as sink:
        saved, sys.stdout = sys.stdout, sink
        try:
            profiler.runcall(
                cli_main.main, ["trace", str(path), "--format", "json"], standalone_mode=False
            )
        finally:
            sys.stdout = saved
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(limit)


def main() -> None:
    """Generate the inputs, measure, print the tables (CPU, then wall)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure (best is kept)")
    parser.add_argument("--only", choices=tuple(INPUTS), action="append", help="inputs to run")
    parser.add_argument("--chunks", type=int, default=CHUNKS, help="chunks in a full-size input")
    parser.add_argument("--no-small", action="store_true", help="skip the 1/10 inputs")
    parser.add_argument("--peers-all", action="store_true", help="pi-ai on every input")
    parser.add_argument("--no-peers", action="store_true", help="no pi-ai")
    parser.add_argument("--profile", choices=tuple(INPUTS), help="profile one input instead")
    parser.add_argument("--against", type=Path, help="compare with the checkout at this path")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (valgrind), once each"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="streamviz-bench-") as name:
        folder = Path(name)
        if args.profile:
            profile(args.profile, folder, 30, args.chunks)
            return
        if args.instructions:
            other = args.against.resolve() if args.against else None
            count_instructions(args.only or list(INPUTS), folder, args.chunks, other)
            return
        if args.against:
            against(args.against.resolve(), args.only or list(INPUTS), folder, args.chunks,
                    args.repeat)  # fmt: skip
            return
        copy_sources(folder)
        warm_up(folder)
        rows = []
        sizes = (args.chunks,) if args.no_small else (args.chunks // 10, args.chunks)
        for input_name in args.only or INPUTS:
            peers = not args.no_peers and (args.peers_all or input_name in REAL)
            for chunks in sizes:
                rows.append(measure(input_name, chunks, folder, args.repeat, peers))
                print(f"measured {input_name} at {chunks:,} chunks", file=sys.stderr)
        print(f"best of {args.repeat}, {time.strftime('%Y-%m-%d %H:%M')}")
        for clock in ("cpu", "wall"):
            print("\n".join(table(rows, clock)))


if __name__ == "__main__":
    main()
