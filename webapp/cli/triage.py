"""Commands for triaging a stream: minimise it, report it in Markdown, make it a fixture.

`check --expect` (a fixture's replay) is an option of `check` (`webapp.cli.trace`); its work
is done here.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import click

from webapp.cli.inputs import Input, InputError, options
from webapp.cli.output import emit
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import FORMATS, read
from webapp.core.records import ReadResult
from webapp.core.rules import POLICIES
from webapp.core.words import count
from webapp.triage.expect import first_difference, not_a_trace
from webapp.triage.minimise import Minimised, Progress, PropertyDoesNotHold, minimise
from webapp.triage.predicates import FINGERPRINT, Until, parse_until
from webapp.triage.pseudonym import collect
from webapp.triage.pseudonym import pseudonymise as pseudonymised
from webapp.triage.report import Links, cell, render
from webapp.triage.repro import sse

if TYPE_CHECKING:
    from webapp.core.trace import Trace
    from webapp.triage.verdict import Verdict

F = TypeVar("F", bound=Callable[..., Any])
_UNTIL_HELP = (
    "The property to keep: fingerprint (the quirks, the anomalies with their blocks' names, and "
    "the grades: the default), anomaly:CODE, differs (the policies disagree) or rule:RULE."
)
_LENSES_HELP = (
    "Put the client lenses' grades in the fingerprint too. Slow: every candidate runs the "
    "five client libraries in subprocesses (seconds each), so a minimisation takes minutes; "
    "without it the fingerprint holds this build's two policies' grades only."
)
_PSEUDONYM_HELP = (
    "Replace every tool-call id and response id by a token (call_1, chatcmpl-1, ...; the same "
    "id always by the same token) so the repro can be pasted publicly; names and arguments stay."
)
_SHRINK_HELP = (
    "Also shrink argument text character by character: a smaller stream, but its text is "
    'rewritten ({"x": 7} may become {"":7}) and may tell another story. By default only whole '
    "chunks, fragments and JSON members go."
)


def _input_options(command: F) -> F:
    """FILE, --policy, --input-format and --har-entry, as the other stream commands have them."""
    decorators = [
        click.argument("file", metavar="FILE|-"),
        click.option("--policy", type=click.Choice(POLICIES), default="adr-0019",
                     show_default=True, help="The policy the property and report use."),
        click.option("--input-format", type=click.Choice(("auto", *FORMATS)), default="auto",
                     show_default=True, help="How to read FILE; auto detects it."),
        click.option("--har-entry", type=click.IntRange(min=1), default=None, metavar="N",
                     help="With a HAR file: read entry N."),
    ]  # fmt: skip
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def _until(
    text: str | None, chosen: Options, source: ReadResult, with_lenses: bool = False
) -> Until | None:
    if text is None:
        return None
    if with_lenses and text != FINGERPRINT:
        raise click.BadParameter("--with-lenses goes with the fingerprint only",
                                 param_hint="--with-lenses")  # fmt: skip
    try:
        return parse_until(text, chosen, source.records, None if with_lenses else ())
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--until") from None


def _speaker() -> str:
    """Who speaks in the minimiser's messages: the spelling the command was called by."""
    context = click.get_current_context(silent=True)
    return "minimize" if context is not None and context.info_name == "minimize" else "minimise"


def _progress(found: Progress) -> None:
    click.echo(f"{_speaker()}: {found.phase:<9} {count(found.records, 'record')} "
               f"after {count(found.tests, 'test')}", err=True)  # fmt: skip


def _minimised(
    source: ReadResult,
    until: Until,
    max_seconds: float | None,
    chosen: Options,
    shrink_text: bool = False,
) -> Minimised:
    if until.nothing:
        click.echo(f"Error: nothing to minimise: {until.nothing} (--until differs or "
                   "rule:RULE keeps something else)", err=True)  # fmt: skip
        sys.exit(1)
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    try:
        result = minimise(source.records, until.predicate, deadline, _progress, options=chosen,
                          shrink_text=shrink_text)  # fmt: skip
    except PropertyDoesNotHold:
        click.echo(f"Error: the input does not show {until.words} (--until {until.text}): "
                   "nothing to minimise", err=True)  # fmt: skip
        sys.exit(1)
    if result.timed_out:
        click.echo(f"{_speaker()}: stopped at --max-seconds {max_seconds:g}: the smallest stream "
                   "found so far follows", err=True)  # fmt: skip
    return result


