"""What one chunk says, read as upstream reads it: the choice followed, its reasoning and
text, a provider's error, and what its `finish_reason` means. No block is touched here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from webapp.core.jsoncheck import dumps
from webapp.core.jsvalue import is_number, js_string, truthy
from webapp.core.records import Record

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_REASONING_KEYS = frozenset((*REASONING_FIELDS, "reasoning_details"))
_STOP_REASONS = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


class Selection(NamedTuple):
    """The choice a chunk offers for the followed index, and the other indexes it holds."""

    choice: dict[str, Any] | None
    others: tuple[Any, ...]
    note: str | None
    """Why there is nothing to follow, when there is not."""


def select_choice(choices: Any, wanted: int) -> Selection:
    """The entry of `choices` whose `index` is `wanted` (its position when it has none)."""
    if type(choices) is list and len(choices) == 1 and type(choices[0]) is dict:
        index = choices[0].get("index", 0)  # the usual case: one choice, the one followed
        if type(index) is int and index == wanted:
            return Selection(choices[0], (), None)
    if not isinstance(choices, list):
        return Selection(None, (), "no choices array: skipped, as upstream does")
    if not choices:
        return Selection(None, (), "no choices (a usage-only chunk?): nothing to assemble")
    chosen: dict[str, Any] | None = None
    others: list[Any] = []
    for position, choice in enumerate(choices):
        if not isinstance(choice, dict):
            continue
        index = choice.get("index", position)
        if is_number(index) and index == wanted and chosen is None:
            chosen = choice
        else:
            others.append(index)
    note = None if chosen is not None else f"no choice with index {wanted} in this chunk"
    return Selection(chosen, tuple(others), note)


def provider_error(record: Record) -> str | None:
    """The message of a record that is a provider's error (upstream's SDK throws on it)."""
    chunk = record.value
    error = chunk.get("error") if isinstance(chunk, dict) else None
    if record.event != "error" and not truthy(error):
        return None
    payload = error if error is not None else chunk
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    if isinstance(payload, str):
        return payload
    return dumps(payload).decode("utf-8")


def reasoning_text(delta: dict[str, Any]) -> str | None:
    """The first non-empty of `reasoning_content`, `reasoning`, `reasoning_text`."""
    if _REASONING_KEYS.isdisjoint(delta):
        return None
    for name in REASONING_FIELDS:
        value = delta.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def opens_thinking(delta: dict[str, Any]) -> bool:
    """Whether the delta carries a reasoning detail, which opens the thinking block upstream."""
    details = delta.get("reasoning_details")
    return isinstance(details, list) and any(map(_is_reasoning_detail, details))


def content_text(delta: dict[str, Any]) -> str | None:
    """The text `delta.content` appends (`String()` of a non-empty array, as upstream's `+=`)."""
    content = delta.get("content")
    if isinstance(content, str | list) and len(content) > 0:
        return js_string(content)
    return None


def stop(finish_reason: Any) -> tuple[str, str | None]:
    """Upstream's `mapStopReason`: the stop reason, and an error message when it is an error."""
    if finish_reason is None:
        return "error", "Stream ended without finish_reason"
    reason = _STOP_REASONS.get(finish_reason) if isinstance(finish_reason, str) else None
    if reason is None:
        return "error", f"Provider finish_reason: {js_string(finish_reason)}"
    return reason, None


def type_name(value: Any) -> str:
    """A JSON value's type, in words: "an object", "null", "a number"."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if is_number(value):
        return "a number"
    return names.get(type(value), type(value).__name__)


def _is_reasoning_detail(detail: Any) -> bool:
    """Upstream's `isOpenAIReasoningDetail`."""
    if not isinstance(detail, dict):
        return False
    if "id" in detail and not (detail["id"] is None or isinstance(detail["id"], str)):
        return False
    if "format" in detail and not isinstance(detail["format"], str):
        return False
    if "index" in detail and not is_number(detail["index"]):
        return False
    kind = detail.get("type")
    if kind == "reasoning.summary":
        return isinstance(detail.get("summary"), str)
    if kind == "reasoning.encrypted":
        return isinstance(detail.get("data"), str)
    if kind == "reasoning.text":
        signature = detail.get("signature")
        return isinstance(detail.get("text"), str) and (
            signature is None or isinstance(signature, str)
        )
    return False
