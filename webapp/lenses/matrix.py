"""Every client's view side by side: one row per call, cells compared with what the stream means.

Rows are the intended reading's calls (`webapp.core.contract`): each column's calls are placed
on them by call id where both have one, then in order, the way the grades pair them
(`webapp.triage.verdict`); calls left over go on extra rows (the k-th extra row holds each
column's k-th leftover call, so that phantom calls line up). A cell differs when its call is
missing or extra, or its name, id (when both have one), arguments (equal as JSON values when
both parse, blank meaning `{}`) or flag differ. A stream with no intended reading has nothing
to grade against: its rows follow adr-0019's calls only to line the columns up (`reference`
says which), cells are marked where they differ from that guess, and the comparison counts
the different choices instead of calling any of them wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.contract import Intended
from webapp.core.words import count
from webapp.lenses.pins import CLIENTS
from webapp.lenses.results import Call, LensResult

NOT_RAN = ("unavailable", "skipped")
"""A column's statuses when its client did not run (not installed; not a stream it reads)."""
REFERENCE = "adr-0019"
"""The column the rows follow when the stream has no intended reading."""
INTENDED = "intended"


@dataclass(frozen=True, slots=True)
class Cell:
    """One column's call on one row, and what differs from the row's call."""

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
    """In column order; None where the column has nothing to say (unavailable, or skipped)."""


@dataclass(frozen=True, slots=True)
class Matrix:
    """The columns (the clients, then the policies), the rows, and the comparison in one line."""

    columns: tuple[LensResult, ...]
    rows: tuple[Row, ...]
    comparison: str
    reference: str = INTENDED
    """`intended`: the rows are the calls the stream means; `adr-0019`: the stream has no
    intended reading, and the rows follow adr-0019's guess only to line the columns up."""

    @property
    def legend(self) -> str:
        """What the rows are and what a cell marked `≠` differs from, in one sentence."""
        if self.reference == INTENDED:
            return "One row per call the stream means; ≠ marks a cell that differs from it."
        return (f"The rows follow {REFERENCE}'s guess only to line the calls up; ≠ marks a "
                "cell unlike that guess, which is not to say it is wrong.")  # fmt: skip

    def column(self, name: str) -> LensResult | None:
        """The column of a client or policy by name."""
        return next((column for column in self.columns if column.client == name), None)

    def to_json(self) -> dict[str, Any]:
        """`{"clients": [...], "policies": [...], "reference", "rows": [...], "comparison"}`."""
        return {
            "clients": [column.to_json() for column in self.columns if column.client in CLIENTS],
            "policies": [
                column.to_json() for column in self.columns if column.client not in CLIENTS
            ],
            "reference": self.reference,
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
            "comparison": self.comparison,
        }


def build(columns: Sequence[LensResult], intended: Intended | None) -> Matrix:
    """Align every column's calls on the calls the stream means (`intended`; with none, on
    adr-0019's) and say in one line who gets which call wrong."""
    same: Callable[[str | None, str | None], bool]
    if intended is not None:
        ref_calls: Sequence[Call] = tuple(_meant(call) for call in intended.calls)
        reference, same = INTENDED, same_meaning
    else:
        found = next((column for column in columns if column.client == REFERENCE), None)
        ref_calls = found.calls if found is not None else ()
        reference, same = REFERENCE, same_arguments
    placed = [_place(ref_calls, column.calls) for column in columns]
    extra_rows = max((len(extra) for _, extra in placed), default=0)
    rows: list[Row] = []
    for index, ref in enumerate(ref_calls):
        cells = tuple(
            _cell(column, ref, matched[index], same)
            for column, (matched, _) in zip(columns, placed, strict=True)
        )
        rows.append(Row(_label(ref, index), ref, cells))
    for k in range(extra_rows):
        cells = tuple(
            _cell(column, None, extra[k] if k < len(extra) else None, same)
            for column, (_, extra) in zip(columns, placed, strict=True)
        )
        rows.append(Row(f"extra call {k + 1}", None, cells))
    said = comparison(columns, rows) if intended is not None else choices(columns)
    return Matrix(tuple(columns), tuple(rows), said, reference)


def _meant(call: Any) -> Call:
    """An intended call as a client would hold it (an id or name that is not a string: none)."""
    id_ = call.id if isinstance(call.id, str) else None
    name = call.name if isinstance(call.name, str) else None
    return Call(id_, name, call.arguments)


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


def _cell(
    column: LensResult,
    ref: Call | None,
    call: Call | None,
    same: Callable[[str | None, str | None], bool],
) -> Cell | None:
    if column.status in NOT_RAN:
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
    if not same(call.arguments, ref.arguments):
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


def same_meaning(got: str | None, want: str | None) -> bool:
    """`same_arguments` as the grades read it: blank arguments mean `{}` (what a client hands
    for a call the stream gave none)."""
    a, b = meaning(got), meaning(want)
    if a is _MISSING or b is _MISSING:
        return (got or "").strip() == (want or "").strip()
    return bool(a == b)


