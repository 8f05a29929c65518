"""The Vercel AI SDK's UI message stream (and streamText's stream parts) read in its own terms.

`data: {"type": ...}` parts. A call is keyed by its `toolCallId` (a stream part's `id`):
`tool-input-start {toolCallId, toolName}` opens it, each `tool-input-delta` appends its
`inputTextDelta` (a stream part's `delta`), and `tool-input-available {toolCallId, toolName,
input}` (a stream part's `tool-call`) closes it with the input the SDK parsed: that object is
the call's arguments when no piece came before it (a provider that sends calls whole), and
restates them otherwise, so it adds nothing (`restated` counts those that differ from the
pieces). `text-delta` is content, `reasoning-delta` reasoning, `error` the error it names.
`finish` ends it: with its `finishReason` when that is `length` or `content-filter`, else
with `tool_calls` when the stream made calls (the SDK may have run the tools and answered in a
later step of the same stream, and said `stop`), else `stop`.
"""

from __future__ import annotations

import json
from typing import Any

from webapp.core.readers.bridge import chunk, fragment, opened, placed, text
from webapp.core.readers.parse import parse_json

_FINISHES = {"length": "length", "content-filter": "content_filter"}


def _id(value: dict[str, Any]) -> Any:
    return value.get("toolCallId", value.get("id"))


def ui_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one part of the UI message stream."""
    kind = value.get("type")
    if kind == "start":
        head = {"id": value["messageId"]} if isinstance(value.get("messageId"), str) else {}
        return [chunk({"role": "assistant"}, **head)]
    if kind == "tool-input-start":
        pieces = state.setdefault("pieces", {})
        pieces[json.dumps(_id(value))] = []
        number = opened(state, _id(value))
        return [fragment(number, "", id=_id(value), name=value.get("toolName"))]
    if kind == "tool-input-delta":
        piece = text(value.get("inputTextDelta", value.get("delta")))
        state.setdefault("pieces", {}).setdefault(json.dumps(_id(value)), []).append(piece)
        return [fragment(placed(state, _id(value)), piece)]
    if kind in ("tool-input-available", "tool-call"):
        return _available(value, state)
    if kind == "text-delta":
        return [chunk({"content": text(value.get("delta", value.get("textDelta")))})]
    if kind == "reasoning-delta":
        return [chunk({"reasoning_content": text(value.get("delta"))})]
    if kind == "error":
        return [{"error": {"message": value.get("errorText", value.get("error"))}}]
    if kind == "finish":
        reason = value.get("finishReason")
        named = _FINISHES.get(reason) if isinstance(reason, str) else None
        return [chunk({}, named or ("tool_calls" if state.get("count") else "stop"))]
    return []


def _available(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """A call's whole input: its arguments when no piece came, else a restatement."""
    key = json.dumps(_id(value))
    sent = state.setdefault("pieces", {}).get(key)
    given = value.get("input", value.get("args"))
    arguments = given if isinstance(given, str) else json.dumps(given, ensure_ascii=False)
    if sent is None:
        number = opened(state, _id(value))
        return [fragment(number, arguments, id=_id(value), name=value.get("toolName"))]
    if not sent:
        state["pieces"][key] = [arguments]
        return [fragment(placed(state, _id(value)), arguments)]
    joined, error = parse_json("".join(sent))
    parsed = parse_json(given)[0] if isinstance(given, str) else given
    if error is not None or joined != parsed:
        state["restated"] = state.get("restated", 0) + 1
    return []
