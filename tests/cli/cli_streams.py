"""Small hand-built streams for the CLI tests, and writers for every input format."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from click.testing import Result

Invoke = Callable[..., Result]
"""The `invoke` fixture: run `streamviz ARGS...` in-process (conftest.py)."""
Write = Callable[..., str]
"""The `write` fixture: put text in a file under tmp_path, return its path."""

MODEL = "demo-model"


def call(
    index: int | None = None,
    id: str | None = None,
    name: str | None = None,
    args: str | None = None,
) -> dict[str, Any]:
    """One `delta.tool_calls` entry with only the keys given."""
    out: dict[str, Any] = {}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    function = {key: value for key, value in (("name", name), ("arguments", args)) if value}
    if args == "":
        function["arguments"] = ""
    if function:
        out["function"] = function
    return out


def chunk(*calls: dict[str, Any], content: str | None = None, finish: str | None = None,
          choice: int = 0) -> dict[str, Any]:  # fmt: skip
    """A chunk with one choice."""
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if calls:
        delta["tool_calls"] = list(calls)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": MODEL,
        "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
    }


CONTINUATION = [
    chunk(content="Let me check."),
    chunk(call(0, "call_1", "get_weather", "")),
    chunk(call(0, args='{"city":')),
    chunk(call(args='"Paris"}')),
    chunk(finish="tool_calls"),
]
"""A header, an index-0 fragment, then a bare continuation: a phantom under exact-key."""

CLEAN = [
    chunk(call(0, "call_1", "get_weather", '{"city":')),
    chunk(call(0, args='"Oslo"}')),
    chunk(finish="tool_calls"),
]
"""Nothing to report under either policy."""

SERVER = [
    chunk(call(0, "call_s", "web_search", '{"q":"weather"}')),
    chunk(call(1, "call_c", "get_weather", '{"city":"Rome"}')),
    chunk(finish="tool_calls"),
]
"""A server-tool call (web_search) then a client call (get_weather)."""


def two_choices() -> list[dict[str, Any]]:
    """An n=2 stream: choice 0 calls get_weather, choice 1 calls get_time."""
    out = []
    for pair in (
        (call(0, "call_a", "get_weather", '{"city":"Oslo"}'), call(0, "call_b", "get_time", "{}")),
        ({}, {}),
    ):
        first = chunk(pair[0]) if pair[0] else chunk(finish="tool_calls")
        second = chunk(pair[1], choice=1) if pair[1] else chunk(finish="tool_calls", choice=1)
        first["choices"].extend(second["choices"])
        out.append(first)
    return out


def sse(chunks: list[dict[str, Any]]) -> str:
    """Raw server-sent events, ended by `[DONE]`."""
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def json_array(chunks: list[dict[str, Any]]) -> str:
    """A pretty-printed JSON array of chunks."""
    return json.dumps(chunks, indent=2) + "\n"


def jsonl(chunks: list[dict[str, Any]]) -> str:
    """JSON Lines, one chunk per line."""
    return "".join(json.dumps(c) + "\n" for c in chunks)


def har(chunks: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """A HAR file with one chat-completions entry whose response body is the SSE stream."""
    request = {"model": MODEL, "stream": True, "tools": tools or []}
    entry = {
        "request": {
            "method": "POST",
            "url": "https://api.example.com/v1/chat/completions?key=secret",
            "postData": {"mimeType": "application/json", "text": json.dumps(request)},
        },
        "response": {
            "status": 200,
            "content": {"mimeType": "text/event-stream", "text": sse(chunks)},
        },
    }
    return json.dumps({"log": {"version": "1.2", "entries": [entry]}})


def pyrepr(chunks: list[dict[str, Any]]) -> str:
    """What printing openai-python's chunk objects shows, one per line."""
    return "".join(_chunk_repr(c) + "\n" for c in chunks)


def _chunk_repr(value: dict[str, Any]) -> str:
    choices = ", ".join(_choice_repr(c) for c in value["choices"])
    return (
        f"ChatCompletionChunk(id={value['id']!r}, choices=[{choices}], created=1, "
        f"model={value['model']!r}, object='chat.completion.chunk')"
    )


def _choice_repr(choice: dict[str, Any]) -> str:
    delta = choice["delta"]
    calls = delta.get("tool_calls")
    shown = "None" if calls is None else "[" + ", ".join(map(_call_repr, calls)) + "]"
    return (
        f"Choice(delta=ChoiceDelta(content={delta.get('content')!r}, role=None, "
        f"tool_calls={shown}), finish_reason={choice['finish_reason']!r}, "
        f"index={choice['index']!r})"
    )


def _call_repr(fragment: dict[str, Any]) -> str:
    function = fragment.get("function", {})
    return (
        f"ChoiceDeltaToolCall(index={fragment.get('index')!r}, id={fragment.get('id')!r}, "
        f"function=ChoiceDeltaToolCallFunction(arguments={function.get('arguments')!r}, "
        f"name={function.get('name')!r}), type={fragment.get('type')!r})"
    )


WRITERS = {"sse": sse, "json": json_array, "jsonl": jsonl, "har": har, "repr": pyrepr}
