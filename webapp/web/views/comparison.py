"""View model of the compare page: two policies side by side, aligned by step, windowed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

from webapp.core.anomalies import severity_of
from webapp.core.records import Record
from webapp.core.rules import Policy
from webapp.core.trace import Step, Trace
from webapp.triage.compare import AlignedStep, Comparison
from webapp.web.http.links import Links
from webapp.web.http.query import PATHS
from webapp.web.http.text import Clipped, clipped, tally
from webapp.web.views.compare_step import InputFragment, fragment_inputs
from webapp.web.views.timeline import Badge, badges, block_label

BLOCK_TEXT_LIMIT = 300
HEADLINE_CODES = 4
"""The most anomaly codes the headline names for one policy; the rest are counted."""


@dataclass(frozen=True, slots=True)
class Flagged:
    """One anomaly code a policy reports: how often, how bad, and its list on the timeline."""

    code: str
    count: int
    severity: str
    url: str


@dataclass(frozen=True, slots=True)
class Side:
    """One policy's view of a step: its fragments' badges and the step link."""

    badges: tuple[Badge, ...]
    events: tuple[str, ...]
    anomalies: tuple[str, ...]
    url: str


@dataclass(frozen=True, slots=True)
class CompareRow:
    """One step under both policies."""

    step: int
    kind: str
    left: Side
    right: Side
    rule_differs: bool
    blocks_differ: bool
    differs: bool
    inputs: tuple[InputFragment, ...] = ()
    """The chunk's fragments as the stream carried them (keys present, absent)."""
    url: str = ""
    """The compare page with this row selected, scrolled to it (a plain link)."""
    panel_url: str = ""
    """The selected-step panel of this row alone (htmx)."""


@dataclass(frozen=True, slots=True)
class FinalBlock:
    """A block at the end of the stream, for the side-by-side block lists."""

    label: str
    id: str
    arguments: Clipped
    starts: int
    phantom: bool


@dataclass(frozen=True, slots=True)
class ComparePage:
    """Everything the compare page shows, for one window of rows."""

    left: Policy
    right: Policy
    path: str
    summary: str
    left_outcome: str
    right_outcome: str
    left_blocks: tuple[FinalBlock, ...]
    right_blocks: tuple[FinalBlock, ...]
    rows: tuple[CompareRow, ...]
    differing: int
    total: int
    only_differing: bool
    start: int
    end: int
    listed: int
    """How many rows the current listing has (all steps, or the differing ones)."""
    prev_url: str | None
    next_url: str | None
    more_url: str | None
    all_url: str
    differing_url: str
    swap_url: str
    paths: tuple[tuple[str, str, bool], ...]
    """(path, URL of this comparison on that path, whether it is the current one)."""
    selected: int | None = None
    """The selected row's step (`?step=N`), None when none is."""
    left_anomalies: tuple[Flagged, ...] = ()
    right_anomalies: tuple[Flagged, ...] = ()
    """Each policy's own anomalies by code, errors first (the headline names them too)."""


def compare_page(
    comparison: Comparison,
    links: Links,
    *,
    only: bool,
    start: int,
    size: int,
    records: Sequence[Record] = (),
    selected: int | None = None,
    framed: bool = False,
) -> ComparePage:
    """The window of rows from `start` in the listing (every step, or only differing ones);
    `records` shows each row's fragments, `selected` marks a row, `framed` links /embed/..."""
    left, right = comparison.left.policy, comparison.right.policy
    listing = comparison.differing if only else comparison.rows
    start = max(0, min(start, len(listing)))
    end = min(len(listing), start + size)
    sides = (links.with_policy(left), links.with_policy(right))
    at = _Window(links, left, right, only, start, framed)
    rows = at.rows(comparison, listing[start:end], sides, records)
    more = at.url(end) if end < len(listing) else None
    return ComparePage(
        left=left,
        right=right,
        path=comparison.left.path,
        summary=headline(comparison),
        left_outcome=_without_policy(comparison.left_outcome.describe(), left),
        right_outcome=_without_policy(comparison.right_outcome.describe(), right),
        left_blocks=_final_blocks(comparison.left),
        right_blocks=_final_blocks(comparison.right),
        rows=rows,
        differing=len(comparison.differing),
        total=len(comparison.rows),
        only_differing=only,
        start=start,
        end=end,
        listed=len(listing),
        prev_url=at.url(max(0, start - size)) if start > 0 else None,
        next_url=more,
        more_url=more,
        all_url=at.url(0, differing=False),
        differing_url=at.url(0, differing=True),
        swap_url=links.compare(right, left, only=only, framed=framed),
        paths=at.paths(),
        selected=selected,
        left_anomalies=flagged(comparison.left, sides[0]),
        right_anomalies=flagged(comparison.right, sides[1]),
    )


