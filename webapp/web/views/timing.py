"""View models of a stream's timing: the milestones, the arrival plot, the gaps and stalls.

Everything here reads a `webapp.web.backend.capture.timing.Timing` (one arrival per step) and the
trace view; the plot is drawn by the template from the coordinates computed here, as SVG with
classes only (the pages' Content-Security-Policy allows no inline style). A long stream's plot
has one point per pixel column, not one per step.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace

from webapp.core.trace import Trace
from webapp.core.words import number
from webapp.web.backend.capture.timing import Timing
from webapp.web.backend.trace.overview import Bucket, Strip
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links
from webapp.web.views.timeline import RunRow, TimelineRow, Window

SOURCES = {
    "capture": "recorded by this server's proxy as the bytes arrived",
    "cassette": "from the cassette's recorded arrivals (streamviz_timing)",
    "har": "from the HAR entry's timings, which give only the first byte and the end",
}
"""Where a timing comes from, in words (by `Timing.source`)."""
PLOT_WIDTH = 720
PLOT_HEIGHT = 170
_LEFT, _RIGHT, _TOP, _BOTTOM = 46, 10, 10, 24
MAX_BANDS = 60
"""The most stalls the plot draws (the longest, when there are more)."""
MAX_LISTED = 8
"""The most stalls the panel lists by name."""


def duration(ms: float) -> str:
    """`0.4 ms`, `120 ms`, `1 s`, `1.25 s`, `14.2 s`, `2 min 5 s`."""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    if ms < 60_000:
        seconds = f"{ms / 1000:.2f}" if ms < 10_000 else f"{ms / 1000:.1f}"
        return f"{seconds.rstrip('0').rstrip('.')} s"
    minutes, seconds_left = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds_left} s"


@dataclass(frozen=True, slots=True)
class Milestone:
    """One moment of the stream: what, when (None: unknown or not yet), and its step."""

    label: str
    ms: float | None
    shown: str
    url: str | None = None
    hint: str = ""


@dataclass(frozen=True, slots=True)
class Band:
    """A stall on the plot: a shaded span from the step before to the step that came late."""

    x: float
    width: float
    step: int
    url: str
    title: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A vertical line on the plot at a milestone."""

    x: float
    label: str
    kind: str
    anchor: str
    """Where its label sits: "start" (right of the line) or "end" (left of it, near the
    plot's right edge); labels are stacked one under the other, so none overlap."""


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis label at a position."""

    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Plot:
    """The arrival plot: steps arrived (up) over time since the request (right)."""

    width: int
    height: int
    left: int
    right: float
    top: int
    bottom: float
    line: str
    """The SVG path of the steps arrived by each moment."""
    bands: tuple[Band, ...]
    marks: tuple[Mark, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    label: str


@dataclass(frozen=True, slots=True)
class Stall:
    """A gap over the threshold before a step, with its link."""

    step: int
    gap: str
    url: str


@dataclass(frozen=True, slots=True)
class Panel:
    """The timing section of a stream's page."""

    source: str
    milestones: tuple[Milestone, ...]
    stalls: tuple[Stall, ...]
    stall_count: int
    threshold: str
    per_step: bool
    plot: Plot | None
    live: bool


def first_fragment_step(view: TraceView) -> int | None:
    """The first step with a tool-call fragment (any rule), or None."""
    firsts = [steps[0] for steps in view.rule_steps.values() if len(steps)]
    return min(firsts) if firsts else None


def panel(view: TraceView, timing: Timing, links: Links, *, live: bool = False) -> Panel:
    """The timing section: milestones with their steps, the stalls, the plot."""
    trace = view.trace
    records = view.source.records
    fragment = first_fragment_step(view)
    finishes = trace.finish_steps()
    finish = finishes[0] if finishes else None
    unknown = "not known" if timing.per_step else "not in a HAR entry"

    def at(label: str, step: int | None, none: str, hint: str = "") -> Milestone:
        if step is None:
            return Milestone(label, None, none, hint=hint)
        ms = timing.at(step)
        where = f"step {number(step)}"
        shown = f"{duration(ms)} · {where}" if ms is not None else f"{unknown} · {where}"
        return Milestone(label, ms, shown, links.step(step), hint)

    first_byte = timing.first_byte
    milestones = [
        Milestone(
            "first byte",
            first_byte,
            duration(first_byte) if first_byte is not None else "not known",
            hint="the response's status and headers" if timing.source == "capture" else "",
        ),
        at("first chunk", 0 if records else None, "none yet" if live else "no records"),
        at(
            "first tool-call fragment",
            fragment,
            "none yet" if live else "none in this stream",
        ),
        at("finish_reason", finish, "not yet" if live else _unsent(trace)),
    ]
    milestones.append(_end(timing, records, live))
    last_record = records - 1 if live else records  # while live the end step has not come
    stalls = [step for step in timing.stalls if step <= last_record]
    return Panel(
        source=SOURCES.get(timing.source, timing.source),
        milestones=tuple(milestones),
        stalls=_longest(timing, links, stalls),
        stall_count=len(stalls),
        threshold=duration(timing.stall_ms),
        per_step=timing.per_step,
        plot=plot(timing, links, records, fragment, finish, live=live) if timing.per_step else None,
        live=live,
    )


