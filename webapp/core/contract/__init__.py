"""The contract a stream is held to: where the wire departs from it, and the calls it means.

`read_contract(records)` reads the records once (`wire`), names every quirk the table knows
(`quirks`) and works out the intended reading (`intended`). It looks only at the records, never
at an assembly, so a stream has the same quirks and the same intended reading under every
policy and path; the blocks it names are numbered as the adr-0019 client-path trace numbers
them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from webapp.core.contract.intended import Call, Intended, intended_reading
from webapp.core.contract.quirks import (
    BARE_MARKS,
    CODES,
    ENTRY_TESTS,
    QUIRK,
    QUIRKS,
    Found,
    Quirk,
    detect,
    stopped_in,
)
from webapp.core.contract.wire import STEPS_KEPT, Wire, WireReader, read_wire
from webapp.core.records import Record

__all__ = [
    "CODES",
    "QUIRK",
    "QUIRKS",
    "UNFINISHED",
    "Call",
    "Contract",
    "ContractReader",
    "Found",
    "Intended",
    "Quirk",
    "contract_from_json",
    "contract_of",
    "read_contract",
    "unended",
]


@dataclass(frozen=True, slots=True)
class Contract:
    """A stream held to the contract: its quirks, and the calls it means (or why it is unclear)."""

    quirks: tuple[Found, ...]
    intended: Intended | None
    why: str | None
    """Why there is no intended reading (None when there is one)."""
    model: str | None = None
    """The model the first chunk names, if any."""
    error: str | None = None
    """The provider's error, when one ended the stream (the trace reports it as an anomaly)."""
    end: str | None = None
    """Why the stream's end was not recorded (a capture cut, or still arriving); None when it
    was, or when the input is all there is to know."""
    withheld: tuple[str, ...] = ()
    """With `end`: the codes judged on the end that were found and are not reported (quirks of
    the table's `at_end` rows, anomalies of the end step)."""
    stopped: str | None = None
    """Why the generation stopped inside its last call's arguments, when the finish_reason
    says it stopped early (the token limit, the content filter: `quirks.stopped_in`): that
    call's cut arguments are no quirk, there is no intended reading (the call is not whole),
    and nobody broke the contract. None otherwise."""
    unfinished: bool = False
    """Neither `[DONE]`, a provider's error nor any finish_reason: the bytes stop before the
    stream said it ended. Pasted or uploaded text may have been cut (a log's first lines, a
    partial copy), so its end says nothing of the provider (`unended`); a capture's bytes end
    where the connection did, so there it does. Not kept in a stored trace: `as_recorded` is
    applied before one is kept."""

    @property
    def only_stopped(self) -> str | None:
        """`stopped`, when nothing else broke the contract (no quirk, no provider error): then
        nobody is at fault and nothing is filed. None otherwise."""
        return self.stopped if not self.quirks and self.error is None else None

    @property
    def no_reading(self) -> str:
        """What is said before `why` when there is no intended reading: "no whole reading"
        when the generation stopped inside a call, else "no single reading"."""
        return "no whole reading" if self.stopped is not None else "no single reading"

    @property
    def codes(self) -> frozenset[str]:
        """The quirk codes found."""
        return frozenset(found.code for found in self.quirks)

    def to_json(self) -> dict[str, Any]:
        """`{"quirks": [...], "intended": {...} | None, "why": ...}`: the trace's keys, and
        `"end": {"why", "withheld"}` when the stream's end was not recorded."""
        out = {
            "quirks": [found.to_json() for found in self.quirks],
            "intended": None if self.intended is None else self.intended.to_json(),
            "why": self.why,
        }
        if self.end is not None:
            out["end"] = {"recorded": False, "why": self.end, "withheld": list(self.withheld)}
        if self.stopped is not None:
            out["stopped"] = self.stopped
        return out

    def as_recorded(self, end: str, *, recorded: bool) -> Contract:
        """This contract as far as its bytes hold the stream: without its end (`without_end`)
        when `unended` says they stop before it, else the same."""
        why = unended(self, end, recorded=recorded)
        return self.without_end(why) if why else self

    def without_end(self, why: str, anomalies: Iterable[str] = ()) -> Contract:
        """This contract of a stream whose end was not recorded (`why`, "cut by the client"):
        the quirks judged on the end are withheld with the `anomalies` codes judged at the end
        step, and there is no intended reading (its last call may be unfinished). The same
        contract when it says so already."""
        if self.end is not None:
            return self
        kept = tuple(found for found in self.quirks if not QUIRK[found.code].at_end)
        withheld = {found.code for found in self.quirks if QUIRK[found.code].at_end}
        return Contract(
            kept,
            None,
            f"the stream's end was not recorded ({why})",
            self.model,
            self.error,
            why,
            tuple(sorted(withheld | set(anomalies))),
            None,  # how it stopped is the end's, which was not recorded
            self.unfinished,
        )


