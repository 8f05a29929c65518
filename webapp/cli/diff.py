"""`streamviz diff A B`: two streams side by side, by call and by value (`webapp.triage.diff`).

Each side is a file (or '-' for standard input, read once even when both sides name it). A
HAR file's entry is chosen with `--har-entry-a N` / `--har-entry-b N`, or by writing the side
as `FILE#N` (N its 1-based place in log.entries) when no file has that name itself: `streamviz
diff capture.har#2 capture.har#5` compares two entries of one file (`streamviz diff -- -#1 -#2`
two entries of a HAR on standard input). Either side may be a non-stream answer (one
`chat.completion` JSON, or a HAR entry or cassette interaction holding one): its calls are
those of its `message.tool_calls`, held to what the stream means and to what each client
received (`webapp.triage.diff.Twin`). Exit 0 when the streams mean the same calls, 1 when
they differ, 2 on unusable input.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from webapp.cli.inputs import InputError, output_format
from webapp.cli.output import write_json, write_text
from webapp.core.readers import FORMATS, decode, read
from webapp.core.records import ReaderError
from webapp.lenses.results import LensResult
from webapp.triage.diff import IDS_MODES, IdsMode
from webapp.tuning import paused_gc

F = TypeVar("F", bound=Callable[..., Any])
_ENTRY = re.compile(r"(?s)(.+)#([0-9]{1,9})")


@dataclass(frozen=True, slots=True)
class Named:
    """One side as the command line names it: the file, and the HAR entry asked for."""

    file: str
    har_entry: int | None


def named(given: str, flag: int | None, which: str) -> Named:
    """`FILE` or `FILE#N` (when no file is called `FILE#N`), with `--har-entry-X`."""
    file, entry = given, None
    found = _ENTRY.fullmatch(given)
    if found is not None and given != "-" and not Path(given).exists():
        file, entry = found.group(1), int(found.group(2))
        if entry < 1:
            raise click.BadParameter(f"{given}: a HAR entry is numbered from 1", param_hint=which)
    if flag is not None and entry is not None and flag != entry:
        raise click.UsageError(f"{given} names entry {entry} but --har-entry-{which} says {flag}")
    return Named(file, flag if flag is not None else entry)


class Texts:
    """The decoded text of each file named, read once (standard input can be read only once)."""

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def text(self, file: str) -> str:
        if file not in self._texts:
            try:
                data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
            except OSError as error:
                raise InputError(f"cannot read {file}: {error.strerror or error}") from None
            self._texts[file] = decode(data)
        return self._texts[file]


def _entry_option(which: str) -> Callable[[F], F]:
    return click.option(
        f"--har-entry-{which}",
        f"har_entry_{which}",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help=f"With a HAR file as {which.upper()}: read entry N (1-based; or write "
        f"{which.upper()} as FILE#N). Default: the first event-stream entry.",
    )


@click.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@_entry_option("a")
@_entry_option("b")
@click.option(
    "--input-format",
    type=click.Choice(("auto", *FORMATS)),
    default="auto",
    show_default=True,
    help="How to read both files; auto detects each.",
)
@click.option(
    "--choice",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="K",
    help="The choice index to follow in n > 1 streams.",
)
@click.option(
    "--ids",
    type=click.Choice(IDS_MODES),
    default="auto",
    show_default=True,
    help="Compare call ids: auto compares them unless both streams carry ids and share none "
    "(two responses, whose ids differ by nature).",
)
@click.option(
    "--hop",
    is_flag=True,
    help="A is what a gateway received from the provider and B what it sent on (the inner "
    "and outer captures of one exchange): also say which quirks the gateway introduced and "
    "removed, and whether it changed what the stream means.",
)
@click.option(
    "--clients",
    "run_clients",
    is_flag=True,
    help="Also run the client libraries on both streams and compare their grades (seconds).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="With --clients: seconds each client library may take.",
)
@output_format(
    'text: each call side by side, then the streams. json: {"a": {...}, "b": {...}, '
    '"calls": [{"a", "b", "same", "differences"}], "same", ...}.'
)
def diff(
    a: str,
    b: str,
    har_entry_a: int | None,
    har_entry_b: int | None,
    input_format: str,
    choice: int,
    ids: str,
    hop: bool,
    run_clients: bool,
    timeout: float,
    output: str,
) -> None:
    """Compare the tool calls two streams mean, call by call and value by value.

    Calls are the intended reading of each stream (the adr-0019 assembly when a stream admits
    more than one), aligned in order of opening and matched by name (and id where both have
    one). Each matched call's name, id, arguments and what the application receives are
    compared as JSON, key by key ('arguments.city: "Paris" vs "Lyon"'), with the first step
    where the two argument texts part. Quirks, anomalies, finish reasons, chunk counts,
    grades and timing are listed too, but two streams that mean the same calls are the same
    however they were cut into chunks. Either side may be a non-stream answer (one
    chat.completion JSON, as the API answers "stream": false): the diff then says whether it
    agrees with what the stream means and with what each client received. Exit 0: the same
    calls; 1: they differ; 2: unusable input. With --hop, A is a gateway's input and B its
    output: the JSON gains "introduced", "removed" and "hop", the sentence that says what the
    gateway did.
    """
    sides = (named(a, har_entry_a, "a"), named(b, har_entry_b, "b"))
    with paused_gc():
        same = _diff(sides, input_format, choice, cast(IdsMode, ids), run_clients, timeout,
                     output, hop)  # fmt: skip
    sys.exit(0 if same else 1)


def _diff(
    sides: tuple[Named, Named],
    input_format: str,
    choice: int,
    ids: IdsMode,
    run_clients: bool,
    timeout: float,
    output: str,
    hop: bool = False,
) -> bool:
    from webapp.cli.diffview import diff_lines
    from webapp.core.contract.answer import answer_in
    from webapp.triage.diff import diff as diff_sides
    from webapp.triage.sides import answer_side, side

    texts = Texts()
    made = []
    for given in sides:
        try:
            result = read(texts.text(given.file), input_format, given.har_entry)
            answer = answer_in(result, choice)  # a non-stream answer: its calls, no lenses
        except ReaderError as error:
            raise InputError(f"{'stdin' if given.file == '-' else given.file}: {error}") from None
        lenses: tuple[LensResult, ...] = ()
        if run_clients and answer is None:
            from webapp.lenses import client_columns  # subprocesses: only when asked for

            lenses = client_columns(result.records, timeout=timeout)
        label = given.file if given.har_entry is None else f"{given.file}#{given.har_entry}"
        if answer is not None:
            made.append(answer_side(answer, result, label=label, choice=choice,
                                    har_entry=given.har_entry))  # fmt: skip
            continue
        made.append(side(result, label=label, choice=choice, lenses=lenses,
                         har_entry=given.har_entry))  # fmt: skip
    found = diff_sides(made[0], made[1], ids, "" if hop else None)
    if output == "json":
        write_json(found.to_json())
    else:
        write_text(lambda paint: diff_lines(found, paint))
    return found.same
