"""View models of the diff page (two streams' calls side by side) and of the picker of stream B.

`stream_side` makes a stream into a diff's side from what the service caches (its reading, its
adr-0019 and exact-key views, its timing), `diff_page` lays the diff out for the page: each
side's facts, each call's row with both calls' JSON and links to both timelines. `picker` is
the "compare with..." control: the streams of the library (this browser's, or every stream on
a server run with `--list-streams`), the built-in examples, and a paste box.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.contract.answer import answer_in
from webapp.core.options import Options
from webapp.core.words import visible
from webapp.examples import EXAMPLES
from webapp.lenses.results import LensResult
from webapp.storage.team import Library
from webapp.triage.diff import IDS_MODES, Diff, IdsMode, Pair, diff
from webapp.triage.sides import DiffCall, Side, answer_side, side_of
from webapp.triage.values import NotJson
from webapp.web.backend.capture.timing import timing_of
from webapp.web.backend.example_source import example_id
from webapp.web.backend.service import LIGHT_BELOW, Service
from webapp.web.http.links import Links, diff_api, diff_url
from webapp.web.http.query import DEFAULTS
from webapp.web.http.text import Clipped, clipped, printable, stream_title

JSON_SHOWN = 4000
"""Characters of a call's arguments (pretty JSON) shown before the middle is cut."""
PICKED = 20
"""Library streams the "compare with..." control lists (the picker page searches them all)."""
_GRADE_ORDER = {"intact": 0, "guessed": 1, "flagged": 2, "damaged": 3}