def _unsent(trace: Trace) -> str:
    """A finish_reason that never came, in words: never sent, or not recorded when the
    stream's end was not."""
    end = trace.contract.end if trace.contract is not None else None
    return "never sent" if end is None else f"not recorded (the end was not: {end})"


def _end(timing: Timing, records: int, live: bool) -> Milestone:
    """When the stream ended; while it is live, when its last chunk came."""
    if live:
        latest = timing.at(records - 1) if records else None
        so_far = f"not yet · the last chunk came at {duration(latest)}" if latest else "not yet"
        return Milestone("end", None, so_far)
    end = timing.end
    return Milestone("end", end, duration(end) if end is not None else "not known")


def _longest(timing: Timing, links: Links, stalls: list[int]) -> tuple[Stall, ...]:
    """The `MAX_LISTED` longest stalls, in step order."""
    longest = sorted(stalls, key=lambda step: -(timing.gap(step) or 0))
    return tuple(
        Stall(step, duration(timing.gap(step) or 0), links.step(step))
        for step in sorted(longest[:MAX_LISTED])
    )


def plot(
    timing: Timing,
    links: Links,
    records: int,
    fragment: int | None,
    finish: int | None,
    *,
    live: bool = False,
) -> Plot | None:
    """The arrival plot, or None when no record's arrival is known."""
    known = [(step, t) for step in range(records) if (t := timing.at(step)) is not None]
    if not known:
        return None
    span = max(t for _, t in known)
    if not live and timing.end is not None:
        span = max(span, timing.end)
    span = max(span, 1.0)
    width, height = PLOT_WIDTH, PLOT_HEIGHT
    right, bottom = width - _RIGHT, height - _BOTTOM
    inner_w, inner_h = right - _LEFT, bottom - _TOP

    def x(ms: float) -> float:
        return round(_LEFT + inner_w * ms / span, 1)

    def y(arrived: int) -> float:
        return round(bottom - inner_h * arrived / max(1, records), 1)

    line = _staircase(known, span, inner_w, x, y)
    bands = _bands(timing, links, x, records)
    marks = _marks(timing, x, span, fragment, finish)
    label = f"{number(records)} records arrived over {duration(span)}" + (
        f"; {number(len(timing.stalls))} stalls over {duration(timing.stall_ms)}" if bands else ""
    )
    return Plot(
        width=width,
        height=height,
        left=_LEFT,
        right=right,
        top=_TOP,
        bottom=bottom,
        line=line,
        bands=bands,
        marks=tuple(sorted(marks, key=lambda mark: mark.x)),
        x_ticks=tuple(Tick(x(ms), duration(ms) if ms else "0") for ms in _ticks(span)),
        y_ticks=(Tick(y(0), "0"), Tick(y(records), number(records))),
        label=label,
    )


def _staircase(
    known: list[tuple[int, float]],
    span: float,
    inner_w: float,
    x: Callable[[float], float],
    y: Callable[[int], float],
) -> str:
    """The SVG path of records arrived over time: one step up per pixel column at most."""
    columns = int(inner_w)
    by_column = [0] * (columns + 1)
    for step, t in known:
        column = min(columns, int(t / span * columns))
        by_column[column] = max(by_column[column], step + 1)
    path = [f"M{_LEFT},{y(0)}"]
    arrived = 0
    for column, most in enumerate(by_column):
        if most > arrived:
            path.append(f"H{round(_LEFT + column * inner_w / columns, 1)}V{y(most)}")
            arrived = most
    path.append(f"H{x(span)}")
    return "".join(path)


