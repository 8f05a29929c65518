"""Streams from other APIs, named and read: Anthropic Messages and OpenAI Responses are mapped
to chat-completions chunks (`bridge`); Gemini's native stream, Bedrock's ConverseStream events,
Ollama's native `/api/chat` (and `/api/generate`) stream and the Vercel AI SDK's UI message
stream (and streamText's stream parts) are read in their own terms (`natives`); LangChain's
reprs are refused with a message saying what they are and what to paste instead.

Decision 0019 is about how a chat-completions stream's `delta.tool_calls` fragments are joined;
another API's events are not those fragments, so reading them as chunks would show blank rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from webapp.core.readers.bridge import MAPPED, Mapper, anthropic_event, remap, responses_event
from webapp.core.readers.natives import NATIVES, native_kind
from webapp.core.readers.shape import ANTHROPIC_EVENTS, VERCEL_PARTS
from webapp.core.records import ReadResult, Record
from webapp.core.words import count

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
    """ "anthropic", "responses", "gemini", "bedrock", "ollama" or "vercel" when the first
    events say so; None otherwise."""
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
    return native_kind(value, event)


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
    native = kind in NATIVES
    what, how, mapper = NATIVES[kind] if native else _MAPPERS[kind]
    mapped = remap(result.records, mapper)
    skipped = ", ".join(f"{name} ({count})" for name, count in mapped.skipped.items())
    if native:
        note = (
            f"this is {what}, read in its own terms: {how}. Calls are numbered in the order "
            "they open, and only what its own fields say is held against it"
        )
    else:
        note = (
            f"this is {what}, not chat-completions: {_WHY}, so streamviz mapped each event to "
            f"the chunk a chat-completions bridge would send on the event's own line: {how}"
        )
    note += f"; events with no counterpart skipped: {skipped}" if skipped else ""
    restated = mapped.state.get("restated")
    if restated:
        note += (
            f"; {count(restated, 'tool-input-available')} gave an input other than its "
            "pieces joined (the pieces were kept)"
        )
    if not native:
        note += (
            ". Every mapped fragment carries an index, so the continuation rule never fires "
            f"here; to see what a provider really sends, {PASTE_INSTEAD}"
        )
    meta: dict[str, Any] = {**result.meta, "mapped_from": kind}
    return replace(result, records=tuple(mapped.records), notes=(note, *result.notes), meta=meta)


API_NAMES = {
    "anthropic": "Anthropic Messages",
    "responses": "OpenAI Responses",
    "gemini": "Gemini streamGenerateContent",
    "bedrock": "Bedrock ConverseStream",
    "ollama": "Ollama's native API",
    "vercel": "the Vercel AI SDK's UI message stream",
}
"""Each other API's name, as a sentence says whose stream it is."""
OTHER_API = "another API"
"""The name when the events read do not say which API they are."""


def own_api(records: Iterable[Record]) -> str | None:
    """The API whose own stream the records were read from ("Gemini streamGenerateContent")
    when its events were mapped to chunks (`bridge.MAPPED`); None for a chat-completions
    stream. Only the first chunks are looked at: a mapped stream's chunks are all mapped."""
    seen = 0
    for record in records:
        if record.kind != "chunk":
            continue
        if record.wrapped != MAPPED:
            return None
        try:
            value = json.loads(record.text)
        except ValueError:
            value = None
        kind = _kind(value, record.event) if isinstance(value, dict) else None
        if kind is not None:
            return API_NAMES[kind]
        seen += 1
        if seen >= _LOOK_AT:
            break
    return OTHER_API if seen else None


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
