"""openai-python reprs: read with `ast`, never evaluated."""

from __future__ import annotations

import pprint

import pytest

from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.pyrepr import read_repr
from webapp.core.records import ReaderError

LINE = (
    "ChatCompletionChunk(id='chatcmpl-1', choices=[Choice(delta=ChoiceDelta(content=None, "
    "function_call=None, refusal=None, role='assistant', tool_calls=[ChoiceDeltaToolCall("
    "index=0, id='call_1', function=ChoiceDeltaToolCallFunction(arguments='', "
    "name='get_weather'), type='function')]), finish_reason=None, index=0, logprobs=None)], "
    "created=1, model='gpt-4o', object='chat.completion.chunk', service_tier=None, "
    "system_fingerprint='fp', usage=None)"
)
VALUE = {
    "id": "chatcmpl-1",
    "choices": [
        {
            "delta": {
                "content": None,
                "function_call": None,
                "refusal": None,
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "function": {"arguments": "", "name": "get_weather"},
                        "type": "function",
                    }
                ],
            },
            "finish_reason": None,
            "index": 0,
            "logprobs": None,
        }
    ],
    "created": 1,
    "model": "gpt-4o",
    "object": "chat.completion.chunk",
    "service_tier": None,
    "system_fingerprint": "fp",
    "usage": None,
}
PPRINTED = """ChatCompletionChunk(id='chatcmpl-1',
                    choices=[Choice(delta=ChoiceDelta(content=('a long '
                                                               'text'),
                                                      role=None),
                                    finish_reason=None,
                                    index=0)],
                    created=-1,
                    model='m')"""


def test_a_whole_chunk_line() -> None:
    result = read(LINE + "\n")
    assert result.format == "repr"
    (record,) = result.records
    assert (record.kind, record.line, record.wrapped, record.value) == ("chunk", 1, None, VALUE)


def test_a_pprinted_repr_spans_lines() -> None:
    records = read(f"{LINE}\n\n{PPRINTED}\n{LINE}\n", "repr").records
    assert [(r.kind, r.line) for r in records] == [("chunk", 1), ("chunk", 3), ("chunk", 11)]
    assert records[1].value == {
        "id": "chatcmpl-1",
        "choices": [
            {"delta": {"content": "a long text", "role": None}, "finish_reason": None, "index": 0}
        ],
        "created": -1,
        "model": "m",
    }


@pytest.mark.parametrize("spread", [False, True], ids=["print", "pprint"])
def test_chunks_printed_as_python_dicts_are_read(spread: bool) -> None:
    """`print(chunk.model_dump())` (or `pprint`, which spreads each over lines and splits a
    long string in two literals): single quotes, None; as JSON they did not parse."""
    finish = {**VALUE, "choices": [{"delta": {}, "finish_reason": "tool_calls", "index": 0}]}
    shown = [
        pprint.pformat(value, width=60) if spread else repr(value) for value in (VALUE, finish)
    ]
    result = read("\n".join(shown) + "\n")
    assert result.format == "repr"
    assert [record.value for record in result.records] == [VALUE, finish]
    assert [record.line for record in result.records] == [1, 1 + shown[0].count("\n") + 1]
    trace = assemble(result.records, Options())
    assert [block.name for block in trace.blocks] == ["get_weather"]
    assert [anomaly.code for anomaly in trace.anomalies] == ["empty-arguments"]  # as sent


def test_a_python_dict_of_another_shape_is_no_repr() -> None:
    with pytest.raises(ReaderError):
        read("{'status': 'queued'}\n{'status': 'done'}\n")


def test_a_bare_list_of_tool_calls() -> None:
    text = (
        "[ChoiceDeltaToolCall(index=0, id=None,\n"
        "                     function=ChoiceDeltaToolCallFunction(\n"
        "                         arguments='{\"a\"', name=None),\n"
        "                     type=None)]\n"
    )
    (record,) = read(text).records
    assert record.wrapped == "tool_calls"
    fragment = {
        "index": 0,
        "id": None,
        "function": {"arguments": '{"a"', "name": None},
        "type": None,
    }
    assert record.value == {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}


def test_a_bare_delta() -> None:
    (record,) = read("ChoiceDelta(content='x', role=None, tool_calls=None)\n").records
    assert record.wrapped == "delta"
    assert record.value["choices"][0]["delta"] == {"content": "x", "role": None, "tool_calls": None}


def test_a_list_of_chunks_gives_each_element_its_line() -> None:
    text = f"[{LINE},\n {LINE}]\n"
    assert [r.line for r in read(text).records] == [1, 2]


def test_an_invalid_line_is_reported_and_the_rest_read() -> None:
    text = f"{LINE}\nChatCompletionChunk(id='x', choices=[\n{LINE}\n"
    records = read(text).records
    assert [(r.kind, r.line) for r in records] == [("chunk", 1), ("invalid", 2), ("chunk", 3)]
    assert records[1].error is not None
    assert "was never closed" in records[1].error and "line 1" in records[1].error


@pytest.mark.parametrize(
    "expression",
    [
        "ChatCompletionChunk(id=__import__('os').system('echo hi'))",
        "ChatCompletionChunk(id=open('/etc/passwd').read())",
        "ChatCompletionChunk(id=(lambda: 1)())",
        "ChatCompletionChunk(id=1 + 1)",
        "ChatCompletionChunk(id=x)",
        "ChatCompletionChunk('positional')",
        "ChatCompletionChunk(**{'a': 1})",
        "ChatCompletionChunk(id={1: 2})",
        "ChatCompletionChunk(id=b'bytes')",
        "ChatCompletionChunk(id=[i for i in 'ab'])",
    ],
)
def test_nothing_but_calls_constants_and_containers_is_accepted(expression: str) -> None:
    (record,) = read_repr(expression + "\n").records
    assert record.kind == "invalid"
    assert (record.error or "").startswith("not an openai-python repr")


def test_deep_nesting_is_an_invalid_record() -> None:
    text = "ChatCompletionChunk(x=" * 300 + ")" * 300 + "\n"
    (record,) = read_repr(text).records
    assert record.kind == "invalid"


def test_explicit_repr_that_finds_nothing_is_an_error() -> None:
    with pytest.raises(ReaderError, match="no openai-python repr record found"):
        read("hello there\n", "repr")
