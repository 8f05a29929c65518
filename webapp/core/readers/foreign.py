"""Streams from other APIs, named: Anthropic Messages and OpenAI Responses are mapped to
chat-completions chunks (`bridge`); Gemini's native stream, Ollama's native `/api/chat` (and
`/api/generate`) stream, the Vercel AI SDK's UI message stream (and its other stream parts) and
LangChain's reprs are refused with a message saying what they are, the calls they hold, and
what to paste instead.

Decision 0019 is about how a chat-completions stream's `delta.tool_calls` fragments are joined;
another API's events are not those fragments, so reading them as chunks would show blank rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from webapp.core.readers.bridge import Mapper, anthropic_event, remap, responses_event
from webapp.core.readers.shape import ANTHROPIC_EVENTS, VERCEL_PARTS
from webapp.core.records import ReaderError, ReadResult, Record
from webapp.core.words import count, excerpt, quote

_LOOK_AT = 20
"""How many event records decide what a stream is."""

PASTE_INSTEAD = (
    "paste the raw chat-completions stream instead: the SSE of /v1/chat/completions with "
    '"stream": true, e.g. `curl -N https://…/v1/chat/completions -H "Content-Type: '
    'application/json" -d \'{"model": …, "stream": true, "messages": …, "tools": …}\'`'
)
_WHY = (
    "decision 0019 is about how a chat-completions stream's delta.tool_calls fragments are "
    "joined into calls"
)
_LANGCHAIN_MARKS = ("AIMessageChunk(", "tool_call_chunks=[", "'type': 'tool_call_chunk'")


def kind_of(records: Sequence[Record]) -> str | None:
    """ "anthropic", "responses", "gemini", "ollama" or "vercel" when the first events say so;
    None otherwise."""
    seen = 0
    for record in records:
        value = record.value
        if record.kind != "chunk" or not isinstance(value, dict):
            continue
        if "choices" in value or value.get("object") == "chat.completion.chunk":
            return None
        kind = _kind(value, record.event)
        if kind is not None:
            return kind
        seen += 1
        if seen >= _LOOK_AT:
            return None
    return None


def _kind(value: dict[str, Any], event: str | None) -> str | None:
    kind = value.get("type")
    if not isinstance(kind, str):
        kind = None  # a list or an object names no event (and cannot be looked up)
    if kind in ANTHROPIC_EVENTS or event in ANTHROPIC_EVENTS:
        return "anthropic"
    if kind is not None and kind.startswith("response."):
        return "responses"
    if kind in VERCEL_PARTS:
        return "vercel"
    if isinstance(value.get("candidates"), list):
        return "gemini"
    # Ollama's ChatResponse (api/types.go) always carries `message` and `done`; its
    # GenerateResponse `response` and `done`.
    if isinstance(value.get("done"), bool) and (
        isinstance(value.get("message"), dict) or isinstance(value.get("response"), str)
    ):
        return "ollama"
    return None


_MAPPERS: dict[str, tuple[str, str, Mapper]] = {
    "anthropic": (
        "an Anthropic Messages stream",
        "content_block_start (tool_use) -> a tool_calls fragment with index = the content "
        "block's index, its id and name; input_json_delta.partial_json -> an arguments "
        "fragment at that index; text_delta -> delta.content; thinking_delta -> "
        "delta.reasoning_content; message_delta.stop_reason -> finish_reason (tool_use -> "
        "tool_calls, end_turn -> stop, max_tokens -> length); message_stop -> [DONE]",
        anthropic_event,
    ),
    "responses": (
        "an OpenAI Responses stream",
        "response.output_item.added (function_call) -> a tool_calls fragment with index = "
        "output_index, id = call_id and its name; response.function_call_arguments.delta -> "
        "an arguments fragment at that index; response.output_text.delta -> delta.content; "
        "response.completed -> finish_reason (tool_calls if a function call was opened, "
        "else stop) and [DONE]",
        responses_event,
    ),
}


def adapt(result: ReadResult) -> ReadResult:
    """The result as chat-completions chunks when it holds another API's events."""
    kind = kind_of(result.records)
    if kind is None:
        return result
    if kind == "gemini":
        raise ReaderError(gemini_message())
    if kind == "ollama":
        raise ReaderError(ollama_message(result.records))
    if kind == "vercel":
        raise ReaderError(vercel_message(result.records))
    what, how, mapper = _MAPPERS[kind]
    mapped = remap(result.records, mapper)
    skipped = ", ".join(f"{name} ({count})" for name, count in mapped.skipped.items())
    note = (
        f"this is {what}, not chat-completions: {_WHY}, so streamviz mapped each event to the "
        f"chunk a chat-completions bridge would send on the event's own line: {how}"
        + (f"; events with no counterpart skipped: {skipped}" if skipped else "")
        + ". Every mapped fragment carries an index, so the continuation rule never fires "
        f"here; to see what a provider really sends, {PASTE_INSTEAD}"
    )
    meta: dict[str, Any] = {**result.meta, "mapped_from": kind}
    return replace(result, records=tuple(mapped.records), notes=(note, *result.notes), meta=meta)


