"""Anthropic Messages and OpenAI Responses events mapped to chat-completions chunks, and the
helpers every other API's mapping shares (`webapp.core.readers.natives`).

Each event becomes the chunk (or chunks) a chat-completions bridge would send in its place,
on the event's own line; events with no counterpart map to nothing and are counted. A call is
found by the stream's own key (a content block's index, an output index, a call id) and
numbered in the order calls open (`opened`, `placed`), so a text or reasoning block before the
first call is no gap in the numbering. Anthropic: `content_block_start` with a `tool_use` block
opens a call with its id and name, `input_json_delta.partial_json` appends arguments to the
call of that block index, `text_delta` is `delta.content`, `message_delta.stop_reason` is the
finish reason, `message_stop` is `[DONE]`. Responses: `response.output_item.added` with a
`function_call` item opens a call with its `call_id` and name,
`response.function_call_arguments.delta` appends to the call of that `output_index`,
`response.output_text.delta` is content, `response.completed` is the finish reason and `[DONE]`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from webapp.core.records import Record

_STOP_REASONS = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "refusal": "content_filter",
    "pause_turn": "stop",
}


@dataclass(slots=True)
class Mapped:
    """The records a mapping produced, and the event types it skipped (with counts)."""

    records: list[Record] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """What the mapper kept (`count`: the calls opened)."""


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """The one-choice chunk carrying `delta` (and `finish` as its finish reason)."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"object": "chat.completion.chunk", **extra, "choices": [choice]}


def fragment(index: Any, arguments: str, **head: Any) -> dict[str, Any]:
    """A chunk with one tool_calls fragment at `index` (with its `id` and `name` when given)."""
    fragment: dict[str, Any] = {"index": index}
    if "id" in head:
        fragment["id"] = head["id"]
        fragment["type"] = "function"
    function = {"name": head["name"]} if "name" in head else {}
    fragment["function"] = {**function, "arguments": arguments}
    return chunk({"tool_calls": [fragment]})


def text(value: Any) -> str:
    """The value when it is a string, else ""."""
    return value if isinstance(value, str) else ""


def _key(key: Any) -> str:
    return json.dumps(key, sort_keys=True, ensure_ascii=False)


def opened(state: dict[str, Any], key: Any) -> int:
    """The number of the call the stream opens now under `key` (its own block index, output
    index or call id): calls are numbered 0, 1, ... in the order they open, whatever the
    stream's own numbering, so a text block before them is no gap."""
    number = int(state.get("count", 0))
    state["count"] = number + 1
    state.setdefault("calls", {})[_key(key)] = number
    return number


def placed(state: dict[str, Any], key: Any) -> int:
    """The number of the call `key` names; a key no call opened under gets a number of its
    own (its pieces then name no call, which the contract says)."""
    number = state.get("calls", {}).get(_key(key))
    return opened(state, key) if number is None else int(number)


def _input_text(value: Any) -> str:
    """A tool_use block's `input` as arguments text: "" for the usual empty `{}`."""
    if value is None or value == {}:
        return ""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _head(value: dict[str, Any]) -> dict[str, Any]:
    """The id and model a chunk carries, from a `message_start` or `response.created`."""
    inner = value.get("message") or value.get("response")
    if not isinstance(inner, dict):
        return {}
    return {key: inner[key] for key in ("id", "model") if isinstance(inner.get(key), str)}


def anthropic_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one Anthropic Messages event; None stands for `[DONE]`."""
    kind = value.get("type")
    if kind == "message_start":
        return [chunk({"role": "assistant"}, **_head(value))]
    if kind == "content_block_start":
        block = value.get("content_block")
        if not isinstance(block, dict):
            return []
        if block.get("type") == "tool_use":
            return [
                fragment(
                    opened(state, value.get("index")),
                    _input_text(block.get("input")),
                    id=block.get("id"),
                    name=block.get("name"),
                )
            ]
        if block.get("type") == "text" and text(block.get("text")):
            return [chunk({"content": block["text"]})]
        return []
    if kind == "content_block_delta":
        delta = value.get("delta")
        if not isinstance(delta, dict):
            return []
        if delta.get("type") == "input_json_delta":
            index = placed(state, value.get("index"))
            return [fragment(index, text(delta.get("partial_json")))]
        if delta.get("type") == "text_delta":
            return [chunk({"content": text(delta.get("text"))})]
        if delta.get("type") == "thinking_delta":
            return [chunk({"reasoning_content": text(delta.get("thinking"))})]
        return []
    if kind == "message_delta":
        reason = nested(value, "delta", "stop_reason")
        if isinstance(reason, str):
            return [chunk({}, _STOP_REASONS.get(reason, "stop"))]
        return []
    if kind == "message_stop":
        return [None]
    if kind == "error":
        return [{"error": value.get("error", value)}]
    return []


def responses_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one OpenAI Responses event; None stands for `[DONE]`."""
    kind = value.get("type")
    if kind == "response.created":
        return [chunk({"role": "assistant"}, **_head(value))]
    if kind == "response.output_item.added":
        item = value.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []
        return [
            fragment(
                opened(state, value.get("output_index")),
                text(item.get("arguments")),
                id=item.get("call_id"),
                name=item.get("name"),
            )
        ]
    if kind == "response.function_call_arguments.delta":
        return [fragment(placed(state, value.get("output_index")), text(value.get("delta")))]
    if kind == "response.output_text.delta":
        return [chunk({"content": text(value.get("delta"))})]
    if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
        return [chunk({"reasoning_content": text(value.get("delta"))})]
    if kind == "response.completed":
        return [chunk({}, "tool_calls" if state.get("count") else "stop"), None]
    if kind == "response.incomplete":
        details = nested(value, "response", "incomplete_details", "reason")
        finish = "content_filter" if details == "content_filter" else "length"
        return [chunk({}, finish), None]
    if kind == "response.failed":
        error = nested(value, "response", "error")
        return [{"error": error if error is not None else "the response failed"}]
    if kind == "error":
        return [{"error": {k: v for k, v in value.items() if k != "type"}}]
    return []


def nested(value: Any, *keys: str) -> Any:
    """`value[k1][k2]...`, or None where a level is not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


MAPPED = "event of another API"
"""The `Record.wrapped` of a chunk mapped from another API's event: its `text` is the event, its
value the chunk that says the same. A stream of them is another API's own
(`webapp.core.readers.foreign.own_api`): no chat-completions client lens is run on it."""

Mapper = Callable[[dict[str, Any], dict[str, Any]], list[dict[str, Any] | None]]


def remap(records: Sequence[Record], mapper: Mapper) -> Mapped:
    """Map every event record with `mapper`; other records (invalid, done) pass as they are."""
    mapped = Mapped()
    state = mapped.state
    for record in records:
        value = record.value
        if record.kind != "chunk" or not isinstance(value, dict):
            mapped.records.append(record)
            continue
        state["event"] = record.event
        chunks = mapper(value, state)
        named = state.pop("name", None)
        if not chunks:
            name = str(named or value.get("type") or record.event or "?")
            mapped.skipped[name] = mapped.skipped.get(name, 0) + 1
        for made in chunks:
            if made is None:
                mapped.records.append(
                    Record(kind="done", line=record.line, text=record.text, event=record.event)
                )
            else:
                mapped.records.append(
                    Record(
                        kind="chunk",
                        line=record.line,
                        value=made,
                        text=record.text,
                        event=record.event,
                        wrapped=MAPPED,
                    )
                )
    return mapped
