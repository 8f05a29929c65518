"""The schema-1 trace as JSON, written from the columns: step by step, never as one object tree.

`steps_batch` makes a run of steps' JSON objects straight from their rows (no `Step` in
between); `Trace.to_json` uses it for every step. `document_parts` writes the whole document:
the head, then the steps in batches (each batch's objects serialized by orjson and dropped),
then the blocks, content, anomalies, summary and whatever else the caller adds at the end. The
bytes are those `webapp.core.jsoncheck.dumps` gives for the same document built whole: each batch
is serialized at the depth it has in the document (orjson refuses nesting beyond its limit),
and when orjson refuses a value (a lone surrogate, an integer beyond 64 bits) the caller falls
back to the whole-document path, which `dumps` writes as ASCII JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import orjson

from webapp.core.blocks import Block
from webapp.core.columns import (
    CHUNK,
    END_EVENTS,
    EVENT_TYPES,
    NONE,
    STEP_KINDS,
    STOP_EVENTS,
    TOOLCALL_DELTA,
    Columns,
)
from webapp.core.rules import RULE_NAMES

BATCH = 4096
"""Steps serialized at a time."""
_Reasons = dict[tuple[Any, ...], str]
_Framing = dict[tuple[Any, ...], tuple[bytes, bytes]]


def _event_json(columns: Columns, row: int, content: Sequence[Block]) -> dict[str, Any]:
    code = columns.event_type[row]
    out: dict[str, Any] = {"type": EVENT_TYPES[code]}
    index = columns.event_index[row]
    if index != NONE:
        out["contentIndex"] = index
    delta = columns.event_delta[row]
    if delta is not None:
        out["delta"] = delta
    if code in STOP_EVENTS:
        reason, message = columns.event_stop[row]
        out["reason"] = reason
        if message is not None:
            out["message"] = message
    elif code in END_EVENTS:
        out["content"] = content[index].text
    return out


def steps_batch(
    columns: Columns,
    start: int,
    stop: int,
    content: Sequence[Block],
    reasons: _Reasons,
) -> list[dict[str, Any]]:
    """Steps `start` to `stop` (excluded) as schema-1 JSON, as `Step.to_json` gives them,
    walking the fragment and event rows once (a step's rows follow the previous step's)."""
    total = len(columns)
    kinds, lines = columns.step_kind, columns.step_line
    step_fragment, step_event = columns.step_fragment, columns.step_event
    indexes, ids, names = columns.fragment_index, columns.fragment_id, columns.fragment_name
    arguments, rules, blocks = (
        columns.fragment_arguments,
        columns.fragment_rule,
        columns.fragment_block,
    )
    types, content_indexes, deltas = columns.event_type, columns.event_index, columns.event_delta
    errors, notes, finishes = columns.errors, columns.notes, columns.finish_reasons
    unassembled, late, oddities = columns.unassembled, columns.late, columns.oddities
    reason = columns.reason
    rule_names, event_names, step_kinds = RULE_NAMES, EVENT_TYPES, STEP_KINDS
    simple = frozenset(range(len(EVENT_TYPES))) - END_EVENTS - STOP_EVENTS
    fragment_end = len(rules) if stop >= total else step_fragment[stop]
    event_end = len(types) if stop >= total else step_event[stop]
    out: list[dict[str, Any]] = []
    for number in range(start, stop):
        first = step_fragment[number]
        last = step_fragment[number + 1] if number + 1 < stop else fragment_end
        fragments: list[dict[str, Any]] = []
        for row in range(first, last):
            block: int | None = blocks[row]
            fragment = {
                "position": row - first,
                "index": indexes[row],
                "id": ids[row],
                "name": names[row],
                "arguments": arguments[row],
                "rule": rule_names[rules[row]],
                "block": None if block == NONE else block,
                "reason": reason(row, reasons),
            }
            if row in late:
                fragment["late"] = True
            if row in oddities:
                fragment["oddities"] = list(oddities[row])
            fragments.append(fragment)
        events: list[dict[str, Any]] = []
        last = step_event[number + 1] if number + 1 < stop else event_end
        for row in range(step_event[number], last):
            code = types[row]
            index = content_indexes[row]
            delta = deltas[row]
            if code in simple and (index != NONE or delta is None):
                if index == NONE:
                    event: dict[str, Any] = {"type": event_names[code]}
                elif delta is None:
                    event = {"type": event_names[code], "contentIndex": index}
                else:
                    event = {"type": event_names[code], "contentIndex": index, "delta": delta}
                events.append(event)
            else:
                events.append(_event_json(columns, row, content))
        line = lines[number]
        step: dict[str, Any] = {
            "step": number,
            "line": columns.lines.get(number) if line == NONE else line,
            "kind": step_kinds[kinds[number]],
            "fragments": fragments,
            "events": events,
        }
        if number in errors:
            step["error"] = errors[number]
        if number in notes:
            step["note"] = notes[number]
        if number in unassembled:
            step["assembled"] = False
        if number in finishes:
            step["finish_reason"] = finishes[number]
        out.append(step)
    return out


def steps_json(
    columns: Columns, blocks: Sequence[Block], content: Sequence[Block]
) -> Iterator[dict[str, Any]]:
    """Every step's JSON object, in order."""
    reasons: _Reasons = {}
    for start in range(0, len(columns), BATCH):
        yield from steps_batch(columns, start, min(start + BATCH, len(columns)), content, reasons)


