"""`clients`: what each published client library hands the application for a stream."""

from __future__ import annotations

import click

from webapp.cli.clientsview import clients_lines
from webapp.cli.inputs import HAR_ENTRY, INPUT_FORMAT, load, output_format
from webapp.cli.output import write_json, write_text
from webapp.core.tracejson import input_json
from webapp.triage.verdict import clients_verdict


@click.command()
@click.argument("file", metavar="FILE|-")
@INPUT_FORMAT
@HAR_ENTRY
@output_format(
    'text: the grades, the verdict, then one block per call. json: {"grades": [...], '
    '"clients": [...], "verdict", ...}, what the API returns.'
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds each client library may take.",
)
def clients(
    file: str, input_format: str, har_entry: int | None, output: str, timeout: float
) -> None:
    """Run the published client libraries on FILE and grade what each hands the application.

    pi-ai, openai-python, LangChain, the Vercel AI SDK and LiteLLM each run, unmodified and in
    a subprocess of their own, on the stream; adr-0019 and exact-key are two more columns.
    Each is graded against the calls the stream means (intact, damaged, flagged, guessed),
    and the verdict says what the provider did and where to file. A library that is not
    installed is shown as unavailable with the command that installs them all (make clients).
    On another API's own stream (Gemini's, Bedrock's, ...) the libraries, chat-completions
    clients all, are not run: their columns are skipped and say why.
    """
    from webapp.cli.trace import recorded_end
    from webapp.core.contract import read_contract

    source = load(file, input_format, har_entry)
    recorded, end = recorded_end(file)  # a cut end: nothing judged of it, nothing filed
    contract = read_contract(source.records).as_recorded(end, recorded=recorded)
    verdict = clients_verdict(
        source.records, timeout=timeout, model=source.model, contract=contract
    )
    if output == "json":
        write_json({**verdict.to_json(), "input": input_json(source)})
    else:
        write_text(lambda paint: clients_lines(verdict, source, paint))
