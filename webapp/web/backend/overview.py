"""The overview strip: the whole stream at a glance, one column per step or bucket of steps.

A stream of up to `MAX_COLUMNS` steps gets a column per step; a longer one is cut into that
many equal buckets. The buckets (rules fired, anomalies, the step a click lands on) are
computed once per trace view in linear time; a page then renders `MAX_COLUMNS` links, however
long the stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Anomaly, Trace
from webapp.core.words import count, number
from webapp.web.links import Links

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


def strip(found: tuple[Bucket, ...], steps: int, links: Links, step: int) -> Strip:
    """The columns drawn for the page at `step` (O(columns))."""
    cells = tuple(_cell(bucket, links, bucket.first <= step <= bucket.last) for bucket in found)
    if not found or steps <= len(found):
        per = "one column per step"
    else:
        per = f"one column per ~{number(-(-steps // len(found)))} steps"
    return Strip(cells, steps, per)


def _cell(bucket: Bucket, links: Links, current: bool) -> Cell:
    # Short class names (a strip has hundreds of columns): `r<n>` paints the bar in the colour
    # of rule n of RULE_NAMES, `q<n>` its upper part in the second rule's, `s<k>` puts the
    # line between them at k tenths; `e`/`w` mark an error/warning, `cur` the page's step.
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
    if current:
        classes.append("cur")
    return Cell(links.step(bucket.target), " ".join(classes), _title(bucket), current)


def _title(bucket: Bucket) -> str:
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
    return " · ".join(parts)