@dataclass(frozen=True, slots=True)
class _Window:
    """The URLs of one window of the compare page's listing."""

    links: Links
    left: Policy
    right: Policy
    only: bool
    start: int
    framed: bool

    def url(self, at: int, differing: bool | None = None) -> str:
        only = self.only if differing is None else differing
        return self.links.compare(self.left, self.right, only=only, start=at, framed=self.framed)

    def rows(
        self,
        comparison: Comparison,
        window: Sequence[AlignedStep],
        sides: tuple[Links, Links],
        records: Sequence[Record],
    ) -> tuple[CompareRow, ...]:
        steps = {row.step for row in window}
        flags = (_flags(comparison.left, steps), _flags(comparison.right, steps))
        choice = comparison.left.choice
        return tuple(
            self.picked(_compare_row(comparison, row, sides, flags), records, choice)
            for row in window
        )

    def picked(self, row: CompareRow, records: Sequence[Record], choice: int) -> CompareRow:
        """The row with its chunk's fragments as carried, its link and its panel's link."""
        record = records[row.step] if row.step < len(records) else None
        compare = partial(self.links.compare, self.left, self.right, only=self.only)
        return replace(
            row,
            inputs=fragment_inputs(record, choice) if records else (),
            url=compare(start=self.start, step=row.step, framed=self.framed)
            + f"#crow-{row.step}",  # without JavaScript, the page opens at the row
            panel_url=compare(step=row.step, panel=True, framed=self.framed),
        )

    def paths(self) -> tuple[tuple[str, str, bool], ...]:
        """Each assembly path, the page on it, and whether it is this page's."""
        return tuple(
            (
                path,
                self.links.with_path(path).compare(
                    self.left, self.right, only=self.only, framed=self.framed
                ),
                path == self.links.options.path,
            )
            for path in PATHS
        )


def _by_code(trace: Trace) -> list[tuple[str, int]]:
    """The trace's anomaly codes with their counts: errors first, then the most frequent."""
    counts = Counter(anomaly.code for anomaly in trace.anomalies)
    return sorted(counts.items(), key=lambda item: (severity_of(item[0]) != "error", -item[1]))


def flagged(trace: Trace, links: Links) -> tuple[Flagged, ...]:
    """The trace's anomalies by code, each with the timeline's list of them (at the first)."""
    first: dict[str, int] = {}
    for anomaly in trace.anomalies:
        first.setdefault(anomaly.code, anomaly.step)
    return tuple(
        Flagged(code, n, severity_of(code), f"{links.filtered(code).step(first[code])}#anomalies")
        for code, n in _by_code(trace)
    )


def named(trace: Trace) -> str:
    """The codes with their counts, errors first (at most `HEADLINE_CODES`), or ""."""
    codes = _by_code(trace)
    shown = [code if n == 1 else f"{code} \u00d7{n}" for code, n in codes[:HEADLINE_CODES]]
    if len(codes) > HEADLINE_CODES:
        shown.append(f"{len(codes) - HEADLINE_CODES} more")
    return ", ".join(shown)


def headline(comparison: Comparison) -> str:
    """What changed, and each policy's own anomalies by name: a side that ends with fewer
    blocks may still have guessed ("adr-0019: 2 blocks (anomalies: ambiguous-continuation)")."""
    left, right = comparison.left, comparison.right
    outcomes = comparison.left_outcome, comparison.right_outcome
    if not comparison.differing and outcomes[0].blocks == outcomes[1].blocks:
        said = f"{left.policy} and {right.policy} agree on every step"
        codes = named(right)
        return f"{said} (both report {codes})" if codes else f"{said} (no anomalies)"
    parts = []
    for outcome, trace in zip(outcomes, (left, right), strict=True):
        codes = named(trace)
        parts.append(f"{outcome.describe()} ({f'anomalies: {codes}' if codes else 'no anomalies'})")
    return "; ".join(parts)


def _without_policy(text: str, policy: str) -> str:
    prefix = f"{policy}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


Flags = dict[int, list[str]]


def _flags(trace: Trace, steps: set[int]) -> Flags:
    by_step = trace.anomalies_by_step()
    return {step: [a.code for a in by_step[step]] for step in steps if step in by_step}


def _compare_row(
    comparison: Comparison, row: AlignedStep, sides: tuple[Links, Links], flags: tuple[Flags, Flags]
) -> CompareRow:
    return CompareRow(
        step=row.step,
        kind=row.left.kind,
        left=_side(comparison.left, row.left, sides[0], flags[0].get(row.step, [])),
        right=_side(comparison.right, row.right, sides[1], flags[1].get(row.step, [])),
        rule_differs=row.rule_differs,
        blocks_differ=row.blocks_differ,
        differs=row.differs,
    )


def _side(trace: Trace, step: Step, links: Links, anomalies: list[str]) -> Side:
    step_badges = badges(trace, step, appended=False)
    events = tally(
        event.type
        for event in step.events
        if event.type in ("toolcall_start", "toolcall_end", "done", "error")
    )
    return Side(step_badges, events, tally(anomalies), links.step(step.step))


def _final_blocks(trace: Trace) -> tuple[FinalBlock, ...]:
    return tuple(
        FinalBlock(
            label=block_label(trace, block.number),
            id=str(block.id) if block.id else "",
            arguments=clipped(block.text, BLOCK_TEXT_LIMIT),
            starts=len(block.start_steps),
            phantom=trace.is_phantom_block(block.number),
        )
        for block in trace.blocks[:200]
    )
