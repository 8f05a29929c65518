"""View models of whose fault it is on the stream's pages: the quirk panel and the intended reading.

A quirk is a place where the provider's wire departs from the contract the clients read
(`webapp.core.contract`, spec verdict.md). The panel beside the anomalies lists each quirk the
stream shows once per call (or stream): its code and meaning from the quirk table, the contract
clause it breaks, its steps as links, what clients typically do with it and where it has been
seen in public. Above them, what the stream means (the intended reading), or why it admits more
than one reading. Quirks are read from the records, so the panel is the same under every policy
and path; the blocks it names are numbered as the adr-0019 client-path trace numbers them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webapp.core.contract import QUIRK, Contract, Found
from webapp.core.contract.quirks import CLAUSES
from webapp.core.contract.wire import STEPS_KEPT
from webapp.core.words import count, number
from webapp.web.http.links import Links
from webapp.web.http.text import clipped_head, literal, one_line, one_line_head

STEPS_SHOWN = 6
"""An instance's first steps shown as links; the rest are counted."""
INSTANCES_SHOWN = 3
"""A quirk's first instances (calls) shown; the rest are counted (a stream of 2,000 calls can
show one quirk on each)."""
ARGUMENTS_SHOWN = 240
"""The intended arguments are clipped to this many characters on the page."""
MESSAGE_SHOWN = 400
CALLS_SHOWN = 5
"""The intended calls listed; the rest are counted (the trace JSON has them all)."""
REPAIRS_SHOWN = 5
HARMS = {
    "silent": "some clients hand the application other calls without a word",
    "loud": "some clients raise or flag it",
    "none": "harmless to the major clients",
}
_DASH = "\u2013"


@dataclass(frozen=True, slots=True)
class StepLink:
    """One step a quirk shows at, as a link that selects it."""

    step: int
    url: str


@dataclass(frozen=True, slots=True)
class Sighting:
    """A public place the quirk was seen: who sent it, and the thread (a link when it has one)."""

    by: str
    thread: str
    url: str


@dataclass(frozen=True, slots=True)
class Instance:
    """One call (or the stream) a quirk shows on: what it says, its steps as links."""

    message: str
    steps: tuple[StepLink, ...]
    more: int
    """Steps not shown as links."""
    more_words: str
    """`6 more`, or `more than 994 more` when the wire kept only the quirk's first steps."""


@dataclass(frozen=True, slots=True)
class QuirkItem:
    """One quirk code as the panel shows it: the table's row, and the calls it shows on."""

    code: str
    meaning: str
    clause: str
    """The contract clause it breaks, in words."""
    harm: str
    """The most harm any of its instances does here (silent, loud, none)."""
    harm_words: str
    span: str
    """Where it shows: `steps 1-3, block #0` (with an en dash)."""
    instances: tuple[Instance, ...]
    more: int
    """Instances (calls) not shown."""
    count: int
    """Instances in all: once per call, or once for the stream."""
    typically: str
    seen: tuple[Sighting, ...]

    @property
    def message(self) -> str:
        """The first instance's message."""
        return self.instances[0].message if self.instances else ""

    @property
    def steps(self) -> tuple[StepLink, ...]:
        """The first instance's step links."""
        return self.instances[0].steps if self.instances else ()


@dataclass(frozen=True, slots=True)
class IntendedCall:
    """One call the stream means: its name, its id (shown as JSON), its arguments (clipped)."""

    name: str
    id: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reading:
    """What the stream means, or why it admits more than one reading."""

    calls: tuple[IntendedCall, ...] | None
    """The first `CALLS_SHOWN` calls; None: no single reading (`why` says why)."""
    repairs: tuple[str, ...]
    why: str
    total: int = 0
    """How many calls the stream means (more than shown, for a stream of thousands)."""

    @property
    def more(self) -> int:
        """Calls not shown."""
        return self.total - len(self.calls or ())

    unended: bool = False
    """There is none because the stream's end was not recorded (a capture cut short)."""
    stopped: bool = False
    """There is none because the generation stopped inside its last call (its finish_reason
    says why: the token limit, the content filter)."""

    @property
    def ambiguous(self) -> bool:
        """There is no single reading (`lead` says why, in words)."""
        return self.calls is None

    @property
    def lead(self) -> str:
        """What the panel says before `why` when there is no single reading."""
        if self.unended:
            return "What this stream means is not read:"
        if self.stopped:
            return "What this stream means is not whole:"
        return "This stream admits more than one reading:"


@dataclass(frozen=True, slots=True)
class QuirkPanel:
    """The quirk panel of the timeline page."""

    headline: str
    items: tuple[QuirkItem, ...]
    reading: Reading | None
    """None when the trace was made without reading the contract."""
    clients_url: str


