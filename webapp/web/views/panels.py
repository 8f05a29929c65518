"""View models for the two panels of the selected step: its detail and the state of the blocks."""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from webapp.core import words
from webapp.core.chunks import select_choice
from webapp.core.jsoncheck import classify
from webapp.core.jsvalue import is_number, truthy
from webapp.core.readers.bridge import MAPPED
from webapp.core.rules import RULES
from webapp.core.trace import Anomaly, Block, BlockState, Event, Fragment
from webapp.web.backend.trace.arguments import LONG, LongText, partial_head
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.text import (
    Clipped,
    Excerpt,
    clipped,
    clipped_head,
    excerpt,
    literal,
    pretty_json,
)
from webapp.web.views.timeline import block_label

_MEANINGS = {rule.name: rule.meaning for rule in RULES}
CHUNK_LIMIT = 20_000
VALUE_LIMIT = 4_000
EVENT_LIMIT = 400
ALL_BLOCKS_UP_TO = 40
RECENT_BLOCKS = 12
BEFORE_LIMIT = 1200
APPENDED_LIMIT = 1200
"""A block's text shown: the last characters before what the step appended, and that (clipped)."""
HEAD_CHARS = 16 * VALUE_LIMIT
"""A long partial text's value is parsed from this many characters of its head (fewer than a
long text's, `LONG`: every step of a long text has the same head)."""
HEAD_MARGIN = 200
"""A head's value is shown when it runs this far past `VALUE_LIMIT` (else the whole is parsed)."""
DETAIL_EVENTS = 100
"""The most events the detail panel lists for one step (the end step fires one per block)."""
DETAIL_ANOMALIES = 5
"""The most anomaly boxes the detail panel shows for one step; the rest are counted by code."""


@dataclass(frozen=True, slots=True)
class KeyRow:
    """One key of a fragment, as read, and whether it counts (JavaScript truthiness)."""

    name: str
    value: Clipped
    counts: bool
    note: str


@dataclass(frozen=True, slots=True)
class FragmentDetail:
    """One fragment of the selected step and why it went where it went."""

    position: int
    rule: str
    meaning: str
    reason: str
    block: str
    phantom: bool
    keys: tuple[KeyRow, ...]
    late: bool
    oddities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EventRow:
    """One event the step fired."""

    type: str
    content_index: int | None
    fields: tuple[tuple[str, Clipped], ...]


@dataclass(frozen=True, slots=True)
class Detail:
    """The detail panel: the record, its fragments, the events, the anomalies."""

    step: int
    line: int | None
    kind: str
    note: str | None
    error: str | None
    assembled: bool
    chunk: Clipped | None
    delta: Clipped | None
    """The followed choice's `delta`, shown first (the whole chunk is folded under it)."""
    delta_path: str
    """Where the delta sits in the chunk: `choices[0].delta`."""
    source: Clipped | None
    """The record's text as it appeared in the input (shown when there is no parsed chunk)."""
    remarks: tuple[str, ...]
    fragments: tuple[FragmentDetail, ...]
    events: tuple[EventRow, ...]
    anomalies: tuple[Anomaly, ...]
    """The first `DETAIL_ANOMALIES` of the step's anomalies, errors first."""
    more_anomalies: tuple[tuple[str, int], ...] = ()
    """The step's other anomalies, counted by code (the anomaly list has them all)."""
    more_events: int = 0
    """How many of the step's events are not listed (the trace JSON has them all)."""

    @property
    def subtitle(self) -> str:
        """The heading's small print: "line 5 · chunk", "· not assembled" when it was not."""
        line = "" if self.line is None else f"line {words.number(self.line)} · "
        return f"{line}{self.kind}{'' if self.assembled else ' · not assembled'}"

    @property
    def anchored(self) -> tuple[tuple[Anomaly, str | None], ...]:
        """Each anomaly shown, with the anchor (`why-CODE`) the first of its code carries."""
        seen: set[str] = set()
        shown = []
        for anomaly in self.anomalies:
            shown.append((anomaly, None if anomaly.code in seen else f"why-{anomaly.code}"))
            seen.add(anomaly.code)
        return tuple(shown)


