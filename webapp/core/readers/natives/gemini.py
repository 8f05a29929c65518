"""Gemini's native `streamGenerateContent` stream (`alt=sse`, or the JSON array of `alt=json`)
read in its own terms.

Each record is a `GenerateContentResponse`; the first candidate's `content.parts` are read in
order: a `functionCall {name, args}` is one whole call (its `args` object is its arguments,
`{}` when it has none; its `id` when Gemini sends one), `text` is content (reasoning when the
part is a `thought`). Gemini 3 may stream a call's arguments instead (`willContinue` on the
call, `partialArgs` of `{jsonPath, stringValue | numberValue | boolValue | nullValue}`): the
values are put at their paths and the call's arguments are the object they build, sent when
the call ends (a `functionCall` without `willContinue`). `finishReason` is the finish: `STOP`
is Gemini's only normal end, with calls or without, so it means `tool_calls` after a call;
`MAX_TOKENS` is `length`; the safety reasons are `content_filter`.
"""

from __future__ import annotations

import json
from typing import Any

from webapp.core.readers.bridge import chunk, fragment, nested, opened, text

_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
_VALUES = ("stringValue", "numberValue", "boolValue", "nullValue")


def is_gemini(value: dict[str, Any]) -> bool:
    """Whether a record is a `GenerateContentResponse` (it has a `candidates` list)."""
    return isinstance(value.get("candidates"), list)


def gemini_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one Gemini response."""
    if "error" in value:
        return [{"error": value["error"]}]
    out: list[dict[str, Any] | None] = []
    if not state.get("started"):
        state["started"] = True
        head = {key: value[key] for key in ("responseId", "modelVersion") if key in value}
        extra = {"id": head.get("responseId"), "model": head.get("modelVersion")}
        out.append(chunk({"role": "assistant"}, **{k: v for k, v in extra.items() if v}))
    candidates = value.get("candidates")
    candidate = candidates[0] if isinstance(candidates, list) and candidates else None
    if not isinstance(candidate, dict):
        return out
    parts = nested(candidate, "content", "parts")
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict):
            out.extend(_part(part, state))
    reason = candidate.get("finishReason")
    if isinstance(reason, str):
        out.append(chunk({}, _finish(reason, state)))
    if not out:
        streamed = state.get("streaming") is not None
        state["name"] = (
            "functionCall pieces (sent whole at the call's end)" if streamed else "response"
        )
    return out


def _part(part: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    call = part.get("functionCall")
    if isinstance(call, dict):
        return _call(call, state)
    said = text(part.get("text"))
    if not said:
        return []
    return [chunk({"reasoning_content" if part.get("thought") else "content": said})]


def _call(call: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """A whole call, or a piece of one whose arguments stream (`willContinue`)."""
    out: list[dict[str, Any] | None] = []
    streaming = state.get("streaming")
    if streaming is not None and "name" in call:  # another call begins: the open one ended
        out.append(_sent(streaming))
        state["streaming"] = streaming = None
    if streaming is None and "partialArgs" not in call and not call.get("willContinue"):
        if "name" in call:
            args = call.get("args")
            arguments = "{}" if args is None else json.dumps(args, ensure_ascii=False)
            out.append(fragment(opened(state, call.get("name")), arguments, **_head(call)))
        return out
    if streaming is None:
        streaming = {"number": opened(state, call.get("name")), "args": {}}
        state["streaming"] = streaming
        out.append(fragment(streaming["number"], "", **_head(call)))
    pieces = call.get("partialArgs")
    for piece in pieces if isinstance(pieces, list) else ():
        if isinstance(piece, dict):
            _put(streaming["args"], piece)
    if not call.get("willContinue"):
        state["streaming"] = None
        out.append(_sent(streaming))
    return out


def _head(call: dict[str, Any]) -> dict[str, Any]:
    head = {"name": call.get("name")}
    if isinstance(call.get("id"), str):
        head["id"] = call["id"]
    return head


def _sent(streaming: dict[str, Any]) -> dict[str, Any]:
    """The arguments a streamed call's values built, as one piece."""
    return fragment(streaming["number"], json.dumps(streaming["args"], ensure_ascii=False))


def _put(args: dict[str, Any], piece: dict[str, Any]) -> None:
    """Put one `partialArgs` value at its `jsonPath` (`$.a.b`); a string continues the string
    already there."""
    path = piece.get("jsonPath")
    if not isinstance(path, str) or not path.startswith("$."):
        return
    keys = path[2:].split(".")
    place = args
    for key in keys[:-1]:
        inner = place.get(key)
        if not isinstance(inner, dict):
            inner = place[key] = {}
        place = inner
    last = keys[-1]
    for name in _VALUES:
        if name in piece:
            value = None if name == "nullValue" else piece[name]
            before = place.get(last)
            if isinstance(value, str) and isinstance(before, str):
                value = before + value
            place[last] = value
            return


def _finish(reason: str, state: dict[str, Any]) -> str:
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _FILTERED:
        return "content_filter"
    return "tool_calls" if state.get("count") else "stop"
