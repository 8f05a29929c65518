"""Every client's view side by side: one row per call, cells compared with `adr-0019`.

Rows are adr-0019's calls. Each other column's calls are placed on them by call id where both
have one, then in order; calls left over go on extra rows (the k-th extra row holds each
column's k-th leftover call, so that phantom calls line up). A cell differs from adr-0019 when
its call is missing or extra, or its name, id (when both have one), arguments (compared as JSON
values when both parse, else as text) or flag differ.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.words import count
from webapp.lenses.pins import CLIENTS
from webapp.lenses.results import Call, LensResult

REFERENCE = "adr-0019"


@dataclass(frozen=True, slots=True)
class Cell:
    """One column's call on one row, and what differs from the reference's."""

    call: Call | None
    differs: tuple[str, ...] = ()
    """Among "missing", "extra", "name", "id", "arguments", "flagged", and "error" (the column
    failed before handing over any call)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One call the stream means (or an extra call some column made)."""

    label: str
    reference: Call | None
    cells: tuple[Cell | None, ...]
    """In column order; None where the column has nothing to say (unavailable)."""


@dataclass(frozen=True, slots=True)
class Matrix:
    """The columns (the clients, then the policies), the rows, and the verdict in one line."""

    columns: tuple[LensResult, ...]
    rows: tuple[Row, ...]
    verdict: str

    def column(self, name: str) -> LensResult | None:
        """The column of a client or policy by name."""
        return next((column for column in self.columns if column.client == name), None)

    def to_json(self) -> dict[str, Any]:
        """`{"clients": [...], "policies": [...], "rows": [...], "verdict"}`."""
        return {
            "clients": [column.to_json() for column in self.columns if column.client in CLIENTS],
            "policies": [
                column.to_json() for column in self.columns if column.client not in CLIENTS
            ],
            "rows": [
                {
                    "label": row.label,
                    "cells": {
                        column.client: None if cell is None else list(cell.differs)
                        for column, cell in zip(self.columns, row.cells, strict=True)
                    },
                }
                for row in self.rows
            ],
            "verdict": self.verdict,
        }


def build(columns: Sequence[LensResult]) -> Matrix:
    """Align every column's calls on the reference's and say in one line who gets what wrong."""
    reference = next((column for column in columns if column.client == REFERENCE), None)
    ref_calls = reference.calls if reference is not None else ()
    placed = [_place(ref_calls, column.calls) for column in columns]
    extra_rows = max((len(extra) for _, extra in placed), default=0)
    rows: list[Row] = []
    for index, ref in enumerate(ref_calls):
        cells = tuple(
            _cell(column, ref, matched[index])
            for column, (matched, _) in zip(columns, placed, strict=True)
        )
        rows.append(Row(_label(ref, index), ref, cells))
    for k in range(extra_rows):
        cells = tuple(
            _cell(column, None, extra[k] if k < len(extra) else None)
            for column, (_, extra) in zip(columns, placed, strict=True)
        )
        rows.append(Row(f"extra call {k + 1}", None, cells))
    return Matrix(tuple(columns), tuple(rows), verdict(tuple(columns), rows))


def _place(
    reference: Sequence[Call], calls: Sequence[Call]
) -> tuple[list[Call | None], list[Call]]:
    """Each reference call's counterpart (by id, then by order), and the calls left over."""
    matched: list[Call | None] = [None] * len(reference)
    left: list[Call] = []
    for call in calls:
        at = next(
            (
                i
                for i, ref in enumerate(reference)
                if matched[i] is None and call.id and ref.id == call.id
            ),
            None,
        )
        if at is None:
            left.append(call)
        else:
            matched[at] = call
    extra: list[Call] = []
    free = [i for i, call in enumerate(matched) if call is None]
    for call in left:
        if free and not (call.id and _has_id(reference, call.id)):
            matched[free.pop(0)] = call
        else:
            extra.append(call)
    return matched, extra


def _has_id(calls: Sequence[Call], id_: str) -> bool:
    return any(call.id == id_ for call in calls)