def detail(view: TraceView, step: int) -> Detail:
    """Everything about one step."""
    trace = view.trace
    current = trace.steps[step]
    record = view.record(step)
    chunk = source = delta = None
    delta_path = ""
    remarks: list[str] = []
    if record is not None:
        if record.kind == "chunk":
            chunk = clipped_head(pretty_json(record.value), CHUNK_LIMIT)
            delta_path, delta = _delta(record.value, view.options.choice)
        elif record.text:
            source = clipped_head(record.text, CHUNK_LIMIT)
        if record.wrapped == MAPPED:
            remarks.append(
                "The input held an event of another API; this is the chunk that says the same."
            )
        elif record.wrapped:
            remarks.append(f"The input held a bare {record.wrapped}; it was wrapped into a chunk.")
        if record.event:
            remarks.append(f"SSE event: {record.event}")
    shown, more = _capped(view.anomalies_by_step.get(step, ()))
    return Detail(
        step=step,
        line=current.line,
        kind=current.kind,
        note=current.note,
        error=current.error,
        assembled=current.assembled,
        chunk=chunk,
        delta=delta,
        delta_path=delta_path,
        source=source,
        remarks=tuple(remarks),
        fragments=tuple(_fragment(view, fragment, step) for fragment in current.fragments),
        events=tuple(_event(event) for event in current.events[:DETAIL_EVENTS]),
        anomalies=shown,
        more_anomalies=tuple(more.items()),
        more_events=max(0, len(current.events) - DETAIL_EVENTS),
    )


def _capped(found: tuple[Anomaly, ...]) -> tuple[tuple[Anomaly, ...], dict[str, int]]:
    """The first few of a step's anomalies (errors first) and the rest counted by code."""
    ordered = sorted(found, key=lambda anomaly: anomaly.severity != "error")
    more: dict[str, int] = {}
    for anomaly in ordered[DETAIL_ANOMALIES:]:
        more[anomaly.code] = more.get(anomaly.code, 0) + 1
    return tuple(ordered[:DETAIL_ANOMALIES]), more


def _delta(value: Any, wanted: int) -> tuple[str, Clipped | None]:
    """The followed choice's delta and where it sits, or ("", None) when the chunk has none."""
    if not isinstance(value, dict):
        return "", None
    choices = value.get("choices")
    choice = select_choice(choices, wanted).choice
    if choice is None or not isinstance(choices, list) or "delta" not in choice:
        return "", None
    position = next(n for n, item in enumerate(choices) if item is choice)
    return f"choices[{position}].delta", clipped_head(pretty_json(choice["delta"]), CHUNK_LIMIT)


def _fragment(view: TraceView, fragment: Fragment, step: int) -> FragmentDetail:
    keys = (
        _key("index", fragment.index, is_number(fragment.index), "an integer counts, 0 included"),
        _key("id", fragment.id, truthy(fragment.id), "a non-empty string counts"),
        _key("function.name", fragment.name, truthy(fragment.name), "a non-empty string counts"),
        _key(
            "function.arguments",
            fragment.arguments,
            True,
            "appended to the block" if fragment.block is not None else "dropped with the fragment",
        ),
    )
    return FragmentDetail(
        position=fragment.position,
        rule=fragment.rule,
        meaning=_MEANINGS.get(fragment.rule, ""),
        reason=fragment.reason,
        block=block_label(view.trace, fragment.block, step),
        phantom=view.trace.is_phantom_block(fragment.block),
        keys=keys,
        late=fragment.late,
        oddities=fragment.oddities,
    )


def _key(name: str, value: Any, counts: bool, rule: str) -> KeyRow:
    if value is None:
        note = (
            "absent or null: nothing appended"
            if name == "function.arguments"
            else ("absent or null: does not count")
        )
        return KeyRow(name, Clipped("absent"), False, note)
    shown = clipped(literal(value), VALUE_LIMIT)
    if name == "function.arguments":
        return KeyRow(name, shown, True, rule)
    return KeyRow(name, shown, counts, f"counts ({rule})" if counts else f"ignored ({rule})")


def _event(event: Event) -> EventRow:
    fields: list[tuple[str, Clipped]] = []
    for label, value in (
        ("delta", event.delta),
        ("reason", event.reason),
        ("message", event.message),
        ("content", event.content),
    ):
        if value is not None:
            fields.append((label, clipped(literal(value), EVENT_LIMIT)))
    return EventRow(event.type, event.contentIndex, tuple(fields))