def panel(contract: Contract | None, links: Links) -> QuirkPanel:
    """The panel for a stream's contract (None: not read), its step links under `links`."""
    clients = links.clients
    if contract is None:
        return QuirkPanel("not read for this trace", (), None, clients)
    by_code: dict[str, list[Found]] = {}
    for found in contract.quirks:  # in order of first step
        by_code.setdefault(found.code, []).append(found)
    items = tuple(_item(code, found, links) for code, found in by_code.items())
    return QuirkPanel(_headline(items, contract.end), items, reading(contract), clients)


def _headline(items: Sequence[QuirkItem], end: str | None = None) -> str:
    if not items and end is not None:
        return "none in what was recorded (its end was not)"
    if not items:
        return "none: the stream keeps the contract"
    silent = sum(1 for item in items if item.harm == "silent")
    said = count(len(items), "quirk")
    return f"{said}, {silent} that can do silent harm" if silent else said


_WORST = {"none": 0, "loud": 1, "silent": 2}


def _item(code: str, found: Sequence[Found], links: Links) -> QuirkItem:
    quirk = QUIRK[code]
    harm = max((item.harm for item in found), key=lambda harm: _WORST.get(harm, 0))
    shown = found[:INSTANCES_SHOWN]
    return QuirkItem(
        code=code,
        meaning=quirk.meaning,
        clause=CLAUSES[quirk.clause],
        harm=harm,
        harm_words=HARMS.get(harm, harm),
        span=_span(found),
        instances=tuple(_instance(item, links) for item in shown),
        more=len(found) - len(shown),
        count=len(found),
        typically=quirk.typically,
        seen=tuple(Sighting(seen.by, seen.thread or "", seen.url or "") for seen in quirk.seen),
    )


def _instance(found: Found, links: Links) -> Instance:
    shown = found.steps[:STEPS_SHOWN]
    message = clipped_head(one_line(found.message), MESSAGE_SHOWN)
    more = len(found.steps) - len(shown)
    kept_all = len(found.steps) < STEPS_KEPT
    return Instance(
        message=message.head + ("…" if message.hidden else ""),
        steps=tuple(StepLink(step, links.step(step)) for step in shown),
        more=more,
        more_words=f"{number(more)} more" if kept_all else f"more than {number(more)} more",
    )


def _span(found: Sequence[Found]) -> str:
    ends = [step for item in found for step in (*item.steps[:1], *item.steps[-1:])]
    kept_all = all(len(item.steps) < STEPS_KEPT for item in found)
    if not ends:
        where = "the whole stream"
    elif min(ends) == max(ends):
        where = f"step {number(ends[0])}"
    elif not kept_all:  # the wire keeps a quirk's first steps only: the last is not known
        where = f"from step {number(min(ends))}"
    else:
        where = f"steps {number(min(ends))}{_DASH}{number(max(ends))}"
    blocks = sorted({block for item in found for block in item.blocks})
    if len(blocks) == 1:
        where += f", block #{number(blocks[0])}"
    elif blocks:
        where += f", {count(len(blocks), 'block')}"
    return where


def reading(contract: Contract) -> Reading:
    """The intended reading as the page shows it."""
    intended = contract.intended
    if intended is None:
        why = clipped_head(one_line(contract.why or "the stream does not say"), MESSAGE_SHOWN)
        return Reading(
            None,
            (),
            why.head + ("…" if why.hidden else ""),
            0,
            contract.end is not None,
            contract.stopped is not None,
        )
    calls = tuple(
        IntendedCall(
            name=call.name if isinstance(call.name, str) and call.name else "(no name)",
            id="" if call.id is None else clipped_head(literal(call.id), 80).head,
            arguments=_arguments(call.arguments),
        )
        for call in intended.calls[:CALLS_SHOWN]
    )
    repairs = tuple(one_line(repair) for repair in intended.repairs[:REPAIRS_SHOWN])
    return Reading(calls, repairs, "", len(intended.calls))


def _arguments(text: str) -> str:
    cut = one_line_head(text, ARGUMENTS_SHOWN)
    return (cut.head + "…" if cut.hidden else cut.head) or "(no arguments)"


@dataclass(frozen=True, slots=True)
class QuirkLine:
    """The compare page's headline about the provider: its quirks and what the stream means."""

    codes: tuple[tuple[str, str], ...]
    """(code, the timeline's URL at the quirk's first step)."""
    reading: Reading
    panel_url: str
    """The timeline page's quirk panel."""


def quirk_line(contract: Contract | None, links: Links) -> QuirkLine | None:
    """The compare page's line about the quirks, when the stream shows any (else None)."""
    if contract is None or not contract.quirks:
        return None
    codes = _first_steps(contract.quirks)
    shown = tuple((code, links.step(step)) for code, step in codes)
    return QuirkLine(shown, reading(contract), links.quirks(0))


def _first_steps(found: Sequence[Found]) -> list[tuple[str, int]]:
    first: dict[str, int] = {}
    for item in found:
        step = item.steps[0] if item.steps else 0
        first[item.code] = min(step, first.get(item.code, step))
    return list(first.items())
