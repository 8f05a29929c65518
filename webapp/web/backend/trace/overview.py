"""The overview strip: the whole stream at a glance, one column per step or bucket of steps.

A stream of up to `MAX_COLUMNS` steps gets a column per step; a longer one is cut into that
many equal buckets. The buckets (rules fired, anomalies, the step a click lands on) are
computed once per trace view in linear time; a page then renders `MAX_COLUMNS` links, however
long the stream.

The provider's quirks (`webapp.core.contract`) are marked apart from the anomalies, on the
strip and on the timeline's steps: `QuirkMarks`, built once per trace view from the steps each
quirk names, answers a step's codes, a run's count and a column's codes in O(1) or a bisect.
They are read from the records, so the marks are the same under every policy and path.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from webapp.core.contract import Contract
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Anomaly, Trace
from webapp.core.words import count, number
from webapp.web.http.links import Links

MAX_COLUMNS = 300
"""The most columns the strip draws; a longer stream's steps are bucketed."""
_SPLITS = 10
"""The share of a column's dominant rule is drawn in tenths."""
_PLACE: dict[str, int] = {name: place for place, name in enumerate(RULE_NAMES)}


@dataclass(frozen=True, slots=True)
class Bucket:
    """Steps `first` to `last` (inclusive): the rules that fired there and their anomalies."""

    first: int
    last: int
    target: int
    """Where a click lands: the first error's step, else the first warning's, else `first`."""
    rules: tuple[tuple[str, int], ...]
    """Fragments per rule, most first (rules that did not fire are left out)."""
    errors: int
    warnings: int


