"""The schema-1 trace as JSON, written from the columns: step by step, never as one object tree.

`step_json` makes one step's JSON object straight from its rows (no `Step` in between);
`Trace.to_json` uses it for every step. `document_parts` writes the whole document as bytes:
the head, then the steps in batches (each batch's objects serialized by orjson and dropped),
then the blocks, content, anomalies, summary and whatever else the caller adds at the end. The
bytes are those `webapp.jsoncheck.dumps` gives for the same document built whole: each batch
is serialized at the depth it has in the document (orjson refuses nesting beyond its limit),
and when orjson refuses a value (a lone surrogate, an integer beyond 64 bits) the caller falls
back to the whole-document path, which `dumps` writes as ASCII JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from webapp.blocks import Block
from webapp.columns import END_EVENTS, EVENT_TYPES, NONE, STEP_KINDS, STOP_EVENTS, Columns
from webapp.rules import RULE_NAMES

BATCH = 4096
"""Steps serialized at a time."""
_Reasons = dict[tuple[Any, ...], str]


def step_json(
    columns: Columns,
    number: int,
    blocks: Sequence[Block],
    content: Sequence[Block],
    reasons: _Reasons | None = None,
) -> dict[str, Any]:
    """Step `number` as schema-1 JSON, as `Step.to_json` gives it, built from the rows."""
    rows = columns.fragment_rows(number)
    first = rows.start
    fragments = [_fragment_json(columns, row, row - first, reasons) for row in rows]
    events = [_event_json(columns, row, content) for row in columns.event_rows(number)]
    line = columns.step_line[number]
    out: dict[str, Any] = {
        "step": number,
        "line": columns.lines.get(number) if line == NONE else line,
        "kind": STEP_KINDS[columns.step_kind[number]],
        "fragments": fragments,
        "events": events,
    }
    error = columns.errors.get(number)
    if error is not None:
        out["error"] = error
    note = columns.notes.get(number)
    if note is not None:
        out["note"] = note
    if number in columns.unassembled:
        out["assembled"] = False
    finish = columns.finish_reasons.get(number)
    if finish is not None:
        out["finish_reason"] = finish
    return out


def _fragment_json(
    columns: Columns, row: int, position: int, reasons: _Reasons | None
) -> dict[str, Any]:
    block: int | None = columns.fragment_block[row]
    if block == NONE:
        block = None
    out = {
        "position": position,
        "index": columns.fragment_index[row],
        "id": columns.fragment_id[row],
        "name": columns.fragment_name[row],
        "arguments": columns.fragment_arguments[row],
        "rule": RULE_NAMES[columns.fragment_rule[row]],
        "block": block,
        "reason": columns.reason(row, reasons),
    }
    if row in columns.late:
        out["late"] = True
    oddities = columns.oddities.get(row)
    if oddities:
        out["oddities"] = list(oddities)
    return out


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


def steps_json(
    columns: Columns, blocks: Sequence[Block], content: Sequence[Block]
) -> Iterator[dict[str, Any]]:
    """Every step's JSON object, in order."""
    reasons: _Reasons = {}
    for number in range(len(columns)):
        yield step_json(columns, number, blocks, content, reasons)


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
        batch = [
            step_json(columns, number, blocks, content, reasons)
            for number in range(start, min(start + BATCH, total))
        ]
        # [[step, ...]] puts each step at its depth in the document: {"steps": [step, ...]}.
        text = orjson.dumps([batch])[2:-2]
        yield text if start == 0 else b"," + text
    yield b"]," + orjson.dumps(tail)[1:]
