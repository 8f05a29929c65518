"""A non-stream answer: one `chat.completion` JSON, read as the calls its `message.tool_calls`
hold.

The same request sent with `"stream": false` gets one JSON body (`{"object":
"chat.completion", "choices": [{"message": {"tool_calls": [...]}}]}`) where a stream gets chunks.
A reading is an answer when its records hold such a body and no chunk of a stream (`delta`):
`answer_in` then gives its calls for the chosen choice, or raises `ReaderError` saying what is
wrong (no `choices`, no such choice, `tool_calls` not a list). `as_records` writes the calls as
the chunks of a clean stream (one chunk a call, whole arguments, then the finish), so that a
diff can hold an answer beside a stream by the same means. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from webapp.core.contract.intended import Call
from webapp.core.readers.refusal import ANSWER, ANSWER_RECORDS, is_answer, looks_like_answer
from webapp.core.records import ReaderError, ReadResult, Record

OBJECT = ANSWER
__all__ = [
    "ANSWER_RECORDS",
    "OBJECT",
    "Answer",
    "answer_in",
    "answer_or_none",
    "as_records",
    "is_answer",
    "looks_like_answer",
]


@dataclass(frozen=True, slots=True)
class Answer:
    """The calls a non-stream answer holds, in order, and what else it says."""

    calls: tuple[Call, ...]
    finish_reason: str | None
    model: str | None
    line: int | None
    """The input line its body starts on."""


def answer_in(result: ReadResult, choice: int = 0) -> Answer | None:
    """The answer a reading holds (None when it is a stream); ReaderError when it is an answer
    whose calls cannot be read."""
    if not is_answer(result.records):
        return None
    record = next(r for r in result.records if r.kind == "chunk")
    value = record.value
    where = f"the {OBJECT} answer on line {record.line}" if record.line else f"the {OBJECT} answer"
    choices = value.get("choices")
    if not isinstance(choices, list) or not choices:
        shown = "no choices" if choices in (None, []) else "choices that are not a list"
        raise ReaderError(
            f"{where} has {shown}: it holds no message, so no call to compare "
            '(expected {"choices": [{"message": {"tool_calls": [...]}}]})'
        )
    chosen = [c for c in choices if isinstance(c, dict) and c.get("index", 0) == choice]
    if not chosen:
        raise ReaderError(f"{where} has no choice with index {choice}")
    message = chosen[0].get("message")
    if not isinstance(message, dict):
        raise ReaderError(f"{where}: choice {choice} has no message object")
    finish = chosen[0].get("finish_reason")
    model = value.get("model")
    return Answer(
        calls=_calls(message.get("tool_calls"), where),
        finish_reason=finish if isinstance(finish, str) else None,
        model=model if isinstance(model, str) else None,
        line=record.line,
    )


def answer_or_none(result: ReadResult, choice: int = 0) -> Answer | None:
    """`answer_in`, None also for an answer whose calls cannot be read (its reading says so)."""
    try:
        return answer_in(result, choice)
    except ReaderError:
        return None


def _calls(tool_calls: Any, where: str) -> tuple[Call, ...]:
    if tool_calls is None:
        return ()
    if not isinstance(tool_calls, list):
        raise ReaderError(
            f"{where}: message.tool_calls is {type(tool_calls).__name__}, not a list of calls"
        )
    calls = []
    for number, item in enumerate(tool_calls):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict):
            raise ReaderError(f"{where}: tool call {number + 1} has no function object")
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):  # not the documented type, compared as its JSON
            arguments = json.dumps(arguments, ensure_ascii=False)
        given = item.get("id")
        call_id = None if given in (None, "") else given
        calls.append(Call(call_id, function.get("name"), arguments))
    return tuple(calls)


def as_records(answer: Answer, choice: int = 0) -> tuple[Record, ...]:
    """The answer's calls as the chunks of a clean stream: one chunk a call (its index, id,
    name and whole arguments), then the chunk with the finish reason, then `[DONE]`."""
    records = []
    for number, call in enumerate(answer.calls):
        entry = {"index": number, "id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments}}  # fmt: skip
        records.append(_chunk({"tool_calls": [entry]}, None, answer, choice))
    records.append(_chunk({}, answer.finish_reason, answer, choice))
    return (*records, Record("done", answer.line, None, "[DONE]"))


def _chunk(delta: dict[str, Any], finish: str | None, answer: Answer, choice: int) -> Record:
    value: dict[str, Any] = {
        "object": "chat.completion.chunk",
        "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
    }
    if answer.model is not None:
        value["model"] = answer.model
    return Record("chunk", answer.line, value, json.dumps(value, ensure_ascii=False))
