"""The anomaly list: every anomaly of a trace, grouped by code, errors first, paged.

A stream can report the same anomaly thousands of times (`invalid-arguments` on every
block); the list shows one line per code with its count and the steps and blocks it spans,
the first few instances under it, and all of them a page at a time when filtered by the code.
The groups are built once per trace view (`anomaly_groups`); a page renders at most a page
of instances.
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.core.anomalies import Severity
from webapp.core.trace import Anomaly, Trace
from webapp.core.words import count, number
from webapp.web.backend.trace.anomaly_groups import Group
from webapp.web.http.links import Links
from webapp.web.http.text import clipped_head
from webapp.web.views.timeline import block_label

PREVIEW = 5
"""Instances shown under each code in the unfiltered list."""
PAGE = 50
"""Instances per page when the list is filtered by one code."""
MESSAGE_LIMIT = 300
_DASH = "\u2013"


@dataclass(frozen=True, slots=True)
class Jump:
    """A link that changes the list: the page's URL (pushed to history), the list's alone."""

    href: str
    partial: str


def _jump(links: Links, step: int) -> Jump:
    return Jump(links.step(step), links.anomalies(step))


@dataclass(frozen=True, slots=True)
class Item:
    """One anomaly as listed: where it fired and a link to that step."""

    step: int
    line: int | None
    block: str
    message: str
    url: str
    anchor: str = ""
    """The id of the anomaly's box in the step's detail panel (`why-CODE`)."""

    @property
    def href(self) -> str:
        """The step's page scrolled to the anomaly's box (without JavaScript; htmx swaps the
        stage from `url` and scrolls there itself)."""
        return f"{self.url}#{self.anchor}" if self.anchor else self.url


@dataclass(frozen=True, slots=True)
class GroupView:
    """One code's line in the list and the instances shown under it."""

    code: str
    severity: Severity
    meaning: str
    count: str
    steps: str
    blocks: str
    items: tuple[Item, ...]
    shown: str
    """Which instances are shown ("1-5 of 4,605"), empty when all are."""
    all_url: Jump | None
    """The list filtered by this code, when not all instances are shown."""
    open: bool


@dataclass(frozen=True, slots=True)
class Filter:
    """A link that filters the list by a code (or shows all of them)."""

    label: str
    severity: Severity | None
    count: int
    url: Jump
    on: bool


@dataclass(frozen=True, slots=True)
class Panel:
    """The anomaly list as shown on the page at `step`."""

    step: int
    code: str
    headline: str
    filters: tuple[Filter, ...]
    groups: tuple[GroupView, ...]
    prev_url: Jump | None
    next_url: Jump | None


def panel(
    trace: Trace, found: tuple[Group, ...], links: Links, step: int, code: str, start: int
) -> Panel:
    """The list for the page at `step`: all codes, or one code's instances from `start`."""
    errors = sum(len(g.items) for g in found if g.severity == "error")
    warnings = sum(len(g.items) for g in found if g.severity == "warning")
    filters = [Filter("all", None, errors + warnings, _jump(links.filtered(""), step), not code)]
    filters += [
        Filter(
            g.code, g.severity, len(g.items), _jump(links.filtered(g.code), step), g.code == code
        )
        for g in found
    ]
    shown = [g for g in found if g.code == code] if code else list(found)
    views = []
    prev_url = next_url = None
    for group in shown:
        if code:
            start = min(start, max(0, len(group.items) - 1) // PAGE * PAGE)
            end = min(len(group.items), start + PAGE)
            if start > 0:
                prev_url = _jump(links.filtered(code, max(0, start - PAGE)), step)
            if end < len(group.items):
                next_url = _jump(links.filtered(code, end), step)
        else:
            start, end = 0, min(len(group.items), PREVIEW)
        views.append(_group(trace, group, links, step, start, end, bool(code)))
    if not found:
        headline = "No anomalies."
    else:
        parts = [count(errors, "error")] if errors else []
        parts += [count(warnings, "warning")] if warnings else []
        headline = " and ".join(parts)
    return Panel(
        step=step,
        code=code,
        headline=headline,
        filters=tuple(filters) if len(found) > 1 or code else (),
        groups=tuple(views),
        prev_url=prev_url,
        next_url=next_url,
    )


def _group(
    trace: Trace, group: Group, links: Links, step: int, start: int, end: int, filtered: bool
) -> GroupView:
    items = group.items
    total = len(items)
    whole = start == 0 and end == total
    return GroupView(
        code=group.code,
        severity=group.severity,
        meaning=group.meaning,
        count=f"\u00d7{number(total)}",
        steps=_span("step", items[0].step, items[-1].step),
        blocks=_blocks(group.blocks),
        items=tuple(_item(trace, a, links) for a in items[start:end]),
        shown="" if whole else f"{number(start + 1)}{_DASH}{number(end)} of {number(total)}",
        all_url=None if whole or filtered else _jump(links.filtered(group.code), step),
        open=filtered or total <= PREVIEW,
    )


def _item(trace: Trace, anomaly: Anomaly, links: Links) -> Item:
    line = trace.line_of(anomaly.step)
    message = clipped_head(anomaly.message, MESSAGE_LIMIT)
    return Item(
        step=anomaly.step,
        line=line,
        block=block_label(trace, anomaly.block) if anomaly.block is not None else "",
        message=message.head + ("…" if message.hidden else ""),
        url=links.step(anomaly.step),
        anchor=why(anomaly.code),
    )


def why(code: str) -> str:
    """The id of a code's first box in a step's detail panel."""
    return f"why-{code}"


def _span(noun: str, first: int, last: int) -> str:
    if first == last:
        return f"{noun} {number(first)}"
    return f"{noun}s {number(first)}{_DASH}{number(last)}"


def _blocks(blocks: tuple[int, ...]) -> str:
    if not blocks:
        return ""
    if len(blocks) == 1:
        return f"block #{number(blocks[0])}"
    first, last = f"#{number(blocks[0])}", f"#{number(blocks[-1])}"
    if len(blocks) == blocks[-1] - blocks[0] + 1:
        return f"blocks {first}{_DASH}{last}"
    return f"{count(len(blocks), 'block')} between {first} and {last}"
