"""Other APIs' streams: Anthropic and Responses mapped to chunks, LangChain named (Gemini,
Bedrock, Ollama and the Vercel AI SDK's UI stream: test_native_streams)."""

# ruff: noqa: E501  (the streams are pasted as they come off the wire, one event per line)

from __future__ import annotations

import json

import pytest

from webapp.core.contract import read_contract
from webapp.core.readers import read
from webapp.core.records import ReaderError

ANTHROPIC = """\
event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me look."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\\"Paris\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null}}

event: message_stop
data: {"type":"message_stop"}
"""

RESPONSES = """\
event: response.created
data: {"type":"response.created","response":{"id":"resp_1","model":"gpt-x","output":[]}}

event: response.in_progress
data: {"type":"response.in_progress","response":{"id":"resp_1"}}

event: response.output_item.added
data: {"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\\"city\\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"\\"Paris\\"}"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{\\"city\\":\\"Paris\\"}"}

event: response.completed
data: {"type":"response.completed","response":{"id":"resp_1","status":"completed"}}
"""


def fragments(text: str) -> list[tuple[int | None, list[dict[str, object]]]]:
    """Each record's line and its tool_calls fragments."""
    result = read(text)
    rows = []
    for record in result.records:
        if record.kind == "chunk":
            delta = record.value["choices"][0]["delta"]
            rows.append((record.line, delta.get("tool_calls", [])))
    return rows


def test_anthropic_messages_are_mapped_to_chunks_on_their_own_lines() -> None:
    result = read(ANTHROPIC)
    assert result.format == "sse"
    assert result.meta["mapped_from"] == "anthropic"
    assert result.model == "claude-x"
    kinds = [(r.kind, r.line) for r in result.records]
    assert kinds == [
        ("chunk", 1),
        ("chunk", 10),
        ("chunk", 16),
        ("chunk", 19),
        ("chunk", 22),
        ("chunk", 28),
        ("done", 31),
    ]
    calls = [f for line, frags in fragments(ANTHROPIC) for f in frags]
    # The tool_use block is the message's block 1 (a text block is 0): it is its first call.
    assert calls == [
        {
            "index": 0,
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        },
        {"index": 0, "function": {"arguments": '{"city": '}},
        {"index": 0, "function": {"arguments": '"Paris"}'}},
    ]
    assert result.records[1].value["choices"][0]["delta"] == {"content": "Let me look."}
    assert result.records[5].value["choices"][0]["finish_reason"] == "tool_calls"
    (note,) = [n for n in result.notes if "Anthropic Messages" in n]
    assert "decision 0019" in note
    assert "input_json_delta.partial_json -> an arguments fragment" in note
    assert "ping (1)" in note and "content_block_stop (2)" in note
    assert "curl -N" in note
    assert json.loads(result.records[2].text)["type"] == "content_block_start"


def test_responses_stream_is_mapped_with_call_id_and_output_index() -> None:
    result = read(RESPONSES)
    assert result.meta["mapped_from"] == "responses"
    assert result.model == "gpt-x"
    assert [(r.kind, r.line) for r in result.records] == [
        ("chunk", 1),
        ("chunk", 7),
        ("chunk", 10),
        ("chunk", 13),
        ("chunk", 19),
        ("done", 19),
    ]
    calls = [f for _, frags in fragments(RESPONSES) for f in frags]
    assert calls[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    assert [c["function"]["arguments"] for c in calls] == ["", '{"city":', '"Paris"}']
    assert result.records[4].value["choices"][0]["finish_reason"] == "tool_calls"
    assert any("OpenAI Responses stream" in note for note in result.notes)


def test_anthropic_events_pasted_as_json_lines_are_mapped_too() -> None:
    lines = [line[6:] for line in ANTHROPIC.splitlines() if line.startswith("data: ")]
    result = read("\n".join(lines))
    assert result.format == "jsonl"
    assert result.meta["mapped_from"] == "anthropic"
    assert [f["index"] for _, frags in fragments("\n".join(lines)) for f in frags] == [0, 0, 0]


def test_a_text_block_before_the_call_is_no_quirk_of_the_anthropic_stream() -> None:
    """Block 1 is Anthropic's first call after a text block: the mapping numbered it 1 once,
    and the contract then blamed the stream for `index-not-from-zero`, which its bytes do not
    show."""
    contract = read_contract(read(ANTHROPIC).records)
    assert contract.codes == frozenset()
    assert contract.intended is not None
    assert [(c.id, c.name, c.arguments) for c in contract.intended.calls] == [
        ("toolu_1", "get_weather", '{"city": "Paris"}')
    ]


def test_a_reasoning_item_before_the_call_is_no_quirk_of_the_responses_stream() -> None:
    reasoning = (
        'event: response.output_item.added\ndata: {"type":"response.output_item.added",'
        '"output_index":0,"item":{"type":"reasoning","id":"rs_1"}}\n\n'
    )
    text = RESPONSES.replace('"output_index":0', '"output_index":1')
    head, tail = text.split("event: response.output_item.added", 1)
    contract = read_contract(
        read(head + reasoning + "event: response.output_item.added" + tail).records
    )
    assert contract.codes == frozenset()
    assert contract.intended is not None
    assert [c.name for c in contract.intended.calls] == ["get_weather"]


def test_a_chat_completions_stream_is_left_alone() -> None:
    text = 'data: {"type": "message_start", "choices": []}\n\ndata: [DONE]\n\n'
    result = read(text)
    assert "mapped_from" not in result.meta
    assert result.records[0].value == {"type": "message_start", "choices": []}


LANGCHAIN = """\
AIMessageChunk(content='', additional_kwargs={'tool_calls': [{'index': 0, 'id': 'call_1', \
'function': {'arguments': '', 'name': 'get_weather'}, 'type': 'function'}]}, \
response_metadata={}, id='run-1', tool_calls=[{'name': 'get_weather', 'args': {}, \
'id': 'call_1', 'type': 'tool_call'}], tool_call_chunks=[{'name': 'get_weather', 'args': '', \
'id': 'call_1', 'index': 0, 'type': 'tool_call_chunk'}])
AIMessageChunk(content='', additional_kwargs={}, response_metadata={}, id='run-1', \
tool_call_chunks=[{'name': None, 'args': '{"city": "Paris"}', 'id': None, 'index': 0, \
'type': 'tool_call_chunk'}])
"""


@pytest.mark.parametrize("fmt", ["auto", "repr", "json", "jsonl"])
def test_langchain_reprs_are_named(fmt: str) -> None:
    with pytest.raises(ReaderError) as caught:
        read(LANGCHAIN, fmt)
    message = str(caught.value)
    assert "LangChain's AIMessageChunk repr" in message
    assert "decision 0019" in message
    assert "curl -N" in message
