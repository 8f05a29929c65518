"""The `streamviz` command line: trace, check and compare recorded streams; serve the web app.

Exit codes: 0 fine; 1 `check` found anomalies; 2 unusable input or arguments, with the
message on stderr; 141 the reader of stdout went away (`| head`), as for SIGPIPE.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

import click
from rich.console import Console

from webapp.cli.compareview import compare_lines
from webapp.cli.render import Painter, check_lines, trace_lines
from webapp.cli.report import check_document, compare_document, dumps
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import FORMATS, decode, read
from webapp.core.records import ReaderError, ReadResult
from webapp.core.rules import POLICIES, Policy
from webapp.core.trace import AssemblyPath
from webapp.core.tracejson import trace_document_stream
from webapp.triage.compare import compare as compare_policies
from webapp.tuning import paused_gc

F = TypeVar("F", bound=Callable[..., Any])
_PATHS = ("client", "server-tools")


class InputError(click.ClickException):
    """Unusable input: printed as "Error: ..." on stderr, exit code 2."""

    exit_code = 2


def _server_tools(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(name.strip() for name in value.split(","))
    if not any(names) or not all(names):
        raise click.BadParameter("give comma-separated names, e.g. 'web_search,openrouter:*'")
    for name in names:
        if "*" in name[:-1]:
            raise click.BadParameter(f"{name!r}: '*' may only end a pattern, as in 'web_*'")
    return names


def _stream_options(*, with_policy: bool) -> Callable[[F], F]:
    """The options every stream command shares (`--policy` only where one policy is shown)."""

    def decorate(command: F) -> F:
        decorators = [
            click.argument("file", metavar="FILE|-"),
            click.option(
                "--path",
                type=click.Choice(_PATHS),
                default=None,
                help="Assembly path. Default: client, or server-tools when --server-tools "
                "is given.",
            ),
            click.option(
                "--server-tools",
                "server_tools",
                metavar="NAMES",
                callback=_server_tools,
                help="Comma-separated server-tool names or 'prefix*' patterns. Implies "
                "--path server-tools; combining it with --path client is an error.",
            ),
            click.option(
                "--choice",
                type=click.IntRange(min=0),
                default=0,
                show_default=True,
                metavar="K",
                help="The choice index to follow in an n > 1 stream.",
            ),
            click.option(
                "--input-format",
                type=click.Choice(("auto", *FORMATS)),
                default="auto",
                show_default=True,
                help="How to read FILE; auto detects it.",
            ),
            click.option(
                "--har-entry",
                "har_entry",
                type=click.IntRange(min=1),
                default=None,
                metavar="N",
                help="With a HAR file: read entry N (its 1-based place in log.entries). "
                "Default: the first event-stream entry.",
            ),
            click.option(
                "--format",
                "output",
                type=click.Choice(("text", "json")),
                default="text",
                show_default=True,
                help="text: a table, coloured on a terminal, plain when piped. json: one "
                "JSON document.",
            ),
            click.option("--redact", is_flag=True, help="Mask secrets in the input first."),
        ]
        if with_policy:
            decorators.insert(
                1,
                click.option(
                    "--policy",
                    type=click.Choice(POLICIES),
                    default="adr-0019",
                    show_default=True,
                    help="adr-0019: with continuation and drop (the decision); exact-key: "
                    "upstream before it.",
                ),
            )
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamviz")
def main() -> None:
    """See how a chat-completions stream's delta.tool_calls fragments assemble into calls.

    FILE is a recorded stream (raw SSE, a curl -i dump, a JSON array, JSON Lines, a HAR file,
    or printed openai-python chunks), detected unless --input-format names it; '-' reads
    standard input. Exit codes: 0 fine, 1 errors found (check only; --strict: any anomaly),
    2 unusable input or arguments, 141 output cut short (| head).
    """


@main.command(short_help="Every step: rule, block and events per fragment; then the blocks.")
@_stream_options(with_policy=True)
def trace(
    file: str,
    policy: str,
    path: str | None,
    server_tools: tuple[str, ...] | None,
    choice: int,
    input_format: str,
    har_entry: int | None,
    output: str,
    redact: bool,
) -> None:
    """Show every step: the rule each fragment took, the block it landed on, the events.

    Then the final blocks, the anomalies and a one-line summary. --format json prints the
    schema-1 trace with an "input" key describing what was read.
    """
    chosen = options(policy, path, server_tools, choice)
    with paused_gc():
        _trace(Input(file, input_format, har_entry, redact), chosen, output)


@main.command(short_help="List the anomalies; exit 1 on any error (for CI).")
@_stream_options(with_policy=True)
@click.option("--strict", is_flag=True, help="Exit 1 on any anomaly, warnings included.")
@click.option("--expect", type=click.Path(dir_okay=False, path_type=Path), metavar="TRACE.json",
              help="Compare with this trace (a fixture's): exit 1 when it changed.")  # fmt: skip
def check(
    file: str,
    policy: str,
    path: str | None,
    server_tools: tuple[str, ...] | None,
    choice: int,
    input_format: str,
    har_entry: int | None,
    output: str,
    redact: bool,
    strict: bool,
    expect: Path | None,
) -> None:
    """Print the anomalies (severity, code, step, line, message); exit 1 on an error.

    Meant for CI on recorded streams: exit 0 means no error-level anomaly (with --strict: no
    anomaly at all), 1 at least one, 2 the input could not be read.
    """
    chosen = options(policy, path, server_tools, choice)
    if expect is not None:
        sys.exit(triage.check_expected(Input(file, input_format, har_entry, redact).load(),
                                       chosen, expect))  # fmt: skip
    with paused_gc():
        severities = _check(Input(file, input_format, har_entry, redact), chosen, output)
    if "error" in severities or (strict and severities):
        sys.exit(1)


@main.command(short_help="Where policies exact-key and adr-0019 disagree on a stream.")
@_stream_options(with_policy=False)
def compare(
    file: str,
    path: str | None,
    server_tools: tuple[str, ...] | None,
    choice: int,
    input_format: str,
    har_entry: int | None,
    output: str,
    redact: bool,
) -> None:
    """Show where policies exact-key and adr-0019 disagree on the same stream.

    The summary, then each differing step (rules and blocks on both sides, with the reasons),
    then the final blocks of each side.
    """
    chosen = options("adr-0019", path, server_tools, choice)
    with paused_gc():
        _compare(Input(file, input_format, har_entry, redact), chosen, output)


@dataclass(frozen=True, slots=True)
class Input:
    """The input a command was given: FILE, --input-format, --har-entry."""

    file: str
    input_format: str
    har_entry: int | None
    redact: bool = False

    def load(self) -> ReadResult:
        """Read it (exit 2 with a message when it cannot be read)."""
        return load(self.file, self.input_format, self.har_entry, self.redact)


# The work of each command, in functions of their own so that the records and the trace are
# freed when they return, while the collector is still paused: re-enabled with them alive, its
# first pass would walk every object made during the pause (0.2 s at 100,000 steps).


def _trace(given: Input, chosen: Options, output: str) -> None:
    source = given.load()
    # JSON needs only the records' count: each payload's text goes once it is assembled.
    result = assemble(source.records, chosen, consume=output == "json")
    if output == "json":
        _emit(itertools.chain(trace_document_stream(result, source), [b"\n"]))
    else:
        write_text(lambda paint: trace_lines(result, source, paint))


def _check(given: Input, chosen: Options, output: str) -> set[str]:
    source = given.load()
    result = assemble(source.records, chosen, consume=True)  # only their count is shown
    _output(
        output,
        lambda: check_document(result, source),
        lambda paint: check_lines(result, source, paint),
    )
    return {anomaly.severity for anomaly in result.anomalies}


def _compare(given: Input, chosen: Options, output: str) -> None:
    source = given.load()
    result = compare_policies(source.records, chosen)
    _output(
        output,
        lambda: compare_document(result, source),
        lambda paint: compare_lines(result, source, paint),
    )


def _output(
    output: str,
    document: Callable[[], dict[str, Any]],
    lines: Callable[[Painter], Iterable[str]],
) -> None:
    """Write the JSON document or the text view, as `--format` asks."""
    if output == "json":
        write_json(document())
    else:
        write_text(lines)


@main.command(short_help="What each client library hands the application for a stream.")
@click.argument("file", metavar="FILE|-")
@click.option(
    "--input-format",
    type=click.Choice(("auto", *FORMATS)),
    default="auto",
    show_default=True,
    help="How to read FILE; auto detects it.",
)
@click.option(
    "--format",
    "output",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help='text: one block per call, every client\'s cell. json: {"clients": [...], ...}.',
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds each client library may take.",
)
def clients(file: str, input_format: str, output: str, timeout: float) -> None:
    """Run the published client libraries on FILE and show what each hands the application.

    pi-ai, openai-python, LangChain, the Vercel AI SDK and LiteLLM each run, unmodified and in
    a subprocess of their own, on the stream; adr-0019 and exact-key are two more columns.
    A library that is not installed is shown as unavailable with the command that installs
    them all (make clients).
    """
    from webapp.cli.clientsview import clients_lines  # the lenses load only for this command
    from webapp.lenses import clients_view

    source = load(file, input_format)
    matrix = clients_view(source.records, timeout=timeout)
    if output == "json":
        write_json(matrix.to_json())
    else:
        write_text(lambda paint: clients_lines(matrix, source, paint))


def load(
    file: str, input_format: str, har_entry: int | None = None, redact: bool = False
) -> ReadResult:
    """Read FILE (or stdin for '-') and parse it into records; unusable input exits 2."""
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as error:
        raise InputError(f"cannot read {file}: {error.strerror or error}") from None
    try:
        text = decode(data)
        del data  # the bytes are not needed once decoded: a long stream's peak is lower
        return read(triage.scrubbed(text) if redact else text, input_format, har_entry)
    except ReaderError as error:
        raise InputError(f"{'stdin' if file == '-' else file}: {error}") from None


def options(
    policy: str, path: str | None, server_tools: tuple[str, ...] | None, choice: int
) -> Options:
    """Assembly options from the command line; --server-tools implies the server-tools path."""
    if server_tools is not None and path == "client":
        raise click.UsageError("--server-tools needs --path server-tools (or no --path at all)")
    chosen: AssemblyPath = "server-tools" if path == "server-tools" or server_tools else "client"
    return Options(cast(Policy, policy), chosen, server_tools or (), choice)


def write_json(document: Any) -> None:
    """One JSON document and a newline on stdout."""
    _emit([dumps(document), b"\n"])


def write_text(lines: Callable[[Painter], Iterable[str]], batch: int = 2048) -> None:
    """Lines on stdout, coloured when it is a terminal; what cannot be encoded is escaped."""
    paint = Painter(Console(file=sys.stdout))
    _emit(_encoded(lines(paint), batch))


def _encoded(lines: Iterable[str], batch: int) -> Iterator[bytes]:
    pending: list[str] = []
    for line in lines:
        pending.append(line)
        if len(pending) >= batch:
            yield ("\n".join(pending) + "\n").encode("utf-8", "backslashreplace")
            pending.clear()
    if pending:
        yield ("\n".join(pending) + "\n").encode("utf-8", "backslashreplace")


def _emit(chunks: Iterable[bytes]) -> None:
    """Write to stdout; when the reader has gone (`| head`), stop quietly with status 141,
    the shell's for SIGPIPE, so that a cut-short `check` is not taken for "anomalies"."""
    stream: BinaryIO = sys.stdout.buffer
    try:
        for chunk in chunks:
            stream.write(chunk)
        stream.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


from webapp.cli import triage  # noqa: E402  (minimize, report, fixture; needs main, Input above)
from webapp.cli.serve import serve  # noqa: E402  (registers on `main`; needs InputError above)
from webapp.cli.streams import delete  # noqa: E402  (the operator's delete; uses serve's helper)

main.add_command(serve)
main.add_command(delete)
