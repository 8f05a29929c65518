"""A chunk's fragments and their argument text, for the minimiser: read, found, replaced.

A record is never changed: `with_calls` and `with_texts` return changed copies, whose `text`
is the new value's JSON, so that the result reads back as the same records.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from webapp.core.chunks import select_choice
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.trace import Trace

Place = tuple[int, int, int]
"""A fragment: its record's position in the list, its choice's position, its own position."""


def call_lists(value: Any) -> list[tuple[int, list[Any]]]:
    """Each choice's `delta.tool_calls` list in a chunk, with the choice's position."""
    if not isinstance(value, dict) or not isinstance(value.get("choices"), list):
        return []
    found = []
    for position, choice in enumerate(value["choices"]):
        delta = choice.get("delta") if isinstance(choice, dict) else None
        calls = delta.get("tool_calls") if isinstance(delta, dict) else None
        if isinstance(calls, list) and calls:
            found.append((position, calls))
    return found


def with_calls(record: Record, choice: int, calls: list[Any]) -> Record:
    """The record with the choice at position `choice` holding `calls` as its fragments."""
    value = copy.copy(record.value)
    value["choices"] = list(value["choices"])
    picked = dict(value["choices"][choice])
    picked["delta"] = {**picked["delta"], "tool_calls": calls}
    value["choices"][choice] = picked
    return replace(record, value=value, text=dumps(value).decode("utf-8"), wrapped=None)


def with_texts(
    records: Sequence[Record], places: Sequence[Place], texts: Sequence[str]
) -> list[Record]:
    """The records with the fragment at each of `places` given the argument text at the same
    position in `texts`."""
    out = list(records)
    for (at, choice, position), text in zip(places, texts, strict=True):
        calls = list(dict(call_lists(out[at].value))[choice])
        fragment = calls[position]
        calls[position] = {**fragment, "function": {**fragment["function"], "arguments": text}}
        out[at] = with_calls(out[at], choice, calls)
    return out


def pieces_of(
    records: Sequence[Record], trace: Trace, number: int, options: Options
) -> list[Place] | None:
    """Where each piece of the text of block `number` of `trace` (the records' under `options`)
    is; None unless every piece is one fragment's `function.arguments`, as it was read."""
    block, columns = trace.blocks[number], trace.columns
    found: list[Place | None] = [None] * len(block.pieces)
    for step in range(min(len(records), len(columns))):
        rows = columns.fragment_rows(step)
        for row in rows:
            piece = columns.fragment_piece[row]
            if columns.fragment_block[row] == number and piece >= 0:
                choice = _followed(records[step], options)
                found[piece] = None if choice is None else (step, choice, row - rows.start)
    places = [place for place in found if place is not None]
    if len(places) < len(found):
        return None
    for (at, choice, position), text in zip(places, block.pieces, strict=True):
        if _arguments_of(records[at], choice, position) != text:
            return None
    return places


def _followed(record: Record, options: Options) -> int | None:
    """The position in the record's `choices` of the choice the assembler followed."""
    choices = record.value.get("choices") if isinstance(record.value, dict) else None
    chosen = select_choice(choices, options.choice).choice
    if chosen is None or not isinstance(choices, list):
        return None
    return next((at for at, choice in enumerate(choices) if choice is chosen), None)


def _arguments_of(record: Record, choice: int, position: int) -> Any:
    calls = dict(call_lists(record.value)).get(choice) or []
    fragment = calls[position] if position < len(calls) else None
    function = fragment.get("function") if isinstance(fragment, dict) else None
    return function.get("arguments") if isinstance(function, dict) else None