def _marks(
    timing: Timing,
    x: Callable[[float], float],
    span: float,
    fragment: int | None,
    finish: int | None,
) -> list[Mark]:
    """The first byte, first tool-call fragment and finish_reason, where they are known."""
    marks = []
    if timing.first_byte is not None:
        marks.append(Mark(x(timing.first_byte), "first byte", "byte", "start"))
    for name, moment, kind in (("first fragment", fragment, "fragment"),
                               ("finish_reason", finish, "finish")):  # fmt: skip
        ms = timing.at(moment) if moment is not None else None
        if ms is not None:
            marks.append(Mark(x(ms), name, kind, "start" if ms < span * 0.7 else "end"))
    return marks


def _bands(
    timing: Timing, links: Links, x: Callable[[float], float], records: int
) -> tuple[Band, ...]:
    stalls = [step for step in timing.stalls if step < records]
    if len(stalls) > MAX_BANDS:
        stalls = sorted(sorted(stalls, key=lambda step: -(timing.gap(step) or 0))[:MAX_BANDS])
    bands = []
    for step in stalls:
        here, gap = timing.at(step), timing.gap(step)
        if here is None or gap is None:
            continue
        start, end = x(here - gap), x(here)
        title = f"stall: {duration(gap)} before step {number(step)}"
        bands.append(Band(start, max(1.0, round(end - start, 1)), step, links.step(step), title))
    return tuple(bands)


def _ticks(span: float) -> list[float]:
    """Round moments from 0 to `span`, at most six."""
    raw = span / 5
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [n * step for n in range(int(span // step) + 1)]


# The timeline and the strip.


def gap_text(timing: Timing, step: int) -> str:
    """The gap before a step as a timeline row shows it (`+120 ms`), "" when unknown."""
    gap = timing.gap(step)
    return "" if gap is None else f"+{duration(gap)}"


def timed_window(window: Window, timing: Timing | None) -> Window:
    """The window's rows with the gap before each step, stalls marked (a collapsed run says
    the longest stall inside it)."""
    if timing is None or not timing.per_step:
        return window
    rows: list[TimelineRow | RunRow] = []
    for row in window.rows:
        if isinstance(row, TimelineRow):
            gap = timing.gap(row.step)
            stall = gap is not None and gap > timing.stall_ms
            rows.append(replace(row, gap=gap_text(timing, row.step), stall=stall))
        elif not row.expanded:
            inside = stalls_in(timing, row.first, row.last)
            if inside:
                longest = max(timing.gap(step) or 0 for step in inside)
                rows.append(replace(row, stall=f"stall {duration(longest)} inside"))
            else:
                rows.append(row)
        else:
            rows.append(row)
    return replace(window, rows=tuple(rows))


def stalls_in(timing: Timing, first: int, last: int) -> list[int]:
    """The stalled steps from `first` to `last` (inclusive)."""
    stalls = timing.stalls
    return list(stalls[bisect_left(stalls, first) : bisect_right(stalls, last)])


def timed_strip(strip: Strip, buckets: tuple[Bucket, ...], timing: Timing | None) -> Strip:
    """The overview strip with the columns that hold a stall marked (`st`) and said so."""
    if timing is None or not timing.stalls or len(buckets) != len(strip.cells):
        return strip
    cells = []
    for cell, bucket in zip(strip.cells, buckets, strict=True):
        inside = stalls_in(timing, bucket.first, bucket.last)
        if inside:
            longest = max(timing.gap(step) or 0 for step in inside)
            cell = replace(
                cell,
                classes=f"{cell.classes} st",
                title=f"{cell.title} · stall {duration(longest)}",
            )
        cells.append(cell)
    return replace(strip, cells=tuple(cells))


@dataclass(frozen=True, slots=True)
class StepTime:
    """When the stage's step arrived, and the gap before the next (for play at recorded
    speed)."""

    text: str
    next_gap: float | None


def step_time(timing: Timing | None, step: int) -> StepTime | None:
    """The stage's timing line, or None when the step's arrival is not known."""
    if timing is None or not timing.per_step:
        return None
    ms = timing.at(step)
    next_gap = timing.gap(step + 1) if step + 1 < timing.steps else None
    if ms is None:
        return StepTime("", next_gap)
    text = f"arrived {duration(ms)} after the request"
    gap = timing.gap(step)
    if gap is not None:
        before = "the first byte" if step == 0 else f"step {number(step - 1)}"
        text += f", {duration(gap)} after {before}"
        if gap > timing.stall_ms:
            text += " (a stall)"
    return StepTime(text, next_gap)
