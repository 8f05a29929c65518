"""Another API's own stream (Gemini, Bedrock, Ollama, the Vercel AI SDK's UI stream): the
chat-completions clients are not run on it, and their columns say why; our two policies are."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lenses.fakes import answering, missing
from tests.streamkit import chunk, frag, sse
from webapp.core.readers import read, read_bytes
from webapp.core.readers.foreign import own_api
from webapp.lenses import client_columns, columns_of
from webapp.lenses.results import LensResult
from webapp.triage.verdict import grade

NATIVE = Path("tests/corpus/native")
GEMINI = NATIVE / "gemini3pro-wholecall.sse"
NOTHING = {"status": "ok", "calls": [], "error": None}
"""A reply that would grade `damaged` on a stream that means a call, were the lens run."""


@pytest.mark.parametrize(
    ("name", "api"),
    [
        ("gemini3pro-wholecall.sse", "Gemini streamGenerateContent"),
        ("bedrock-nova-micro-get-temperature.eventstream", "Bedrock ConverseStream"),
        ("ollama-llama32-docs-tool.jsonl", "Ollama's native API"),
        ("vercel-ui-openrouter-claude-parallel.sse", "the Vercel AI SDK's UI message stream"),
    ],
)
def test_another_apis_stream_is_named(name: str, api: str) -> None:
    assert own_api(read_bytes((NATIVE / name).read_bytes()).records) == api


def test_anthropic_and_responses_are_named() -> None:
    anthropic = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    responses = 'data: {"type":"response.completed","response":{"output":[]}}\n\n'
    assert own_api(read(anthropic).records) == "Anthropic Messages"
    assert own_api(read(responses).records) == "OpenAI Responses"


def test_a_chat_completions_stream_is_no_other_apis() -> None:
    text = sse(chunk(tool_calls=[frag(0, id="call_1", name="f", args="{}")]))
    assert own_api(read(text).records) is None
    assert own_api(read("data: [DONE]\n\n").records) is None


def test_the_clients_are_not_run_on_another_apis_stream() -> None:
    records = read_bytes(GEMINI.read_bytes()).records
    lenses = (answering(NOTHING, "litellm"), missing("pi-ai"))
    columns = client_columns(records, lenses, timeout=10)
    assert [c.status for c in columns] == ["skipped", "skipped", "ok", "ok"]
    litellm, pi_ai = columns[0], columns[1]
    assert litellm.calls == () and litellm.install is None and pi_ai.install is None
    assert litellm.error == (
        "it reads chat-completions streams, and this is another API's own stream: "
        "Gemini streamGenerateContent"
    )
    graded = grade(litellm, None)
    assert graded.grade is None and graded.skipped and "make clients" not in graded.detail


def test_results_kept_from_a_run_on_another_apis_stream_are_not_graded() -> None:
    """A store may hold what a lens said on the mapped chunks before: it is not held against
    the client."""
    records = read_bytes(GEMINI.read_bytes()).records
    kept = LensResult("litellm", "1.0", "ok")
    (column, *_) = columns_of(records, [kept])
    assert column.status == "skipped" and column.client == "litellm" and column.version == "1.0"
