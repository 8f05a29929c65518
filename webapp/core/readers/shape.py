"""What a bare JSON value is (chunk, choice, delta, tool-call fragment) and its chunk envelope.

People paste what `jq` printed: `.choices[0]` (a choice), `.choices[0].delta` (a delta),
`.choices[0].delta.tool_calls[]` (fragments). Each is wrapped back into a one-choice chunk so
the assembler sees what the wire would have carried.
"""

from __future__ import annotations

from typing import Any

DELTA_KEYS = frozenset(
    {
        "tool_calls",
        "content",
        "role",
        "reasoning_content",
        "reasoning",
        "reasoning_text",
        "refusal",
        "function_call",
    }
)


ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)


VERCEL_PARTS = frozenset(
    {
        "start-step",
        "finish-step",
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-end",
        "tool-input-available",
        "tool-input-error",
        "tool-output-available",
        "tool-output-error",
        "tool-call",
        "tool-result",
        "source-url",
        "source-document",
        "message-metadata",
    }
)
"""The Vercel AI SDK's own stream parts (its UI message stream, streamText's fullStream) that no
other API sends; its `start`, `finish`, `error` and `abort` are too common a name to tell."""


def is_foreign_event(value: dict[str, Any]) -> bool:
    """An Anthropic Messages, OpenAI Responses or Vercel AI SDK event, or a Bedrock
    ConverseStream payload: left as it is for `foreign` to map (a Vercel `text-delta` and a
    Bedrock `contentBlockDelta` payload have a `delta`, but are no choice)."""
    kind = value.get("type")
    if "contentBlockIndex" in value or (value.keys() == {"role", "p"}):  # messageStart's payload
        return True
    return isinstance(kind, str) and (
        kind in ANTHROPIC_EVENTS or kind.startswith("response.") or kind in VERCEL_PARTS
    )


def is_fragment(value: Any) -> bool:
    """A bare `delta.tool_calls[]` entry: an object with `function` and no chunk or choice keys."""
    return (
        isinstance(value, dict)
        and "function" in value
        and "choices" not in value
        and "delta" not in value
    )


def is_fragment_list(value: Any) -> bool:
    """A bare `delta.tool_calls` array: non-empty, and every entry a fragment."""
    return isinstance(value, list) and bool(value) and all(is_fragment(item) for item in value)


def _is_chunk(value: dict[str, Any]) -> bool:
    return "choices" in value or "error" in value or value.get("object") == "chat.completion.chunk"


def _envelope(choice: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [choice]}


def as_chunk(value: Any) -> tuple[Any, str | None]:
    """The chunk to hand the assembler for one value, and how it was wrapped (None: as is)."""
    if isinstance(value, list):
        if is_fragment_list(value):
            return _envelope({"index": 0, "delta": {"tool_calls": value}}), "tool_calls"
        return value, None
    if not isinstance(value, dict) or _is_chunk(value) or is_foreign_event(value):
        return value, None
    if "delta" in value:
        choice = value if "index" in value else {"index": 0, **value}
        return _envelope(choice), "choice"
    if "function" in value:
        return _envelope({"index": 0, "delta": {"tool_calls": [value]}}), "tool_calls"
    if DELTA_KEYS.intersection(value):
        return _envelope({"index": 0, "delta": value}), "delta"
    return value, None


def members(value: Any) -> list[Any] | None:
    """The values a top-level array stands for, one record each; None if it is one record."""
    if isinstance(value, list) and not is_fragment_list(value):
        return value
    return None
