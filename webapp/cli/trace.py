"""`trace`, `check` and `compare`: one stream read, assembled and shown, as text or JSON.

Each command's work is in a function of its own, so that the records and the trace are freed
when it returns while the collector is still paused (`webapp.tuning.paused_gc`): re-enabled
with them alive, its first pass would walk every object made during the pause.
"""

from __future__ import annotations

import itertools
import os
import sys

import click

from webapp.cli.inputs import Input, Stream, stream_options
from webapp.cli.output import emit, write, write_text
from webapp.cli.render import check_lines, trace_lines
from webapp.cli.report import check_document
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.trace import Trace
from webapp.core.tracejson import trace_document_stream
from webapp.tuning import ending, paused_gc


@click.command()
@stream_options(with_policy=True)
def trace(stream: Stream) -> None:
    """Show every step: the rule each fragment took, the block it landed on, the events.

    Then the final blocks, the anomalies and a one-line summary. --format json prints the
    schema-1 trace with an "input" key describing what was read, and a "timing" key when the
    input carries timing (a cassette, a HAR entry's timings, the .timing.json that
    `streamviz record` writes beside a stream).
    """
    with paused_gc():
        _trace(stream.input, stream.options, stream.output)
    ending()


@click.command()
@stream_options(with_policy=True)
@click.option("--strict", is_flag=True,
              help="Exit 1 on any anomaly, warnings included, on any quirk (a place where "
              "the provider's stream departs from the contract), and when the stream's end is "
              "not in the file.")  # fmt: skip
@click.option("--expect", type=click.Path(dir_okay=False), metavar="TRACE.json",
              help="Compare with this trace (a fixture's): exit 1 when it changed.")  # fmt: skip
def check(stream: Stream, strict: bool, expect: str | None) -> None:
    """Print the anomalies (severity, code, step, line, message), then the quirks and the
    calls the stream means; exit 1 on an error.

    Meant for CI on recorded streams: exit 0 means no error-level anomaly (with --strict: no
    anomaly and no quirk at all, and the stream's end in the file), 1 at least one, 2 the
    input could not be read. Quirks alone never change the exit code without --strict; nor
    does a file that stops before the stream's end (nothing of that end is judged, so
    nothing is proven against it), which --strict fails: it cannot say the stream is clean.
    """
    if expect is not None:
        from webapp.cli.triage import check_expected  # a fixture's replay: triage's work

        sys.exit(check_expected(stream.input.load(), stream.options, expect))
    with paused_gc():
        severities = _check(stream.input, stream.options, stream.output)
    ending()
    # "quirk" and "unended" count only with --strict
    if "error" in severities or (strict and severities):
        sys.exit(1)


@click.command()
@stream_options(with_policy=False)
def compare(stream: Stream) -> None:
    """Show where policies exact-key and adr-0019 disagree on the same stream.

    The summary, then each differing step (rules and blocks on both sides, with the reasons),
    then the final blocks of each side.
    """
    with paused_gc():
        _compare(stream.input, stream.options, stream.output)
    ending()


def _trace(given: Input, chosen: Options, output: str) -> None:
    source = given.load()
    timing = None
    if output == "json":
        from webapp.cli.timing import input_timing  # the records' lines, before they are consumed
        from webapp.core.readers.timing import with_timing

        timing = input_timing(given.file, source)
    # JSON needs only the records' count: each payload's text goes once it is assembled.
    result = unended_trace(given, assemble(source.records, chosen, consume=output == "json"))
    if output == "json":
        document = with_timing(trace_document_stream(result, source), timing)
        emit(itertools.chain(document, [b"\n"]))
    else:
        write_text(lambda paint: trace_lines(result, source, paint))


def _check(given: Input, chosen: Options, output: str) -> set[str]:
    source = given.load()
    result = unended_trace(given, assemble(source.records, chosen, consume=True))  # count shown
    write(
        output,
        lambda: check_document(result, source),
        lambda paint: check_lines(result, source, paint),
    )
    found: set[str] = {anomaly.severity for anomaly in result.anomalies}
    contract = result.contract
    if contract is not None and contract.quirks:
        found.add("quirk")
    if contract is not None and contract.end is not None:  # the end is not in the file
        found.add("unended")
    return found


def unended_trace(given: Input, trace: Trace) -> Trace:
    """The trace, judged without its end (`Trace.without_end`) when its bytes do not hold it:
    a recording whose `.timing.json` says it was cut, or a file (or standard input) with no
    such sidecar that shows no end (`unended`: it may be a log's first lines)."""
    recorded, end = recorded_end(given.file)
    return trace.as_recorded(end, recorded=recorded)


def recorded_end(file: str) -> tuple[bool, str]:
    """Whether FILE is a recording (a `.timing.json` beside it), and why its bytes stop
    before the stream's end when the sidecar says so ("" otherwise)."""
    beside = os.path.splitext(file)[0] + ".timing.json"  # `timing.sidecar`, cheaply:
    if file == "-" or not os.path.isfile(beside):  # `check`'s start loads no pathlib
        return False, ""
    from webapp.cli.timing import missing_end

    return True, missing_end(file)


def _compare(given: Input, chosen: Options, output: str) -> None:
    from webapp.cli.compareview import compare_lines
    from webapp.cli.report import compare_document
    from webapp.triage.compare import compare as compare_policies

    source = given.load()
    recorded, end = recorded_end(given.file)
    result = compare_policies(source.records, chosen, end=end, recorded=recorded)
    write(
        output,
        lambda: compare_document(result, source),
        lambda paint: compare_lines(result, source, paint),
    )