def meaning(text: str | None) -> Any:
    """The JSON value arguments mean (`{}` when blank), or a marker when they are not JSON."""
    if text is None or not text.strip():
        return {}
    return _parse(text)


def not_json(text: str | None) -> bool:
    """Whether arguments mean no JSON value (blank ones mean `{}`)."""
    return meaning(text) is _MISSING


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


# The comparison, in one line.


def comparison(columns: Sequence[LensResult], rows: Sequence[Row]) -> str:
    """Against the calls the stream means: how many clients get which call wrong, call by call,
    who fails, who is not installed or not run."""
    clients = [i for i, column in enumerate(columns) if column.client in CLIENTS]
    ran = [i for i in clients if columns[i].status not in NOT_RAN]
    wrong: dict[tuple[str, str], list[str]] = {}
    extra: dict[tuple[str, str], int] = {}
    for row in rows:
        for i in ran:
            cell = row.cells[i]
            if cell is None or not cell.differs or "error" in cell.differs:
                continue
            if row.reference is not None:
                name = row.reference.name or "a nameless call"
                wrong.setdefault((name, _what(cell)), []).append(columns[i].client)
            elif "extra" in cell.differs and cell.call is not None:
                call = cell.call
                kind = ("flagged extra call" if call.invalid else "extra call" if call.name
                        else "phantom call")  # fmt: skip
                key = (columns[i].client, kind)
                extra[key] = extra.get(key, 0) + 1
    parts = [_wrong(name, what, who, len(ran)) for (name, what), who in wrong.items()]
    parts += [f"{client} adds {count(n, kind)}" for (client, kind), n in extra.items()]
    parts += _fails(columns, ran)
    if not parts and ran:
        parts.append(f"all {count(len(ran), 'client')} hand the calls as the stream means them")
    parts += _absent(columns, clients)
    return "Against what the stream means: " + ("; ".join(parts) or "no client ran")


def choices(columns: Sequence[LensResult]) -> str:
    """With no intended reading, nothing to grade against: how many different sets of calls
    the clients hand, who fails, who is not installed or not run."""
    clients = [i for i, column in enumerate(columns) if column.client in CLIENTS]
    ran = [i for i in clients if columns[i].status not in NOT_RAN]
    handing = [i for i in ran if columns[i].status == "ok"]
    chosen = {tuple(_choice(call) for call in columns[i].calls) for i in handing}
    parts = []
    if handing:
        made = "makes 1 choice" if len(handing) == 1 else (
            f"make {count(len(chosen), 'different choice')}" if len(chosen) > 1
            else "make the same choice"
        )  # fmt: skip
        parts.append(f"the {count(len(handing), 'client')} that hand calls {made}")
    parts += _fails(columns, ran) + _absent(columns, clients)
    return "No intended reading to grade the calls against: " + (
        "; ".join(parts) or "no client ran"
    )


def _choice(call: Call) -> tuple[str, str]:
    value = meaning(call.arguments)
    shown = (
        (call.arguments or "").strip() if value is _MISSING else json.dumps(value, sort_keys=True)
    )
    return call.name or "", shown


def _wrong(name: str, what: str, who: list[str], ran: int) -> str:
    one = len(who) == 1
    share = f"{len(who)} of {ran} clients"
    if what == "call":
        return f"{share} {'misses' if one else 'miss'} {name} ({', '.join(who)})"
    if what == "flag":
        return f"{share} {'flags' if one else 'flag'} {name} ({', '.join(who)})"
    return f"{share} {'gets' if one else 'get'} {name}'s {what} wrong ({', '.join(who)})"


def _fails(columns: Sequence[LensResult], ran: Sequence[int]) -> list[str]:
    failed = [columns[i].client for i in ran if columns[i].status == "error"]
    if not failed:
        return []
    if len(failed) == len(ran) > 1:
        return [f"all {len(failed)} clients fail"]
    return [f"{_and(failed)} {'fails' if len(failed) == 1 else 'fail'}"]


def _absent(columns: Sequence[LensResult], clients: Sequence[int]) -> list[str]:
    absent = [columns[i].client for i in clients if columns[i].status == "unavailable"]
    skipped = [columns[i].client for i in clients if columns[i].status == "skipped"]
    parts = [f"not installed: {', '.join(absent)}"] if absent else []
    if skipped:
        parts.append(f"not run (they read chat-completions streams, and this stream is another "
                     f"API's own): {', '.join(skipped)}")  # fmt: skip
    return parts


def _what(cell: Cell) -> str:
    """What a client gets wrong about a call: `call` (it is missing), `flag` (the client
    flagged it), else the fields that differ (`name, id and arguments`)."""
    if "missing" in cell.differs:
        return "call"
    if cell.call is not None and cell.call.invalid:
        return "flag"
    return _and([d for d in cell.differs if d in ("name", "id", "arguments")])


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
