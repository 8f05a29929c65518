"""Text view of a policy comparison: the summary, each step where the policies disagree, and
the final blocks of each side."""

from __future__ import annotations

from collections.abc import Iterator

from webapp.cli.render import (
    Painter,
    block_lines,
    escape,
    event_text,
    fragment_text,
    fragment_width,
    input_lines,
    legend_line,
    summary_line,
)
from webapp.core.records import ReadResult
from webapp.core.trace import Step
from webapp.core.words import quote
from webapp.triage.compare import AlignedStep, Comparison

_CELL_WIDTH = 20
END_CLIP = 40


def compare_lines(
    comparison: Comparison, source: ReadResult | None, paint: Painter
) -> Iterator[str]:
    """What `streamviz compare` prints."""
    left, right = comparison.left, comparison.right
    yield from input_lines(source, paint)
    options = f"path {left.path}"
    if left.server_tools:
        options += f" | server tools {escape(','.join(left.server_tools))}"
    yield (
        f"{paint('compare', 'bold')}  {paint(left.policy, 'bold')} vs "
        f"{paint(right.policy, 'bold')} | {options} | choice {left.choice}"
    )
    yield legend_line(paint)
    yield f"{paint('summary', 'bold')}  {escape(comparison.summary)}"
    differing = comparison.differing
    yield f"{len(differing)} of {len(comparison.rows)} steps differ"
    width = max(len(left.policy), len(right.policy))
    for row in differing:
        yield ""
        yield from row_lines(row, comparison, paint, width)
    for trace in (left, right):
        yield ""
        yield from block_lines(trace, paint, title=f"{trace.policy} blocks")
        yield summary_line(trace, paint)


def row_lines(
    row: AlignedStep, comparison: Comparison, paint: Painter, width: int
) -> Iterator[str]:
    """One differing step: each side's fragments (rule, block, reason) or differing end events."""
    line = "-" if row.left.line is None else str(row.left.line)
    yield paint(f"step {row.step}  line {line}  ({row.left.kind})", "bold")
    sides = (
        (comparison.left.policy, row.left, row.right),
        (comparison.right.policy, row.right, row.left),
    )
    for policy, step, other in sides:
        label = f"  {policy:<{width}}  "
        if not step.fragments:
            yield label + _end_events(step, other)
        for fragment in step.fragments:
            cell = fragment_text(fragment, paint)
            padding = " " * max(1, _CELL_WIDTH - fragment_width(fragment))
            yield f"{label}[{fragment.position}] {cell}{padding}{escape(fragment.reason)}"


def _end_events(step: Step, other: Step) -> str:
    """The `*_end` events of a step that the other side does not fire alike."""
    theirs = {(e.type, e.contentIndex, e.content) for e in other.events}
    ends = [
        f"{event_text(event)} {quote(event.content or '', END_CLIP)}"
        for event in step.events
        if event.type.endswith("_end")
        and (event.type, event.contentIndex, event.content) not in theirs
    ]
    return " ".join(ends) if ends else "-"