@dataclass(frozen=True, slots=True)
class BlockCard:
    """One block as of the selected step."""

    kind: str
    title: str
    number: int | None
    content_index: int | None
    id: str
    name: str
    aliases: tuple[str, ...]
    indexes: tuple[str, ...]
    text: Excerpt
    parse: str | None
    parsed: Clipped | None
    parse_error: str | None
    starts: int
    status: str | None
    touched: bool
    opened_here: bool
    nameless: bool
    delivered: Clipped | None = None
    """What the tool would be called with, once the block's arguments are final (its last
    piece is at or before this step): upstream's parse, clipped JSON."""
    delivered_error: str | None = None
    delivered_final: bool = False
    """True at the end step, when the call is really made; before it, "as things stand"."""
    parsed_head: int = 0
    """When not 0, `parsed` is the partial value of the text's first this many characters
    (a long text is not parsed whole at every step)."""

    @property
    def classes(self) -> str:
        """The card's CSS classes: its kind, and whether this step touched it, nameless."""
        marks = (" touched" if self.touched else "") + (" nameless" if self.nameless else "")
        return f"block kind-{self.kind}{marks}"

    @property
    def mark(self) -> tuple[str, str] | None:
        """The tag's class and words when this step opened or touched the block."""
        if self.opened_here:
            return "tag opened", "opened here"
        return ("tag", "touched here") if self.touched else None

    @property
    def registered(self) -> str:
        """Under what the registry finds it: "index 0; id "call_1"" ("" for nothing)."""
        parts = [f"{what} {', '.join(keys)}" for what, keys in
                 (("index", self.indexes), ("id", self.aliases)) if keys]  # fmt: skip
        return "; ".join(parts)

    @property
    def called(self) -> str:
        """The name the tool would be called by: its name, or "(no name)"."""
        return self.name or "(no name)"

    @property
    def text_label(self) -> str:
        """What its text is: a tool call's arguments, or text."""
        return "arguments" if self.kind == "toolCall" else "text"

    @property
    def parsed_label(self) -> str:
        """What the parsed value shows: the whole value, or a partial one (of a head)."""
        if self.parse == "complete":
            return "parsed value"
        if self.parsed_head:
            return f"partial value of the first {words.number(self.parsed_head)} characters"
        return "partial value so far"


@dataclass(frozen=True, slots=True)
class State:
    """The state panel: the blocks shown, and how many were left out."""

    step: int
    cards: tuple[BlockCard, ...]
    hidden: int
    total: int


def state(view: TraceView, step: int) -> State:
    """Every block as of `step` (or, with very many, the ones this step touched and the latest)."""
    trace = view.trace
    touched = {f.block for f in trace.steps[step].fragments if f.block is not None}
    opened = view.blocks_open_at(step)
    if opened <= ALL_BLOCKS_UP_TO:
        numbers = list(range(opened))
    else:
        recent = range(max(0, opened - RECENT_BLOCKS), opened)
        numbers = sorted({*recent, *(n for n in touched if n < opened)})
    cards: list[BlockCard] = []
    for block in view.others:
        other = _block_card(view, block, step, touched)
        if other is not None:
            cards.append(other)
    for number in numbers:
        block = trace.blocks[number]
        card = _block_card(view, block, step, touched)
        if card is not None:
            final = step >= view.last
            cards.append(_with_delivery(card, block, step, final, view.long_text(block)))
    return State(
        step=step,
        cards=tuple(cards),
        hidden=opened - len(numbers),
        total=opened,
    )


def touched(view: TraceView, step: int) -> tuple[BlockCard, ...]:
    """The cards of the blocks `step` appended to, as of it (the export's state of a step:
    the state panel's cards of the blocks that changed, without the others)."""
    trace = view.trace
    numbers = sorted({f.block for f in trace.steps[step].fragments if f.block is not None})
    cards = []
    for number in numbers:
        block = trace.blocks[number]
        card = _block_card(view, block, step, set(numbers))
        if card is not None:
            final = step >= view.last
            cards.append(_with_delivery(card, block, step, final, view.long_text(block)))
    return tuple(cards)


@dataclass(frozen=True, slots=True)
class _Long:
    """A long block's text as of a step: its offsets, and how many pieces were there."""

    text: LongText
    count: int
    """Pieces appended by the end of the step."""
    before: int
    """Pieces appended before the step."""


def _block_card(view: TraceView, block: Block, step: int, touched: set[int]) -> BlockCard | None:
    """The block's card as of `step` (None before it opened); a long text is never joined whole."""
    if block.opened_step > step:
        return None
    long = view.long_text(block)
    count = bisect_right(block.piece_steps, step)
    if long.length(count) < LONG:
        block_state = block.state_at(step)
        return None if block_state is None else _card(view, block_state, step, touched)
    bare = replace(block, pieces=[], piece_steps=array("q")).state_at(step)  # all but the text
    assert bare is not None
    before = bisect_right(block.piece_steps, step - 1)
    return _card(view, bare, step, touched, _Long(long, count, before))


