"""`clients`: what each published client library hands the application for a stream."""

from __future__ import annotations

import click

from webapp.cli.clientsview import clients_lines
from webapp.cli.inputs import load
from webapp.cli.output import write_json, write_text
from webapp.core.readers import FORMATS
from webapp.lenses import clients_view


@click.command()
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
    source = load(file, input_format)
    matrix = clients_view(source.records, timeout=timeout)
    if output == "json":
        write_json(matrix.to_json())
    else:
        write_text(lambda paint: clients_lines(matrix, source, paint))
