"""The intended reading: the calls a stream means, when its bytes say so unambiguously.

It is decision 0019's client-path reading of the wire with the restating quirks repaired: a run
of cumulative restatements keeps its last (longest) piece, a piece that resends the whole
arguments is dropped, whitespace after the arguments closed is ignored, and two calls sharing
one index are two calls when their headers (a new id and a name) tell them apart. There is no
intended reading when the stream admits more than one: a piece placed by guess (a continuation
while another call was open, or a piece on an index two open calls share), arguments that
name no call, more text after a call's arguments closed, or a repair that does not hold.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.contract.quirks import Found, repair_holds, repaired_text, restating_runs
from webapp.core.contract.wire import Part, Wire
from webapp.core.jsvalue import js_string
from webapp.core.words import count, excerpt


@dataclass(frozen=True, slots=True)
class Call:
    """One call the stream means: its id (None when the stream gave none), name, arguments."""

    id: Any
    name: Any
    arguments: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Intended:
    """The calls, in the order the stream opened them, and the repairs that made them."""

    calls: tuple[Call, ...]
    repairs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """`{"calls": [{"id", "name", "arguments"}], "repairs": [...]}`."""
        return {"calls": [call.to_json() for call in self.calls], "repairs": list(self.repairs)}

    def describe(self) -> str:
        """`get_weather {"city": "Paris"}; get_time {}` (clipped)."""
        if not self.calls:
            return "no tool call"
        return "; ".join(
            f"{_name(call.name)} {excerpt(call.arguments, 60)[1:-1] or '(no arguments)'}"
            for call in self.calls
        )


def intended_reading(wire: Wire, found: Sequence[Found]) -> tuple[Intended | None, str | None]:
    """The intended reading, or None and why the stream admits more than one."""
    why = _ambiguity(wire, found)
    if why is not None:
        return None, why
    repairs: list[str] = []
    for part in wire.parts:
        runs = restating_runs(part)
        if runs is not None:
            last = ", ".join(str(part.steps[end]) for _, end in runs[:4])
            repairs.append(f"cumulative-arguments on block {part.block}: kept the last "
                           f"restatement (step {last})")  # fmt: skip
        if part.retyped:
            steps = ", ".join(map(str, part.retyped[:4]))
            repairs.append(f"non-string-arguments on block {part.block}: read the arguments "
                           f"object as its JSON text (step {steps})")  # fmt: skip
        if part.resent:
            steps = ", ".join(map(str, part.resent[:4]))
            repairs.append(f"arguments-resent on block {part.block}: dropped the piece that "
                           f"resends the arguments (step {steps})")  # fmt: skip
    for block in wire.blocks:
        if len(block.parts) > 1:
            calls = ", ".join(f"{_name(part.name)} ({js_string(part.id)})" for part in block.parts)
            repairs.append(f"shared-index on block {block.number}: "
                           f"{count(len(block.parts), 'call')} told apart by their headers: "
                           f"{calls}")  # fmt: skip
    return Intended(tuple(_call(part) for part in wire.parts), tuple(repairs)), None


def _call(part: Part) -> Call:
    text = repaired_text(part)
    if part.freeform:
        text = json.dumps({"input": text}, ensure_ascii=False, separators=(",", ":"))
    return Call(part.id, part.name, text)


def _ambiguity(wire: Wire, found: Sequence[Found]) -> str | None:
    """Why the stream admits more than one reading, or None."""
    if wire.guesses:
        guess = wire.guesses[0]
        others = ", ".join(
            _open(part, state) for part, state in zip(guess.others, guess.states, strict=True)
        )
        what, where = (
            ("a piece with no index, no id and no name", "the most recently opened call")
            if guess.kind == "continuation"
            else (f"a piece on the index block #{guess.part.block}'s calls share", "the latest")
        )
        more = len(wire.guesses) - 1
        tail = f" ({count(more, 'more piece')} like it)" if more else ""
        return (
            f"step {guess.step}: {what} went to block #{guess.part.block} "
            f"{_name(guess.part.name)}, {where}, while {others} "
            f"{'was' if len(guess.others) == 1 else 'were'} still open: it could belong to "
            f"{'either' if len(guess.others) == 1 else 'any of them'}{tail}"
        )
    headerless = next((item for item in found if item.code == "headerless-entry"), None)
    if headerless is not None:
        return (
            f"step {headerless.steps[0]}: arguments that name no call (no id, no name, and an "
            "index no header opened, or no call open): the stream does not say whose they are"
        )
    for part in wire.parts:
        if part.after:
            step, piece = part.after[0]
            return (
                f"step {step}: {_open(part, None)} had one complete JSON value as its arguments "
                f"when more came, {excerpt(piece, 40)}: the stream does not say whether it "
                "replaces, extends or repeats them"
            )
        if restating_runs(part) is not None and not repair_holds(repaired_text(part)):
            return (
                f"{_open(part, None)} restates its arguments, but its last restatement is not JSON "
                "either: the repair does not hold"
            )
    return None


def _open(part: Part, text: str | None) -> str:
    """`block #0 get_weather`, with its arguments at the time when `text` is given."""
    label = f"block #{part.block} {_name(part.name)}"
    if text is None:
        return label
    return (
        f"{label} ({'its arguments empty' if not text else f'its arguments {excerpt(text, 30)}'})"
    )


def _name(name: Any) -> str:
    return "(no name)" if name is None else js_string(name)
