"""The trace's steps as schema-1 JSON, written from the columns: step by step, never as one
object tree.

`steps_batch` makes a run of steps' JSON objects straight from their rows (no `Step` in
between); `Trace.to_json` uses it for every step. `document_parts` writes a whole document:
the head, then the steps in batches (each batch's objects serialized by orjson and dropped),
then the blocks, content, anomalies, summary and whatever else the caller adds at the end. The
bytes are those `webapp.core.jsoncheck.dumps` gives for the same document built whole: each batch
is serialized at the depth it has in the document (orjson refuses nesting beyond its limit),
and when orjson refuses a value (a lone surrogate, an integer beyond 64 bits) the caller falls
back to the whole-document path, which `dumps` writes as ASCII JSON. The trace writes itself
with this module (`Trace.to_json`, `Trace.json_parts`); the documents around it are
`webapp.core.tracejson`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from webapp.core.blocks import Block
from webapp.core.columns import (
    END_EVENTS,
    EVENT_TYPES,
    NONE,
    STEP_KINDS,
    STOP_EVENTS,
    Columns,
)
from webapp.core.rules import RULE_NAMES

BATCH = 1024
"""Steps serialized at a time."""
_Reasons = dict[tuple[Any, ...], str]
_SIMPLE_EVENTS = frozenset(range(len(EVENT_TYPES))) - END_EVENTS - STOP_EVENTS


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
    walking the fragment and event rows once (a step's rows follow the previous step's).

    `reasons` keeps the words of verdicts that repeat along the stream: an argument piece with
    no id and no name is worded by its rule, index, block and index miss alone.
    """
    total = len(columns)
    step_fragment, step_event = columns.step_fragment, columns.step_event
    f0, e0 = step_fragment[start], step_event[start]
    f1 = len(columns.fragment_rule) if stop >= total else step_fragment[stop]
    e1 = len(columns.event_type) if stop >= total else step_event[stop]
    # The integer columns as lists of Python ints (`list[Any]`: compiled, `list[int]` would
    # turn each into a machine integer and back into a new object, webapp/compiled.py).
    firsts: list[Any] = step_fragment[start:stop].tolist()
    firsts.append(f1)
    event_firsts: list[Any] = step_event[start:stop].tolist()
    event_firsts.append(e1)
    rules: list[Any] = list(columns.fragment_rule[f0:f1])
    blocks: list[Any] = columns.fragment_block[f0:f1].tolist()
    index_misses: list[Any] = columns.fragment_index_miss[f0:f1].tolist()
    indexes, ids = columns.fragment_index[f0:f1], columns.fragment_id[f0:f1]
    names, arguments = columns.fragment_name[f0:f1], columns.fragment_arguments[f0:f1]
    types: list[Any] = list(columns.event_type[e0:e1])
    content_indexes: list[Any] = columns.event_index[e0:e1].tolist()
    deltas = columns.event_delta[e0:e1]
    kinds: list[Any] = list(columns.step_kind[start:stop])
    lines: list[Any] = columns.step_line[start:stop].tolist()
    errors, notes, finishes = columns.errors, columns.notes, columns.finish_reasons
    unassembled, late, oddities, weighed = (
        columns.unassembled,
        columns.late,
        columns.oddities,
        columns.weighed,
    )
    odd = errors or notes or unassembled or finishes  # most streams have none of them
    reason = columns.reason
    rule_names, event_names, step_kinds = RULE_NAMES, EVENT_TYPES, STEP_KINDS
    out: list[dict[str, Any]] = []
    for k in range(stop - start):
        number = start + k
        first = firsts[k]
        fragments: list[dict[str, Any]] = []
        for row in range(first, firsts[k + 1]):
            j = row - f0
            code, index, block = rules[j], indexes[j], blocks[j]
            call_id, name = ids[j], names[j]
            if (
                call_id is None
                and name is None
                and (index is None or type(index) is int)
                and not (weighed and row in weighed)
            ):
                key = (code, index, block, index_misses[j])
                why = reasons.get(key)
                if why is None:
                    why = reasons[key] = reason(row)
            else:
                why = reason(row, reasons)
            fragment = {
                "position": row - first,
                "index": index,
                "id": call_id,
                "name": name,
                "arguments": arguments[j],
                "rule": rule_names[code],
                "block": None if block == NONE else block,
                "reason": why,
            }
            if row in late:
                fragment["late"] = True
            if row in oddities:
                fragment["oddities"] = list(oddities[row])
            fragments.append(fragment)
        events: list[dict[str, Any]] = []
        for row in range(event_firsts[k], event_firsts[k + 1]):
            j = row - e0
            code = types[j]
            index = content_indexes[j]
            delta = deltas[j]
            if code in _SIMPLE_EVENTS and (index != NONE or delta is None):
                if index == NONE:
                    event: dict[str, Any] = {"type": event_names[code]}
                elif delta is None:
                    event = {"type": event_names[code], "contentIndex": index}
                else:
                    event = {"type": event_names[code], "contentIndex": index, "delta": delta}
                events.append(event)
            else:
                events.append(_event_json(columns, row, content))
        line = lines[k]
        step: dict[str, Any] = {
            "step": number,
            "line": columns.lines.get(number) if line == NONE else line,
            "kind": step_kinds[kinds[k]],
            "fragments": fragments,
            "events": events,
        }
        if odd:
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
    total = len(columns)
    for start in range(0, total, BATCH):
        batch = steps_batch(columns, start, min(start + BATCH, total), content, reasons)
        if start:
            yield b","  # a part of its own: joined to the batch, a megabyte would be copied
        yield orjson.dumps([batch])[2:-2]  # [[steps]]: their depth in the document
    yield b"]"
    for key, value in tail.items():  # one at a time: the blocks' text may be megabytes
        yield b","
        yield orjson.dumps({key: value})[1:-1]  # {key: value}: its depth in the document
    yield b"}"