def _cell(column: LensResult, ref: Call | None, call: Call | None) -> Cell | None:
    if column.status == "unavailable":
        return None
    if ref is None and call is None:
        return Cell(None)
    if call is None and column.status == "error" and not column.calls:
        return Cell(None, ("error",))
    if call is None:
        return Cell(None, ("missing",))
    if ref is None:
        return Cell(call, ("extra",))
    differs = []
    if (call.name or "") != (ref.name or ""):
        differs.append("name")
    if call.id and ref.id and call.id != ref.id:
        differs.append("id")
    if not same_arguments(call.arguments, ref.arguments):
        differs.append("arguments")
    if bool(call.invalid) != bool(ref.invalid):
        differs.append("flagged")
    return Cell(call, tuple(differs))


_MISSING = object()


def same_arguments(left: str | None, right: str | None) -> bool:
    """Whether two arguments mean the same: equal JSON values when both parse, else equal text."""
    if left == right:
        return True
    a, b = _parse(left), _parse(right)
    if a is _MISSING or b is _MISSING:
        return False
    return bool(a == b)


def _parse(text: str | None) -> Any:
    if text is None:
        return _MISSING
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


def _label(call: Call, index: int) -> str:
    name = call.name or "(no name)"
    return f"{name} ({call.id})" if call.id else f"{name} (call {index + 1})"


def verdict(columns: Sequence[LensResult], rows: Sequence[Row]) -> str:
    """One line: how many clients get which call wrong, who raises, who is not installed."""
    clients = [i for i, column in enumerate(columns) if column.client in CLIENTS]
    ran = [i for i in clients if columns[i].status != "unavailable"]
    parts: list[str] = []
    wrong: dict[str, list[str]] = {}
    extra: dict[tuple[str, str], int] = {}
    for i in ran:
        for row in rows:
            cell = row.cells[i]
            if cell is None or not cell.differs or "error" in cell.differs:
                continue
            if row.reference is None:
                if "extra" in cell.differs and cell.call is not None:
                    kind = "extra call" if cell.call.name else "phantom call"
                    key = (columns[i].client, kind)
                    extra[key] = extra.get(key, 0) + 1
                continue
            name = row.reference.name or "a nameless call"
            what = "call" if "missing" in cell.differs else _what(cell.differs)
            wrong.setdefault(f"{name}'s {what}", []).append(columns[i].client)
    for subject, who in wrong.items():
        names = sorted(set(who))
        verb = "gets" if len(names) == 1 else "get"
        if subject.endswith("'s call"):
            subject, verb = subject.removesuffix("'s call"), "miss" if len(names) > 1 else "misses"
            who_text = ", ".join(names)
            parts.append(f"{len(names)} of {len(ran)} clients {verb} {subject} ({who_text})")
        else:
            parts.append(f"{len(names)} of {len(ran)} clients {verb} {subject} wrong "
                         f"({', '.join(names)})")  # fmt: skip
    for (client, kind), n in extra.items():
        parts.append(f"{client} adds {count(n, kind)}")
    for i in ran:
        if columns[i].status == "error":
            parts.append(f"{columns[i].client} fails ({_short(columns[i].error)})")
    absent = [columns[i].client for i in clients if columns[i].status == "unavailable"]
    if not parts and ran:
        parts.append(f"all {count(len(ran), 'client')} agree with {REFERENCE}")
    if absent:
        parts.append(f"not installed: {', '.join(absent)}")
    text = "; ".join(parts) or "no client ran"
    return text[0].upper() + text[1:]


def _what(differs: tuple[str, ...]) -> str:
    shown = [d for d in differs if d in ("name", "id", "arguments")]
    if not shown:
        return "flag"
    return " and ".join(shown)


def _short(error: str | None, limit: int = 90) -> str:
    text = (error or "no message").strip().splitlines()[0] if error else "no message"
    return text if len(text) <= limit else text[: limit - 3] + "..."
