"""View model of the compare page: two policies side by side, aligned by step, windowed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlencode

from webapp.compare import Comparison, Row
from webapp.options import Options
from webapp.rules import Policy
from webapp.trace import Step, Trace
from webapp.web.query import PATHS, Links, options_query
from webapp.web.text import Clipped, clip, tally
from webapp.web.views import Badge, badges, block_label, is_phantom

BLOCK_TEXT_LIMIT = 300


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
    line: int | None
    kind: str
    left: Side
    right: Side
    rule_differs: bool
    blocks_differ: bool
    differs: bool


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


def compare_url(
    stream_id: str,
    options: Options,
    left: Policy,
    right: Policy,
    *,
    only: bool = False,
    start: int = 0,
) -> str:
    """The compare page URL for these settings."""
    items: dict[str, str | int] = {"left": left, "right": right}
    query = options_query(options)
    query.pop("policy", None)
    items.update(query)
    if only:
        items["only"] = "differing"
    if start:
        items["start"] = start
    return f"/s/{stream_id}/compare?{urlencode(items)}"


def compare_page(
    comparison: Comparison,
    stream_id: str,
    options: Options,
    *,
    only: bool,
    start: int,
    size: int,
) -> ComparePage:
    """The window of rows from `start` in the listing (every step, or only differing ones)."""
    left, right = comparison.left.policy, comparison.right.policy
    listing = comparison.differing if only else comparison.rows
    start = max(0, min(start, len(listing)))
    end = min(len(listing), start + size)
    left_links = Links(stream_id, _with_policy(options, left))
    right_links = Links(stream_id, _with_policy(options, right))
    window = listing[start:end]
    steps = {row.step for row in window}
    flags = (_flags(comparison.left, steps), _flags(comparison.right, steps))
    rows = tuple(_row(comparison, row, left_links, right_links, flags) for row in window)

    def url(at: int, **changes: bool) -> str:
        return compare_url(
            stream_id, options, left, right, only=changes.get("only", only), start=at
        )

    return ComparePage(
        left=left,
        right=right,
        path=comparison.left.path,
        summary=comparison.summary,
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
        prev_url=url(max(0, start - size)) if start > 0 else None,
        next_url=url(end) if end < len(listing) else None,
        more_url=url(end) if end < len(listing) else None,
        all_url=url(0, only=False),
        differing_url=url(0, only=True),
        swap_url=compare_url(stream_id, options, right, left, only=only),
        paths=tuple(
            (
                path,
                compare_url(stream_id, replace(options, path=path), left, right, only=only),
                path == options.path,
            )
            for path in PATHS
        ),
    )


def _without_policy(text: str, policy: str) -> str:
    prefix = f"{policy}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def _with_policy(options: Options, policy: Policy) -> Options:
    return Options(policy, options.path, options.server_tools, options.choice)


Flags = dict[int, list[str]]


def _flags(trace: Trace, steps: set[int]) -> Flags:
    by_step = trace.anomalies_by_step()
    return {step: [a.code for a in by_step[step]] for step in steps if step in by_step}


def _row(
    comparison: Comparison, row: Row, left: Links, right: Links, flags: tuple[Flags, Flags]
) -> CompareRow:
    return CompareRow(
        step=row.step,
        line=row.left.line,
        kind=row.left.kind,
        left=_side(comparison.left, row.left, left, flags[0].get(row.step, [])),
        right=_side(comparison.right, row.right, right, flags[1].get(row.step, [])),
        rule_differs=row.rule_differs,
        blocks_differ=row.blocks_differ,
        differs=row.differs,
    )


def _side(trace: Trace, step: Step, links: Links, anomalies: list[str]) -> Side:
    step_badges = badges(trace, step)
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
            arguments=clip(block.text, BLOCK_TEXT_LIMIT),
            starts=len(block.start_steps),
            phantom=is_phantom(trace, block.number),
        )
        for block in trace.blocks[:200]
    )
