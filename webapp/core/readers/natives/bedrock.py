"""Amazon Bedrock's ConverseStream events read in their own terms.

They come logged two ways: keyed by the event's type, as the AWS SDKs decode them
(`{"contentBlockDelta": {"contentBlockIndex": 1, "delta": {...}}}`), or as the event-stream's
JSON payloads alone (`{"contentBlockIndex": 1, "delta": {...}, "p": "abc"}`, the type in the
frame's `:event-type` header, or in an SSE `event:` line when one was written). A call is the
content block its `contentBlockStart` opens with `start.toolUse {toolUseId, name}`; each
`contentBlockDelta` with `delta.toolUse.input` (a string) appends to the call of that
`contentBlockIndex`; `delta.text` is content, `delta.reasoningContent.text` reasoning;
`messageStop.stopReason` is the finish (`tool_use` -> `tool_calls`, `end_turn` and
`stop_sequence` -> `stop`, `max_tokens` -> `length`, `guardrail_intervened` and
`content_filtered` -> `content_filter`). An exception event is the provider's error.
"""

from __future__ import annotations

from typing import Any

from webapp.core.readers.bridge import chunk, fragment, nested, opened, placed, text

EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)
_OTHER = frozenset({"metadata"})
_STOPS = {
    "tool_use": "tool_calls",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


def event_of(value: dict[str, Any], event: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The event's type and body, or None when the value is no ConverseStream event."""
    if len(value) == 1:
        ((kind, body),) = value.items()
        if isinstance(body, dict) and (kind in EVENTS or kind in _OTHER or _failed(kind)):
            return kind, body
    if event is not None and (event in EVENTS or event in _OTHER or _failed(event)):
        return event, value
    if "contentBlockIndex" in value:
        if "start" in value:
            return "contentBlockStart", value
        if "delta" in value:
            return "contentBlockDelta", value
        return "contentBlockStop", value
    if "stopReason" in value:
        return "messageStop", value
    if value.keys() == {"role", "p"}:
        return "messageStart", value
    return None


def is_bedrock(value: dict[str, Any], event: str | None = None) -> bool:
    """Whether a record is a ConverseStream event (metadata and exceptions alone do not say)."""
    found = event_of(value, event)
    return found is not None and found[0] in EVENTS


def _failed(kind: str) -> bool:
    return kind.endswith("Exception")


def bedrock_event(value: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The chunks for one ConverseStream event."""
    found = event_of(value, state.get("event"))
    if found is None:
        return [{"error": value["error"]}] if "error" in value else []
    kind, body = found
    state["name"] = kind
    if _failed(kind):
        return [{"error": {"type": kind, **body}}]
    if kind == "messageStart":
        return [chunk({"role": "assistant"})]
    index = body.get("contentBlockIndex")
    if kind == "contentBlockStart":
        use = nested(body, "start", "toolUse")
        if not isinstance(use, dict):
            return []
        return [fragment(opened(state, index), "", id=use.get("toolUseId"), name=use.get("name"))]
    if kind == "contentBlockDelta":
        delta = body.get("delta")
        if not isinstance(delta, dict):
            return []
        if "toolUse" in delta:
            return [fragment(placed(state, index), text(nested(delta, "toolUse", "input")))]
        if "text" in delta:
            return [chunk({"content": text(delta["text"])})]
        reasoning = nested(delta, "reasoningContent", "text")
        return [chunk({"reasoning_content": reasoning})] if isinstance(reasoning, str) else []
    if kind == "messageStop":
        reason = body.get("stopReason")
        return [chunk({}, _STOPS.get(reason, "stop") if isinstance(reason, str) else "stop")]
    return []