def gemini_message() -> str:
    """What to say about Gemini's native `streamGenerateContent` output."""
    return (
        "this is Gemini's native streamGenerateContent output "
        '({"candidates": [{"content": {"parts": [{"functionCall": …}]}}]}), not a '
        f"chat-completions stream: {_WHY}, and Gemini sends each functionCall whole, so there "
        f"are no fragments to assemble. To see the fragments, {PASTE_INSTEAD} (Gemini's "
        "OpenAI-compatible endpoint is …/v1beta/openai/chat/completions)"
    )


_CALLS_NAMED = 3
_CALLS_LOOKED_AT = 10_000
"""A refusal names at most this many of the calls a stream holds, found in its first this
many records."""


def ollama_message(records: Sequence[Record]) -> str:
    """What to say about Ollama's native `/api/chat` (or `/api/generate`) stream."""
    chat = any(isinstance(value.get("message"), dict) for value in _objects(records))
    if chat:
        what = (
            'Ollama\'s native /api/chat stream (JSON Lines of {"message": {"tool_calls": '
            '[{"function": {"name": …, "arguments": {…}}}]}, "done": false})'
        )
    else:
        what = 'Ollama\'s native /api/generate stream (JSON Lines of {"response": …, "done": …})'
    return (
        f"this is {what}, not a chat-completions stream{_holding(_ollama_calls(records))}: "
        "Ollama's own API sends each tool call whole, its arguments an object, not as "
        "delta.tool_calls fragments, and streamviz does not read it yet. streamviz reads OpenAI "
        "chat-completions streams: capture Ollama's OpenAI-compatible /v1/chat/completions "
        "instead, e.g. "
        '`curl -N http://localhost:11434/v1/chat/completions -H "Content-Type: '
        'application/json" -d \'{"model": …, "stream": true, "messages": …, "tools": …}\'`'
    )


def vercel_message(records: Sequence[Record]) -> str:
    """What to say about the Vercel AI SDK's UI message stream (or its other stream parts)."""
    values = list(_objects(records))
    ui = any("inputTextDelta" in value or "messageId" in value for value in values) or any(
        value.get("type") in ("tool-input-available", "tool-output-available") for value in values
    )
    what = (
        'the Vercel AI SDK\'s UI message stream (data: {"type": "tool-input-start"}, '
        '"tool-input-delta", "tool-input-available", …)'
        if ui
        else 'the Vercel AI SDK\'s stream parts (data: {"type": "tool-input-start"}, '
        '"tool-input-delta", "tool-call", …: streamText\'s fullStream, or the AI Gateway\'s)'
    )
    return (
        f"this is {what}, not a chat-completions stream{_holding(_vercel_calls(values))}: "
        "the AI SDK has already read the provider's stream and re-keyed its fragments by "
        "toolCallId, so what the wire carried is no longer visible, and streamviz does not read "
        f"it yet. To see the fragments, capture what the model's provider sent the AI SDK (its "
        "OpenAI-compatible provider's baseURL pointed at `streamviz serve --upstream …`), or "
        f"{PASTE_INSTEAD}"
    )


def _objects(records: Sequence[Record]) -> Iterator[dict[str, Any]]:
    for at, record in enumerate(records):
        if at >= _CALLS_LOOKED_AT:
            return
        if record.kind == "chunk" and isinstance(record.value, dict):
            yield record.value


def _ollama_calls(records: Sequence[Record]) -> list[str]:
    calls = []
    for value in _objects(records):
        message = value.get("message")
        found = message.get("tool_calls") if isinstance(message, dict) else None
        for call in found if isinstance(found, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                calls.append(_call(function.get("name"), function.get("arguments")))
    return calls


def _vercel_calls(values: list[dict[str, Any]]) -> list[str]:
    ready = ("tool-input-available", "tool-call")
    return [
        _call(value.get("toolName"), value.get("input"))
        for value in values
        if value.get("type") in ready
    ]


def _call(name: Any, arguments: Any) -> str:
    shown = name if isinstance(name, str) and name.isprintable() and len(name) <= 60 else "?"
    if shown == "?" and isinstance(name, str):
        shown = quote(name, 40)
    if arguments is None:
        return shown
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"{shown} {excerpt(text, 40)}"


def _holding(calls: list[str]) -> str:
    if not calls:
        return ""
    named = ", ".join(calls[:_CALLS_NAMED])
    more = f" and {len(calls) - _CALLS_NAMED} more" if len(calls) > _CALLS_NAMED else ""
    return f" (it holds {count(len(calls), 'tool call')}: {named}{more})"


def is_langchain(text: str) -> bool:
    """Whether the text holds LangChain's `AIMessageChunk(...)` reprs or tool_call_chunks."""
    return any(mark in text for mark in _LANGCHAIN_MARKS)


def langchain_message() -> str:
    """What to say about LangChain's `AIMessageChunk(...)` reprs."""
    return (
        "this is LangChain's AIMessageChunk repr (tool_call_chunks=[...]), not a "
        f"chat-completions stream: {_WHY}, and LangChain has already read the provider's "
        "stream and re-keyed its fragments (name, args, id, index), so what the wire carried "
        f"is no longer visible. {PASTE_INSTEAD[0].upper()}{PASTE_INSTEAD[1:]} "
        "(or openai-python's printed ChatCompletionChunk objects)"
    )