def document_parts(
    head: dict[str, Any],
    columns: Columns,
    blocks: Sequence[Block],
    content: Sequence[Block],
    tail: dict[str, Any],
) -> Iterator[bytes]:
    """`{**head, "steps": [...], **tail}` as compact JSON bytes, the steps a batch at a time.

    Raises orjson's `JSONEncodeError` (a `TypeError`) where `orjson.dumps` of the whole
    document would.
    """
    yield orjson.dumps(head)[:-1] + b',"steps":['
    reasons: _Reasons = {}
    framing: _Framing = {}
    total = len(columns)
    for start in range(0, total, BATCH):
        text = steps_bytes(columns, start, min(start + BATCH, total), content, reasons, framing)
        yield text if start == 0 else b"," + text
    yield b"]," + orjson.dumps(tail)[1:]


def steps_bytes(
    columns: Columns,
    start: int,
    stop: int,
    content: Sequence[Block],
    reasons: _Reasons,
    framing: _Framing,
) -> bytes:
    """Steps `start` to `stop` (excluded) as the JSON text of `steps_batch`, comma-separated.

    Most steps of a long stream are one fragment appending text, one `toolcall_delta`: those
    are written from a template, the fragment's keys, rule and reason serialized once per
    distinct verdict (`framing`) and only the step, line and text serialized each time. Every
    other step goes through `steps_batch` and orjson, at its depth in the document.
    """
    kinds, lines = columns.step_kind, columns.step_line
    step_fragment, step_event = columns.step_fragment, columns.step_event
    rules, types, deltas = columns.fragment_rule, columns.event_type, columns.event_delta
    content_indexes, arguments = columns.event_index, columns.fragment_arguments
    errors, notes, unassembled = columns.errors, columns.notes, columns.unassembled
    finishes = columns.finish_reasons
    fragment_end = len(rules) if stop >= len(columns) else step_fragment[stop]
    event_end = len(types) if stop >= len(columns) else step_event[stop]
    dumps = orjson.dumps
    out: list[bytes] = []
    rows = step_fragment[start:stop].tolist()
    rows.append(fragment_end)
    events = step_event[start:stop].tolist()
    events.append(event_end)
    odd = errors or notes or unassembled or finishes  # most streams have none of them
    for number, row, next_row, event, next_event, kind, line in zip(
        range(start, stop), rows, islice(rows, 1, None), events, islice(events, 1, None),
        kinds[start:stop], lines[start:stop], strict=False,  # `rows`, `events`: one more
    ):  # fmt: skip
        frame = None
        if (
            next_row == row + 1
            and next_event == event + 1
            and kind == CHUNK
            and line != NONE
            and types[event] == TOOLCALL_DELTA
            and content_indexes[event] != NONE
            and deltas[event] is not None
            and not (
                odd
                and (
                    number in errors
                    or number in notes
                    or number in unassembled
                    or number in finishes
                )
            )
        ):
            frame = _framing(columns, row, reasons, framing)
        if frame is None:
            step = steps_batch(columns, number, number + 1, content, reasons)
            out.append(dumps([step])[2:-2])  # [[step]]: its depth in the document
            continue
        text = arguments[row]
        delta = deltas[event]
        text_json = b"null" if text is None else dumps(text)
        delta_json = text_json if delta is text else dumps(delta)
        out.append(
            b'{"step":%d,"line":%d,"kind":"chunk","fragments":[%b%b%b],"events":[{"type":'
            b'"toolcall_delta","contentIndex":%d,"delta":%b}]}'
            % (number, line, frame[0], text_json, frame[1], content_indexes[event], delta_json)
        )  # fmt: skip
    return b",".join(out)


def _framing(
    columns: Columns, row: int, reasons: _Reasons, framing: _Framing
) -> tuple[bytes, bytes] | None:
    """A fragment's JSON before and after its arguments, or None for one not plain enough."""
    if row in columns.late or row in columns.oddities or row in columns.weighed:
        return None
    index, call_id, name = (
        columns.fragment_index[row],
        columns.fragment_id[row],
        columns.fragment_name[row],
    )
    if not (
        (index is None or type(index) is int)
        and (call_id is None or type(call_id) is str)
        and (name is None or type(name) is str)
    ):
        return None
    block = columns.fragment_block[row]
    key = (columns.fragment_rule[row], index, call_id, name, block,
           columns.fragment_index_miss[row], columns.fragment_id_miss[row])  # fmt: skip
    found = framing.get(key)
    if found is None:
        keys = {"position": 0, "index": index, "id": call_id, "name": name}
        verdict = {
            "rule": RULE_NAMES[key[0]],
            "block": None if block == NONE else block,
            "reason": columns.reason(row, reasons),
        }
        found = framing[key] = (
            orjson.dumps(keys)[:-1] + b',"arguments":',
            b"," + orjson.dumps(verdict)[1:],
        )
    return found