def _long_excerpt(long: _Long) -> Excerpt:
    """`excerpt` of the text so far, from the pieces near its end only."""
    text, count, before = long.text, long.count, long.before
    cut, total = text.length(before), text.length(count)
    return Excerpt(
        hidden_before=max(0, cut - BEFORE_LIMIT),
        before=text.tail(before, BEFORE_LIMIT),
        appended=clipped("".join(text.pieces[before:count]), APPENDED_LIMIT),
        has_appended=cut < total,
        total=total,
    )


def _parse(text: str) -> tuple[str, Clipped | None, str | None]:
    """The parse state of a text, its (partial) value clipped, and its error."""
    result = classify(text)
    parsed = None
    if result.state in ("complete", "partial") and result.value is not None:
        parsed = clipped_head(pretty_json(result.value), VALUE_LIMIT)
    return result.state, parsed, result.error if result.state == "invalid" else None


def _long_parse(long: _Long) -> tuple[str, Clipped | None, str | None, int]:
    """`_parse` of a long text from its parse marks; a partial value is that of its head (the
    last item: how many characters it was parsed from, 0 for the whole text)."""
    text, count = long.text, long.count
    state = text.state(count)
    if state == "complete":
        value = text.once(
            "complete", lambda: clipped_head(pretty_json(text.value(count)), VALUE_LIMIT)
        )
        return state, value, None, 0
    if state == "invalid":
        return state, None, text.once("error", lambda: classify(text.text(count)).error), 0
    if state == "partial":
        # a long text holds more than HEAD_CHARS at every step: one head for all of them
        shown = text.once("head", lambda: _head_value(text.head(count, HEAD_CHARS)))
        if shown is not None:
            return state, Clipped(shown), None, HEAD_CHARS
        found, parsed, _ = _parse(text.text(count))
        return found, parsed, None, 0
    return state, None, None, 0


def _head_value(head: str) -> str | None:
    """The value of a long text's head as shown (clipped), when it runs past `VALUE_LIMIT`."""
    value = partial_head(head)
    if value is None:
        return None
    shown = pretty_json(value)
    return shown[:VALUE_LIMIT] if len(shown) > VALUE_LIMIT + HEAD_MARGIN else None


def _card(
    view: TraceView,
    block: BlockState,
    step: int,
    touched: set[int],
    long: _Long | None = None,
) -> BlockCard:
    server = view.trace.path == "server-tools"
    tool = block.kind == "toolCall"
    parse = parsed = parse_error = None
    parsed_head = 0
    if tool and long is None:
        parse, parsed, parse_error = _parse(block.text)
    elif tool and long is not None:
        parse, parsed, parse_error, parsed_head = _long_parse(long)
    title = f"{'candidate' if server else 'block'} #{block.number}" if tool else block.kind
    return BlockCard(
        kind=block.kind,
        title=title,
        number=block.number,
        content_index=block.content_index,
        id=literal(block.id) if truthy(block.id) else "",
        name=block.name if isinstance(block.name, str) else literal(block.name),
        aliases=_unique(literal(alias) for alias in block.aliases),
        indexes=_unique(literal(index) for index in block.indexes),
        text=excerpt(block.text, block.appended) if long is None else _long_excerpt(long),
        parse=parse,
        parsed=parsed,
        parsed_head=parsed_head,
        parse_error=parse_error,
        starts=block.starts,
        status=_status(block, server) if tool else None,
        touched=_touched(block, tool, touched),
        opened_here=block.opened_step == step,
        nameless=tool and not truthy(block.name),
    )


def _with_delivery(
    card: BlockCard, block: Block, step: int, final: bool, long_text: LongText
) -> BlockCard:
    """The card with what the tool would be called with, once the arguments are final."""
    if block.kind != "toolCall" or (block.fold is not None and block.fold.as_ == "server"):
        return card
    if block.piece_steps and block.piece_steps[-1] > step:
        return card  # more arguments are still to come
    delivery = long_text.once("delivered", lambda: block.delivered)  # parsed once per block
    shown = clipped_head(literal(delivery.arguments), VALUE_LIMIT)
    return replace(card, delivered=shown, delivered_error=delivery.error, delivered_final=final)


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def _touched(block: BlockState, tool: bool, touched: set[int]) -> bool:
    if tool and block.number is not None:
        return block.number in touched
    return bool(block.appended)


def _status(block: BlockState, server: bool) -> str | None:
    if not server:
        return None
    if block.fold is None:
        return "pending"
    kind = "a server-tool call" if block.fold.as_ == "server" else "a client tool call"
    return f"folded at step {block.fold.step} into {kind}"