UNFINISHED = "the text stops before any finish_reason or [DONE]"
"""Why a paste's or an upload's end is not judged when it shows none (`unended`)."""


def unended(contract: Contract | None, end: str, *, recorded: bool) -> str:
    """Why the stream's end is not in its bytes, "" when it is: `end` when the bytes are said
    to stop before it (a capture cut, one still arriving); else, for bytes not recorded off
    the wire by streamviz (a paste, an upload, a file without a recording's sidecar),
    `UNFINISHED` when they show no end (`Contract.unfinished`). The stream is then judged
    without its end (`Contract.as_recorded`, `Trace.as_recorded`): no provider quirk nor
    anomaly is reported of an end the bytes do not hold."""
    if end:
        return end
    if not recorded and contract is not None and contract.unfinished:
        return UNFINISHED
    return ""


def contract_from_json(value: dict[str, Any]) -> Contract:
    """A contract from `Contract.to_json()` plus its "model" and "error" (a stored trace's);
    quirks this build's table does not know are left out."""
    quirks = tuple(
        Found(
            item["code"],
            tuple(item["steps"]),
            tuple(item["blocks"]),
            int(item["count"]),
            item["message"],
            item["harm"],
        )
        for item in value["quirks"]
        if item["code"] in QUIRK
    )
    shown = value["intended"]
    intended = None
    if shown is not None:
        calls = tuple(Call(c["id"], c["name"], c["arguments"]) for c in shown["calls"])
        intended = Intended(calls, tuple(shown["repairs"]))
    end = value.get("end")
    return Contract(
        quirks, intended, value["why"], value.get("model"), value.get("error"),
        None if end is None else end["why"], tuple(end["withheld"]) if end else (),
        value.get("stopped"),
    )  # fmt: skip


def read_contract(
    records: Iterable[Record], choice: int = 0, *, steps_kept: int = STEPS_KEPT
) -> Contract:
    """The stream's quirks and intended reading, following choice `choice`."""
    return contract_of(read_wire(records, choice, ENTRY_TESTS, steps_kept))


class ContractReader:
    """`read_contract` for a loop that parses the records already (the assembler's), so that
    no chunk is parsed twice: its `reader` is fed `record(step, record)` for each record in
    step order, or `chunk(step, value)` for a parsed chunk object without an "error" key,
    while not `ended`; then `finish(steps)`. (The loop calls the `WireReader` itself: compiled,
    that is a direct call.)"""

    __slots__ = ("reader",)

    def __init__(self, choice: int = 0, *, steps_kept: int = STEPS_KEPT) -> None:
        self.reader = WireReader(choice, ENTRY_TESTS, steps_kept, BARE_MARKS)
        """The pass over the wire, which the loop feeds."""

    @property
    def ended(self) -> bool:
        """Whether `[DONE]` or a provider's error has ended the reading."""
        return self.reader.wire.ended is not None

    def finish(self, steps: int) -> Contract:
        """The contract of the `steps` records fed (the trace's `end` step has this number)."""
        return contract_of(self.reader.end(steps))


def contract_of(wire: Wire) -> Contract:
    """The contract of a pass over the wire: its quirks, its intended reading (none when the
    generation stopped inside its last call), how it ended."""
    quirks = detect(wire)
    intended, why = intended_reading(wire, quirks)
    unfinished = wire.ended is None and not wire.finishes
    cut = stopped_in(wire)
    if cut is not None and intended is not None:  # its last call is not whole: no reading
        intended, why = None, cut[0]
    stopped = None if cut is None else cut[0]
    return Contract(
        quirks, intended, why, wire.model, wire.error, stopped=stopped, unfinished=unfinished
    )