def buckets(
    trace: Trace, by_step: Mapping[int, tuple[Anomaly, ...]], limit: int = MAX_COLUMNS
) -> tuple[Bucket, ...]:
    """The trace's steps cut into at most `limit` equal buckets (one per step when they fit);
    a bucket's fragments per rule are `Trace.rules_in` its steps."""
    total = len(trace.steps)
    width = min(total, max(1, limit))
    bounds = [column * total // width for column in range(width + 1)]
    flagged = sorted(step for step, found in by_step.items() if found and 0 <= step < total)
    found: list[Bucket] = []
    at = 0
    for column in range(width):
        first, end = bounds[column], bounds[column + 1]
        counts = trace.rules_in(first, end)
        errors = warnings = 0
        first_error = first_warning = None
        while at < len(flagged) and flagged[at] < end:
            step = flagged[at]
            for anomaly in by_step[step]:
                if anomaly.severity == "error":
                    errors += 1
                    first_error = step if first_error is None else first_error
                else:
                    warnings += 1
                    first_warning = step if first_warning is None else first_warning
            at += 1
        ranked = sorted(
            counts.items(),
            key=lambda item: (-item[1], _PLACE.get(item[0], 99)),
        )
        target = first_error if first_error is not None else first_warning
        found.append(
            Bucket(
                first, end - 1, first if target is None else target, tuple(ranked), errors, warnings
            )
        )
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Cell:
    """One column of the strip as drawn: its link, its colour classes, its tooltip."""

    url: str
    classes: str
    title: str
    current: bool


@dataclass(frozen=True, slots=True)
class Strip:
    """The strip: its columns, and how many steps each stands for (for the legend)."""

    cells: tuple[Cell, ...]
    steps: int
    per_column: str


def strip(
    found: tuple[Bucket, ...],
    steps: int,
    links: Links,
    step: int,
    quirks: Sequence[tuple[str, ...]] = (),
    drawn: dict[Links, tuple[Cell, ...]] | None = None,
) -> Strip:
    """The columns drawn for the page at `step` (O(columns)); `quirks` are the provider's quirk
    codes in each column (`QuirkMarks.in_columns`), marked apart from the anomalies. `drawn`
    keeps the columns drawn under each `links` with none current (a view's, `TraceView.strips`):
    every page of the view then draws only its current column again."""

    def quirks_at(at: int) -> tuple[str, ...]:
        return quirks[at] if at < len(quirks) else ()

    cells = drawn.get(links) if drawn is not None else None
    if cells is None:
        cells = tuple(_cell(bucket, links, False, quirks_at(at)) for at, bucket in enumerate(found))
        if drawn is not None:
            if len(drawn) >= DRAWN_KEPT:
                drawn.clear()
            drawn[links] = cells
    current = [at for at, bucket in enumerate(found) if bucket.first <= step <= bucket.last]
    if current:
        shown = list(cells)
        for at in current:
            shown[at] = _cell(found[at], links, True, quirks_at(at))
        cells = tuple(shown)
    if not found or steps <= len(found):
        per = "one column per step"
    else:
        per = f"one column per ~{number(-(-steps // len(found)))} steps"
    return Strip(cells, steps, per)


DRAWN_KEPT = 8
"""Links a view keeps its drawn columns for (the options and filters being looked at)."""


def _cell(bucket: Bucket, links: Links, current: bool, quirks: tuple[str, ...] = ()) -> Cell:
    # Short class names (a strip has hundreds of columns): `r<n>` paints the bar in the colour
    # of rule n of RULE_NAMES, `q<n>` its upper part in the second rule's, `s<k>` puts the
    # line between them at k tenths; `e`/`w` mark an error/warning, `qk` a provider quirk (drawn
    # below the bar, apart from the anomalies' mark above it), `cur` the page's step.
    classes = ["oc"]
    if bucket.rules:
        top, top_count = bucket.rules[0]
        classes.append(f"r{_PLACE[top]}")
        if len(bucket.rules) > 1:
            total = sum(n for _, n in bucket.rules)
            share = min(_SPLITS - 1, max(1, round(top_count * _SPLITS / total)))
            classes += [f"q{_PLACE[bucket.rules[1][0]]}", f"s{share}"]
    else:
        classes.append("z")
    if bucket.errors:
        classes.append("e")
    elif bucket.warnings:
        classes.append("w")
    if quirks:
        classes.append("qk")
    if current:
        classes.append("cur")
    return Cell(links.step(bucket.target), " ".join(classes), _title(bucket, quirks), current)


def _title(bucket: Bucket, quirks: tuple[str, ...] = ()) -> str:
    where = (
        f"step {number(bucket.first)}"
        if bucket.first == bucket.last
        else f"steps {number(bucket.first)}\u2013{number(bucket.last)}"
    )
    rules = ", ".join(f"{name} {number(n)}" for name, n in bucket.rules) or "no fragments"
    parts = [where, rules]
    if bucket.errors:
        parts.append(count(bucket.errors, "error"))
    if bucket.warnings:
        parts.append(count(bucket.warnings, "warning"))
    if quirks:
        parts.append(f"quirk{'s' if len(quirks) > 1 else ''}: {', '.join(quirks)}")
    return " · ".join(parts)


QUIRK_MARK = 120
"""The heap of one quirk-marked step in the index (its dict entry, its codes' tuple, the array)."""


@dataclass(frozen=True, slots=True)
class QuirkMarks:
    """The quirk codes at each step that shows one, and in each overview column."""

    by_step: dict[int, tuple[str, ...]] = field(default_factory=dict)
    steps: array[int] = field(default_factory=lambda: array("q"))
    """The marked steps, ascending."""
    in_columns: tuple[tuple[str, ...], ...] = ()
    """The codes in each overview column (aligned with the view's buckets)."""

    def at(self, step: int) -> tuple[str, ...]:
        """The codes that show at `step` (in the table's order of first appearance)."""
        return self.by_step.get(step, ())

    def count_within(self, first: int, last: int) -> int:
        """How many marked steps lie in `first`..`last` (inclusive)."""
        return bisect_left(self.steps, last + 1) - bisect_left(self.steps, first)

    @property
    def weight(self) -> int:
        """An estimate of the index's heap, in bytes."""
        return QUIRK_MARK * len(self.steps)


def quirk_marks(contract: Contract | None, columns: Sequence[Bucket]) -> QuirkMarks:
    """The index for a trace's contract (None: no quirk read) and its overview's buckets."""
    if contract is None or not contract.quirks:
        return QuirkMarks(in_columns=tuple(() for _ in columns))
    codes: dict[int, list[str]] = {}
    for found in contract.quirks:
        for step in found.steps:
            listed = codes.setdefault(step, [])
            if found.code not in listed:
                listed.append(found.code)
    by_step = {step: tuple(found) for step, found in codes.items()}
    steps = array("q", sorted(by_step))
    marked: list[tuple[str, ...]] = []
    at = 0
    for bucket in columns:
        while at < len(steps) and steps[at] < bucket.first:
            at += 1
        seen: list[str] = []
        end = at
        while end < len(steps) and steps[end] <= bucket.last:
            seen += [code for code in by_step[steps[end]] if code not in seen]
            end += 1
        marked.append(tuple(seen))
        at = end
    return QuirkMarks(by_step, steps, tuple(marked))