@click.command("minimise")
@_input_options
@click.option("--until", "until_text", default=FINGERPRINT, show_default=True,
              metavar="PROPERTY", help=_UNTIL_HELP)  # fmt: skip
@click.option("--with-lenses", is_flag=True, help=_LENSES_HELP)
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="N", help="Stop after N seconds with the smallest stream found.")  # fmt: skip
@click.option("--shrink-text", is_flag=True, help=_SHRINK_HELP)
@click.option("--redact", is_flag=True, help="Mask secrets in the input first.")
@click.option("--pseudonymise", "--pseudonymize", "pseudonymise", is_flag=True,
              help=_PSEUDONYM_HELP)  # fmt: skip
def minimise_command(
    file: str,
    policy: str,
    input_format: str,
    har_entry: int | None,
    until_text: str,
    with_lenses: bool,
    max_seconds: float | None,
    shrink_text: bool,
    redact: bool,
    pseudonymise: bool,
) -> None:
    """Print the smallest stream found that still shows --until, as SSE; progress on stderr.

    By default a candidate is kept only if its fingerprint is the input's: the same quirk
    codes, the same anomalies on blocks of the same names, and the same grades (this build's
    two policies; the client lenses too with --with-lenses, slowly). Delta debugging over
    chunks, then over the fragments in each chunk, then over the members of each call's JSON
    arguments; only whole pieces go, so each call keeps its name and argument text a reader
    recognises. Exit 1, printing nothing, when the input does not show the property, or when
    its fingerprint holds no bug (no quirk, no anomaly, every column intact).
    --pseudonymise prints the repro a report's "Where to file" quotes: its ids replaced by
    call_1, chatcmpl-1, ... (the same id by the same token), so it can be pasted publicly and
    still has the input's fingerprint. `minimize` is the same command.
    """
    chosen = options(policy, None, None, 0)
    source = Input(file, input_format, har_entry, redact).load()
    until = _until(until_text, chosen, source, with_lenses)
    assert until is not None
    result = _minimised(source, until, max_seconds, chosen, shrink_text)
    tokens = collect(source.records)  # numbered over the input, as the report's repro
    found = pseudonymised(result.records, tokens) if pseudonymise else result.records
    emit([sse(found).encode("utf-8", "backslashreplace")])


@click.command()
@_input_options
@click.option(
    "--public-url",
    metavar="URL",
    default=None,
    help="The stream's page on a streamviz server (BASE/s/ID): steps become links.",
)
@click.option("--redact", is_flag=True, help="Mask secrets in the input first.")  # fmt: skip
@click.option(
    "--clients", "with_clients", is_flag=True,
    help="Also run the client libraries (streamviz clients): their grades and matrix.",
)  # fmt: skip
def report(
    file: str,
    policy: str,
    input_format: str,
    har_entry: int | None,
    public_url: str | None,
    redact: bool,
    with_clients: bool,
) -> None:
    """Print a Markdown report: input, verdict, anomalies, offending chunks, final calls."""
    links = _links(public_url, har_entry)
    chosen = options(policy, None, None, 0)
    from webapp.cli.trace import unended_trace

    given = Input(file, input_format, har_entry, redact)
    source = given.load()
    other = "exact-key" if policy == "adr-0019" else "adr-0019"
    trace = unended_trace(given, assemble(source.records, chosen))  # a cut end is not judged
    text = render(
        source,
        trace,
        assemble(source.records, options(other, None, None, 0), contract=False),
        title=f"streamviz report: {'stdin' if file == '-' else Path(file).name}",
        links=links,
        judged=_judged(source, trace, with_clients),
    )
    emit([text.encode("utf-8", "backslashreplace")])


def _judged(source: ReadResult, trace: Trace, with_clients: bool) -> Verdict:
    """The clients run and graded (`--clients`), or this build's two policies alone."""
    from webapp.triage.verdict import clients_verdict, policies_verdict  # lenses when asked

    contract, model = trace.contract, source.model
    if with_clients:
        return clients_verdict(source.records, contract=contract, model=model)
    return policies_verdict(source.records, contract=contract, model=model)