def stream_side(
    service: Service,
    stream_id: str,
    har_entry: int | None,
    lenses: Sequence[LensResult] = (),
) -> Side:
    """A stored stream (or example) as a diff's side (NotFound, Unreadable as the service's)."""
    info = service.info(stream_id)
    reading = service.reading(stream_id, har_entry)
    answer = answer_in(reading.result)  # ReaderError: an answer whose calls cannot be read
    if answer is not None:
        return answer_side(answer, reading.result, label=stream_title(info), har_entry=har_entry)
    adr = service.view(stream_id, Options("adr-0019", "client"), har_entry).trace
    exact = service.view(stream_id, Options("exact-key", "client"), har_entry).trace
    timing = timing_of(service, stream_id, har_entry)["timing"]
    with service.gate.heavy_for(info.size < LIGHT_BELOW):
        return side_of(
            reading.result.records, adr, exact, label=stream_title(info), source=reading.result,
            lenses=lenses, timing=timing, har_entry=har_entry,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class EntryLink:
    """Another event stream of a side's HAR file: the diff with it instead."""

    label: str
    url: str
    on: bool


@dataclass(frozen=True, slots=True)
class SideView:
    """One stream's column of facts: what it means, its quirks, anomalies, grades, timing."""

    letter: str
    stream_id: str
    side: Side
    links: Links
    facts: tuple[tuple[str, str], ...]
    quirks: tuple[tuple[str, str, str], ...]
    """(code, message, the timeline at its first step)."""
    anomalies: tuple[tuple[str, int], ...]
    grades: tuple[tuple[str, str, str], ...]
    """(client, grade or "not run", what it did)."""
    entries: tuple[EntryLink, ...]

    @property
    def title(self) -> str:
        return self.side.label

    @property
    def url(self) -> str:
        """The stream's page, its findings first."""
        return self.links.landing

    def step(self, step: int | None) -> str:
        """The stream's timeline at `step` (its start for None)."""
        return self.links.step(step or 0)


@dataclass(frozen=True, slots=True)
class CallCell:
    """One call in a row: its id, name, arguments (pretty JSON), what the application gets."""

    call: DiffCall
    arguments: Clipped
    receives: Clipped
    grades: tuple[tuple[str, str], ...]
    url: str
    """This stream's timeline at the step that opened the call."""

    @property
    def label(self) -> str:
        return _text(self.call.name, "(no name)")

    @property
    def id(self) -> str:
        return _text(self.call.id, "(no id)")

    @property
    def is_json(self) -> bool:
        return not isinstance(self.call.value, NotJson)


@dataclass(frozen=True, slots=True)
class Place:
    """One side of where two argument texts part: a link to its timeline there, the text."""

    label: str
    """`A step 3 (line 7)`, or `A's text ends there`."""
    text: str
    url: str


@dataclass(frozen=True, slots=True)
class Parting:
    """Where two calls' argument texts part, on each side, with links to both timelines."""

    offset: int
    a: Place
    b: Place


@dataclass(frozen=True, slots=True)
class Row:
    """One call of A and its partner in B, or a call with none."""

    number: int
    name: str
    status: str
    """"same", "differs", "only-a" or "only-b" (a CSS class too)."""
    words: str
    a: CallCell | None
    b: CallCell | None
    differences: tuple[str, ...]
    parting: Parting | None
    besides: tuple[str, ...]
    """What differs besides the call's meaning (what adr-0019 hands over, the grades)."""


@dataclass(frozen=True, slots=True)
class DiffPage:
    """The diff page: both sides, the rows, how the streams differ besides, the URLs."""

    diff: Diff
    a: SideView
    b: SideView
    rows: tuple[Row, ...]
    streams: tuple[str, ...]
    ids: IdsMode
    ids_urls: tuple[tuple[str, str, bool], ...]
    swap_url: str
    json_url: str
    self_url: str
    gateway: str | None = None
    """The gateway's name when A is what it received and B what it sent (a hop)."""
    hop_url: str | None = None
    """The hop diff (A and B swapped) when B is what the gateway received."""

    @property
    def hop(self) -> str:
        """The hop's sentence, as a sentence ("" when the two are not a hop)."""
        said = "" if self.diff.hop is None else self.diff.hop.sentence
        return said[:1].upper() + said[1:] + "." if said else ""


def diff_page(
    a: tuple[str, Side],
    b: tuple[str, Side],
    ids: IdsMode,
    gateway: str | None = None,
    reversed_hop: bool = False,
) -> DiffPage:
    """The page of two sides (each with its stream id); `gateway` names the gateway when A
    is what it received and B what it sent, `reversed_hop` says B is what it received."""
    (a_id, a_side), (b_id, b_side) = a, b
    found = diff(a_side, b_side, ids, gateway)
    left, right = _side_view("A", a_id, a_side), _side_view("B", b_id, b_side)
    rows = tuple(_row(number, pair, left, right) for number, pair in enumerate(found.pairs, 1))
    har_a, har_b = a_side.har_entry, b_side.har_entry
    return DiffPage(
        diff=found,
        a=left,
        b=right,
        rows=rows,
        streams=tuple(str(d) for d in found.streams),
        ids=ids,
        ids_urls=tuple(
            (mode, diff_url(a_id, b_id, har_a, har_b, mode), mode == ids) for mode in IDS_MODES
        ),
        swap_url=diff_url(b_id, a_id, har_b, har_a, ids),
        json_url=diff_api(a_id, b_id, har_a, har_b, ids),
        self_url=diff_url(a_id, b_id, har_a, har_b, ids),
        gateway=gateway,
        hop_url=diff_url(b_id, a_id, har_b, har_a, ids) if reversed_hop else None,
    )


def _side_view(letter: str, stream_id: str, side: Side) -> SideView:
    links = Links(stream_id, DEFAULTS, side.har_entry)
    facts = [("reads as", side.reading_words), ("calls", str(len(side.calls)))]
    facts.append(("finish_reason", side.finish_reason or "none"))
    if not side.answer:
        facts.append(("chunks", f"{side.trace.chunk_count:,}"))
    if side.model:
        facts.append(("model", side.model))
    if side.format:
        entry = f", entry {side.har_entry}" if side.har_entry else ""
        facts.append(("input", side.format + entry))
    timing = side.timing
    if timing is not None:
        for label, ms in (("first byte", timing.first_byte), ("first call", timing.first_call),
                          ("finish", timing.finish), ("end", timing.end)):  # fmt: skip
            if ms is not None:
                facts.append((label, f"{ms:,.0f} ms"))
    quirks = tuple(
        (found.code, found.message, links.step(found.steps[0] if found.steps else 0))
        for found in side.contract.quirks
    )
    grades = tuple(
        (g.label, g.grade or "not run", g.detail)
        for g in sorted(side.verdict.grades, key=lambda g: _GRADE_ORDER.get(g.grade or "", 9))
    )
    return SideView(
        letter, stream_id, side, links, tuple(facts), quirks,
        tuple(sorted(side.anomaly_counts().items())), grades, (),
    )  # fmt: skip


def with_entries(view: SideView, entries: Sequence[tuple[str, int | None]], url: Any) -> SideView:
    """The side with links to its HAR file's other event streams (`url(number)` each)."""
    links = tuple(
        EntryLink(label, url(number), number == view.side.har_entry) for label, number in entries
    )
    return SideView(
        view.letter, view.stream_id, view.side, view.links, view.facts, view.quirks,
        view.anomalies, view.grades, links,
    )  # fmt: skip


def _row(number: int, pair: Pair, a: SideView, b: SideView) -> Row:
    name = _text(pair.name, "(no name)")
    if pair.a is None:
        status, words = "only-b", "only in B"
    elif pair.b is None:
        status, words = "only-a", "only in A"
    elif pair.same:
        status, words = "same", "the same call"
    else:
        status, words = "differs", "differs"
    parting = None
    where = pair.diverges
    if where is not None:
        parting = Parting(
            where.offset,
            _place(a, where.a.step, where.a.line, where.a.text, pair.a),
            _place(b, where.b.step, where.b.line, where.b.text, pair.b),
        )
    differences = () if status.startswith("only") else tuple(str(d) for d in pair.differences)
    return Row(
        number, name, status, words, _cell(pair.a, a), _cell(pair.b, b),
        differences, parting, tuple(str(d) for d in pair.besides),
    )  # fmt: skip


def _cell(call: DiffCall | None, side: SideView) -> CallCell | None:
    if call is None:
        return None
    value = call.value
    if not call.arguments.strip():
        shown = "(blank: read as {})"
    else:
        shown = call.arguments if isinstance(value, NotJson) else _pretty(value)
    grades = tuple((client, grade or "not run") for client, grade in call.grades)
    return CallCell(call, clipped(printable(shown), JSON_SHOWN),
                    clipped(printable(_pretty(call.receives)), JSON_SHOWN), grades,
                    side.step(call.opened))  # fmt: skip


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _place(
    side: SideView, step: int | None, line: int | None, text: str, call: DiffCall | None
) -> Place:
    if step is None:  # this side's text ended: its call's last piece is where
        last = call.steps[-1] if call is not None and call.steps else None
        return Place(f"{side.letter}'s text ends there", "", side.step(last))
    label = f"{side.letter} step {step:,}" + (f" (line {line:,})" if line is not None else "")
    return Place(label, printable(text), side.step(step))


def _text(value: Any, empty: str) -> str:
    if value is None or value == "":
        return empty
    return printable(value) if isinstance(value, str) else json.dumps(value)


# The "compare with..." control.


@dataclass(frozen=True, slots=True)
class Choice:
    """A stream B can be: its id, its title, the diff's URL."""

    stream_id: str
    title: str
    url: str


@dataclass(frozen=True, slots=True)
class Picker:
    """Stream A, and the streams it can be compared with."""

    a_id: str
    a_entry: int | None
    title: str
    library: tuple[Choice, ...]
    examples: tuple[Choice, ...]
    total: int
    search: str
    everything: bool
    """Whether the library lists every stream (`--list-streams`) or this browser's."""

    @property
    def more(self) -> int:
        """Library streams that match and are not listed."""
        return max(0, self.total - len(self.library))


def picker(
    service: Service,
    a_id: str,
    a_entry: int | None,
    owned: Sequence[str] | None,
    search: str = "",
    limit: int = PICKED,
    title: str | None = None,
) -> Picker:
    """The streams stream A can be compared with: the library (`owned` None: every stream)
    matching `search`, newest first, and the examples. `title` is A's, when the caller has
    read its row already."""
    title = stream_title(service.info(a_id)) if title is None else title
    ids = None if owned is None else [i for i in reversed(owned) if i != a_id]
    found = Library(service.storage).page(search=search, ids=ids, limit=limit, offset=0)
    library = tuple(
        Choice(row.id, visible(row.title or "Untitled stream"), diff_url(a_id, row.id, a_entry))
        for row in found.rows
        if row.id != a_id
    )
    examples = tuple(
        Choice(
            example_id(key), f"Example: {example.title}", diff_url(a_id, example_id(key), a_entry)
        )
        for key, example in EXAMPLES.items()
        if example_id(key) != a_id and (not search or search.lower() in example.title.lower())
    )
    return Picker(a_id, a_entry, title, library, examples, found.total, search, owned is None)
