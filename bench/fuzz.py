"""Fuzz the readers, the redaction passes and the assembler (Hypothesis; atheris if installed).

The targets and their invariants are in tests/fuzzkit.py; tests/test_fuzz.py runs each one
briefly and derandomised in the test suite. This script runs them for long: round after round
of `--batch` examples per target with a new seed each round, until `--minutes` have passed or
every target has run `--examples`. It prints the examples run per target and each failure;
a failure's shrunk input is saved under `--out` (its repr, and the text or bytes as they were),
and the script exits 1 if there was any.

`--engine atheris` runs one target under atheris (coverage-guided, libFuzzer) through
Hypothesis's `fuzz_one_input`, if atheris is installed; it is not installed here, so the script
says so and runs Hypothesis only.

Run: `.venv/bin/python bench/fuzz.py [--minutes 10] [--examples N] [--target NAME ...]
[--batch 200] [--seed 0] [--out fuzz-failures] [--engine hypothesis|atheris]`.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from tests.fuzzkit import TARGETS, Target  # noqa: E402

SUPPRESSED = list(HealthCheck)


@dataclass
class Tally:
    """What one target ran and what broke."""

    examples: int = 0
    rounds: int = 0
    failure: str | None = None
    saved: list[Path] = field(default_factory=list)


def one_round(target: Target, examples: int, round_seed: int, tally: Tally) -> BaseException | None:
    """Run `examples` examples of the target; the shrunk failing input is kept in `tally`."""
    last: list[Any] = []

    def body(value: Any) -> None:
        tally.examples += 1
        try:
            target.check(value)
        except BaseException:
            last[:] = [value]
            raise

    test = seed(round_seed)(
        settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=SUPPRESSED,
            phases=[Phase.generate, Phase.target, Phase.shrink],
            print_blob=False,
        )(given(target.strategy)(body))
    )
    try:
        test()
    except Exception as error:  # any failure is a finding
        tally.failure = "".join(traceback.format_exception_only(error)).strip()
        if last:
            tally.saved = save(target.name, round_seed, last[0], error)
        return error
    return None


def save(name: str, round_seed: int, value: Any, error: BaseException) -> list[Path]:
    """Write the failing input: its repr with the error, and its text or bytes as they were."""
    folder = OUT[0]
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{name}-seed{round_seed}"
    report = stem.with_suffix(".txt")
    trace = "".join(traceback.format_exception(error))
    report.write_text(f"target: {name}\nseed: {round_seed}\ninput: {value!r}\n\n{trace}")
    paths = [report]
    raw = getattr(value, "text", value)
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if isinstance(raw, bytes):
        paths.append(stem.with_suffix(".input"))
        paths[-1].write_bytes(raw)
    return paths


OUT = [Path("fuzz-failures")]


def run_hypothesis(
    targets: list[Target], minutes: float | None, examples: int | None, batch: int, start: int
) -> dict[str, Tally]:
    """Rounds over the targets until the time or the example budget is spent."""
    tallies = {target.name: Tally() for target in targets}
    deadline = None if minutes is None else time.monotonic() + 60 * minutes
    round_number = 0
    while True:
        live = [t for t in targets if tallies[t.name].failure is None]
        live = [t for t in live if examples is None or tallies[t.name].examples < examples]
        if not live or (deadline is not None and time.monotonic() >= deadline):
            return tallies
        for target in live:
            tally = tallies[target.name]
            size = batch if examples is None else min(batch, examples - tally.examples)
            one_round(target, size, start + round_number, tally)
            tally.rounds += 1
            if deadline is not None and time.monotonic() >= deadline:
                break
        round_number += 1
        print(
            f"round {round_number}: "
            + ", ".join(f"{name} {tally.examples}" for name, tally in tallies.items()),
            flush=True,
        )


def run_atheris(target: Target) -> int:
    """Run one target under atheris (it never returns on its own: stop it with -runs or ^C)."""
    try:
        import atheris  # type: ignore[import-not-found]
    except ImportError:
        return -1
    test = settings(deadline=None, database=None, suppress_health_check=SUPPRESSED)(
        given(target.strategy)(target.check)
    )
    atheris.Setup([sys.argv[0], *ATHERIS_ARGS], test.hypothesis.fuzz_one_input)
    atheris.Fuzz()
    return 0


ATHERIS_ARGS: list[str] = []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=None, help="run for this long")
    parser.add_argument("--examples", type=int, default=None, help="examples per target")
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS])
    parser.add_argument("--batch", type=int, default=200, help="examples per round and target")
    parser.add_argument("--seed", type=int, default=0, help="the first round's seed")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--engine", choices=("hypothesis", "atheris"), default="hypothesis")
    args, rest = parser.parse_known_args()
    OUT[0] = args.out
    targets = [t for t in TARGETS if not args.target or t.name in args.target]
    if args.engine == "atheris":
        ATHERIS_ARGS[:] = rest
        if run_atheris(targets[0]) == 0:
            return 0
        print("fuzz: atheris is not available (not installed); running Hypothesis only")
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    minutes = args.minutes
    if minutes is None and args.examples is None:
        minutes = 1.0
    print(
        f"fuzz: targets {', '.join(t.name for t in targets)}; "
        + (f"{minutes:g} min" if minutes is not None else f"{args.examples} examples each"),
        flush=True,
    )
    started = time.monotonic()
    tallies = run_hypothesis(targets, minutes, args.examples, args.batch, args.seed)
    elapsed = time.monotonic() - started
    failures = 0
    for name, tally in tallies.items():
        status = "ok" if tally.failure is None else "FAILED"
        print(f"{name}: {tally.examples} examples in {tally.rounds} rounds, {status}")
        if tally.failure is not None:
            failures += 1
            print(f"  {tally.failure}")
            for path in tally.saved:
                print(f"  saved: {path}")
    total = sum(tally.examples for tally in tallies.values())
    print(f"summary: {total} examples in {elapsed:.0f} s, {failures} failing target(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