def _links(public_url: str | None, har_entry: int | None = None) -> Links | None:
    if public_url is None:
        return None
    parts = urlsplit(public_url)
    head, marker, stream_id = parts.path.rstrip("/").rpartition("/s/")
    if parts.scheme not in ("http", "https") or not parts.netloc or not marker or not stream_id:
        raise click.BadParameter(
            f"{public_url!r}: give the stream's page, e.g. https://streamviz.example/s/abc123",
            param_hint="--public-url",
        )
    return Links(f"{parts.scheme}://{parts.netloc}{head}", stream_id, har_entry)


@click.command()
@_input_options
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder to write (created if missing).",
)
@click.option(
    "--until",
    "until_text",
    default=None,
    metavar="PROPERTY",
    help=_UNTIL_HELP + " Minimise the stream first.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="N",
    help="With --until: stop minimising after N seconds.",
)
@click.option("--redact", is_flag=True, hidden=True, help="Always on for fixtures.")  # fmt: skip
def fixture(
    file: str,
    policy: str,
    input_format: str,
    har_entry: int | None,
    out: Path,
    until_text: str | None,
    max_seconds: float | None,
    redact: bool,
) -> None:
    """Write DIR/stream.sse (redacted; minimised with --until), DIR/expected.POLICY.json for
    both policies, and DIR/README.md saying how to replay it with `streamviz check --expect`."""
    chosen = options(policy, None, None, 0)
    source = Input(file, input_format, har_entry, True).load()
    until = _until(until_text, chosen, source)
    found = None if until is None else _minimised(source, until, max_seconds, chosen)
    records = source.records if found is None else found.records
    text = sse(records)
    replay = read(text, "sse")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "stream.sse").write_text(text, encoding="utf-8", errors="backslashreplace")
        for name in POLICIES:
            document = assemble(replay.records, options(name, None, None, 0)).to_json()
            (out / f"expected.{name}.json").write_bytes(dumps(document, indent=True) + b"\n")
        (out / "README.md").write_text(_readme(file, until), encoding="utf-8")
    except OSError as error:
        raise InputError(f"cannot write {out}: {error.strerror or error}") from None
    click.echo(f"wrote {out}/stream.sse ({count(len(replay.records), 'record')}), "
               f"expected.adr-0019.json, expected.exact-key.json, README.md", err=True)  # fmt: skip


def _readme(file: str, until: Until | None) -> str:
    source = "stdin" if file == "-" else cell(Path(file).name)  # inert Markdown, like the web's
    how = f", minimised until {cell(until.text)}" if until else ""
    return (
        f"Regression fixture from {source}{how}, redacted. Replay: "
        "`streamviz check stream.sse --expect expected.adr-0019.json` and "
        "`streamviz check stream.sse --policy exact-key --expect expected.exact-key.json` "
        "(exit 0: unchanged, 1: the trace changed).\n"
    )


def check_expected(source: ReadResult, chosen: Options, expect: str) -> int:
    """`check --expect`: 0 when the trace equals the expected one, else 1 with the first diff."""
    try:
        expected = json.loads(Path(expect).read_bytes())
    except OSError as error:
        raise InputError(f"cannot read {expect}: {error.strerror or error}") from None
    except ValueError as error:
        raise InputError(f"{expect}: not JSON ({error}): give a trace document") from None
    complaint = not_a_trace(expected)
    if complaint is not None:
        raise InputError(f"{expect}: {complaint}")
    actual = assemble(source.records, chosen).to_json()
    difference = first_difference(expected, actual)
    if difference is None:
        click.echo(f"same as {expect}: {count(len(actual['steps']), 'step')}, "
                   f"{count(len(actual['blocks']), 'block')}")  # fmt: skip
        return 0
    click.echo(f"differs from {expect}: {difference.describe()}")
    if difference.path == "policy":
        click.echo(f"  (the expected trace is under {expected['policy']}: "
                   f"pass --policy {expected['policy']})")  # fmt: skip
    return 1
