"""Ollama's native `/api/chat` stream (and `/api/generate`'s) read in its own terms.

JSON Lines of `{"model", "message": {"content", "thinking", "tool_calls"}, "done"}`. Each entry
of `message.tool_calls` is one whole call, `{"function": {"name", "arguments": {...}}}` (with
an `id` and `function.index` from newer versions): its `arguments` object is its arguments
text; Ollama sends no call in pieces, so every entry is a call of its own, whatever index it
names. `content` is content, `thinking` reasoning (`/api/generate`: `response` and `thinking`).
`done: true` ends it with `done_reason`: `stop` is Ollama's normal end, with calls or without
(its own API never says `tool_calls`), so it means `tool_calls` after a call; `length` is
`length`. `{"error": "..."}` is the provider's error.
"""

from __future__ import annotations

import json
from typing import Any

from webapp.core.readers.bridge import chunk, fragment, opened, text


def is_ollama(value: dict[str, Any]) -> bool:
    """Ollama's ChatResponse (api/types.go) always carries `message` and `done`; its
    GenerateResponse `response` and `done`."""
    return isinstance(value.get("done"), bool) and (
        isinstance(value.get("message"), dict) or isinstance(value.get("response"), str)
    )


def ollama_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one line of Ollama's stream."""
    if "error" in value:
        return [{"error": value["error"]}]
    out: list[dict[str, Any] | None] = []
    if not state.get("started"):
        state["started"] = True
        model = value.get("model")
        out.append(chunk({"role": "assistant"}, **({"model": model} if model else {})))
    message = value.get("message")
    said = message if isinstance(message, dict) else value
    thinking = text(said.get("thinking"))
    if thinking:
        out.append(chunk({"reasoning_content": thinking}))
    content = text(said.get("content" if said is message else "response"))
    if content:
        out.append(chunk({"content": content}))
    calls = said.get("tool_calls") if said is message else None
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            out.append(_call(call, state))
    if not out:
        state["name"] = "line with no content"
    if value.get("done") is True:
        reason = value.get("done_reason")
        finish = "length" if reason == "length" else "tool_calls" if state.get("count") else "stop"
        out.append(chunk({}, finish))
    return out


def _call(call: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = "{}" if arguments is None else json.dumps(arguments, ensure_ascii=False)
    head: dict[str, Any] = {"name": function.get("name")}
    if isinstance(call.get("id"), str) and call["id"]:
        head["id"] = call["id"]
    return fragment(opened(state, state.get("count", 0)), arguments, **head)
