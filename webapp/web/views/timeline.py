"""View models for the timeline page: the summary, the rule legend, stepping, timeline rows.

Templates only loop and print; every decision about what to show is made here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from webapp.core import words
from webapp.core.jsvalue import truthy
from webapp.core.rules import RULES
from webapp.core.steps import Glance
from webapp.core.trace import Step, Trace, value_as_of
from webapp.storage import StreamInfo
from webapp.web.backend.trace.runs import Run
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links
from webapp.web.http.text import clipped_head, literal, stream_title, tally


def block_label(trace: Trace, number: int | None, step: int | None = None) -> str:
    """`#2 get_weather`, `#1 (no name)`: the block's name as of `step` (or at the end).

    A block named only later reads `#0 (no name yet)` before that step; `dropped` for None.
    """
    if number is None:
        return "dropped"
    if not 0 <= number < len(trace.blocks):
        return f"#{number}"
    block = trace.blocks[number]
    name = block.name if step is None else value_as_of(block.names, step)
    if truthy(name):
        return f"#{number} {name}"
    return f"#{number} (no name yet)" if truthy(block.name) else f"#{number} (no name)"


@dataclass(frozen=True, slots=True)
class Fact:
    """One labelled value of the summary."""

    label: str
    value: str


@dataclass(frozen=True, slots=True)
class Summary:
    """The numbers and facts at the top of the timeline page."""

    title: str
    facts: tuple[Fact, ...]
    rules: tuple[tuple[str, int], ...]
    anomalies: tuple[tuple[str, int], ...]
    notes: tuple[str, ...]
    redactions: tuple[str, ...]
    model: str | None
    tools: tuple[str, ...]
    others: tuple[str, ...]
    meta: tuple[Fact, ...]
    end: str = ""
    """Why the stored bytes stop before the stream's end ("" when they reach it)."""
    withheld: tuple[str, ...] = ()
    """What would be reported of these bytes on how the stream ends, and is not."""


def summary(view: TraceView) -> Summary:
    """What a person sees first: counts, rules fired, anomalies, and where the input came from."""
    trace, result, info = view.trace, view.source.found, view.source.info
    contract = trace.contract
    chunks = view.chunks
    calls = sum(1 for block in trace.blocks if truthy(block.name))
    facts = [
        Fact("chunks", words.number(chunks)),
        Fact("steps", words.number(len(trace.steps))),
        Fact("fragments", words.number(trace.fragment_count)),
        Fact("blocks" if trace.path == "client" else "candidates", words.number(len(trace.blocks))),
        Fact("named calls", words.number(calls)),
        Fact("stop", trace.stop_reason or "none"),
        Fact("input", _input_label(info, result.format)),
        Fact("size", words.count(info.size, "byte")),
    ]
    counts = Counter(anomaly.code for anomaly in trace.anomalies)
    return Summary(
        title=stream_title(info),
        facts=tuple(facts),
        rules=tuple((rule.name, trace.rule_counts.get(rule.name, 0)) for rule in RULES),
        anomalies=tuple(sorted(counts.items())),
        notes=result.notes,
        redactions=info.redactions,
        model=result.model,
        tools=tuple(_tool_name(tool) for tool in result.tools),
        others=tuple(
            f"{entry.label} ({entry.detail})" if entry.detail else entry.label
            for entry in result.others
        ),
        meta=tuple(Fact(str(key), _short(value)) for key, value in result.meta.items()),
        end=contract.end or "" if contract else "",
        withheld=contract.withheld if contract else (),
    )


def _input_label(info: StreamInfo, detected: str) -> str:
    if info.input_format in ("", "auto"):
        return f"{detected} (detected)"
    return f"{detected} (chosen)"


def _tool_name(tool: dict[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    if isinstance(tool.get("name"), str):
        return str(tool["name"])
    return clipped_head(literal(tool), 80).head


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else literal(value)
    cut = clipped_head(text, 200)
    return cut.head + ("…" if cut.hidden else "")


@dataclass(frozen=True, slots=True)
class RuleLink:
    """A rule in the legend: its colour class, meaning, count, and where it fires next."""

    name: str
    meaning: str
    count: int
    in_policy: bool
    prev_url: str | None
    next_url: str | None


@dataclass(frozen=True, slots=True)
class Nav:
    """Stepping links for the selected step."""

    step: int
    last: int
    first_url: str
    prev_url: str | None
    next_url: str | None
    last_url: str
    prev_anomaly_url: str | None
    next_anomaly_url: str | None
    rules: tuple[RuleLink, ...]
    timeline_url: str


def nav(view: TraceView, links: Links, step: int) -> Nav:
    """First, previous, next, last, the nearest anomalies and the next fragment of each rule."""

    def url(target: int | None) -> str | None:
        return None if target is None else links.step(target)

    rules = tuple(
        RuleLink(
            name=rule.name,
            meaning=rule.meaning,
            count=view.trace.rule_counts.get(rule.name, 0),
            in_policy=view.options.policy in rule.policies,
            prev_url=url(view.prev_rule(step, rule.name)),
            next_url=url(view.next_rule(step, rule.name)),
        )
        for rule in RULES
    )
    return Nav(
        step=step,
        last=view.last,
        first_url=links.step(0),
        prev_url=url(step - 1 if step > 0 else None),
        next_url=url(step + 1 if step < view.last else None),
        last_url=links.step(view.last),
        prev_anomaly_url=url(view.prev_anomaly(step)),
        next_anomaly_url=url(view.next_anomaly(step)),
        rules=rules,
        timeline_url=links.timeline(step),
    )


# Badge and TimelineRow are not frozen: a page builds 120 of each, and a frozen dataclass sets
# every field through object.__setattr__ (three times the cost). Nothing changes them after.
@dataclass(slots=True)
class Badge:
    """One fragment in a timeline row: its rule, the block it landed on, the text it appended."""

    rule: str
    label: str
    phantom: bool
    late: bool
    appended: str = ""
    """What the fragment appended, as a clipped JSON string literal ("" when nothing)."""


@dataclass(slots=True)
class TimelineRow:
    """One step in the timeline."""

    step: int
    line: int | None
    kind: str
    url: str
    selected: bool
    assembled: bool
    badges: tuple[Badge, ...]
    marks: tuple[str, ...]
    anomalies: tuple[str, ...]
    error: str | None
    in_run: bool = False
    """The step belongs to a run that is shown expanded (the selected step is in it)."""
    gap: str = ""
    """The time since the step before arrived (`+120 ms`), when the input has timing."""
    stall: bool = False
    """That gap is over the server's stall threshold."""
    quirks: tuple[str, ...] = ()
    """The provider's quirks that show at this step (`webapp.web.views.quirks`)."""
    is_run: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run of alike steps: one row when collapsed, a heading above its steps when expanded."""

    first: int
    last: int
    rule: str
    label: str
    url: str
    """The page at the run's first step (which shows the run's rows)."""
    after_url: str | None
    """The page at the first step after the run."""
    expanded: bool
    phantom: bool
    stall: str = ""
    """The longest stall inside the run, in words ("" when none, or no timing)."""
    quirk_steps: int = 0
    """How many of the run's steps show a provider quirk."""
    is_run: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class Window:
    """A slice of the timeline, with the URLs that load the rows before and after it."""

    start: int
    end: int
    rows: tuple[TimelineRow | RunRow, ...]
    before_url: str | None
    after_url: str | None
    before_page: str | None
    after_page: str | None
    widths: str = ""
    """The timeline's classes for its columns' widths (`column_widths`)."""


def column_widths(view: TraceView) -> str:
    """`n7 l9`: the characters of the widest step number and line label the timeline can show,
    so that its columns fit them (CSS classes, `static/app.css`); each row is its own grid, so
    the widths follow the whole stream, not the rows drawn yet."""
    trace, total = view.trace, len(view.trace.steps)
    tail = [trace.line_of(n) for n in range(max(0, total - 4), total)]  # records come in order
    last_line = max((line for line in tail if line is not None), default=0)
    return f"n{len(words.number(max(0, total - 1)))} l{len('L' + words.number(last_line))}"


def window(
    view: TraceView,
    links: Links,
    start: int,
    end: int,
    selected: int,
    size: int,
    *,
    fill: bool = True,
) -> Window:
    """Rows `start` to `end` (exclusive) and the links to extend them by `size` either way.

    A run of alike steps is one row, unless it holds the selected step: then its steps are
    rows of their own below a heading. A window never cuts a collapsed run (its start moves
    back to the run's first step, its end past the run's last); with `fill`, rows after `end`
    make up for the steps that collapsed, up to `end - start` rows in all.
    """
    total = len(view.trace.steps)
    start = max(0, min(start, total))
    end = max(start, min(end, total))
    budget = end - start
    runs = view.runs
    first_run = runs.at(start)
    if first_run is not None and not first_run.holds(selected):
        start = first_run.first
    rows, end = _rows(view, links, start, end, selected, budget if fill else 0)
    before = max(0, start - size)
    return Window(
        start=start,
        end=end,
        rows=rows,
        before_url=links.rows(before, start, selected, "before") if start > 0 else None,
        after_url=links.rows(end, min(total, end + size), selected, "after")
        if end < total
        else None,
        before_page=links.step(start - 1) if start > 0 else None,
        after_page=links.step(end) if end < total else None,
        widths=column_widths(view),
    )


def _rows(
    view: TraceView, links: Links, start: int, end: int, selected: int, fill: int
) -> tuple[tuple[TimelineRow | RunRow, ...], int]:
    """The rows from `start` to `end` (past it while fewer than `fill` rows), and where they
    end: a run of alike steps is one row unless it holds `selected`."""
    runs, trace, total = view.runs, view.trace, len(view.trace.steps)
    rows: list[TimelineRow | RunRow] = []
    url = links.step_urls()
    n = start
    while n < total and (n < end or len(rows) < fill):
        run = runs.at(n)
        if run is not None and not run.holds(selected):
            rows.append(_run_row(view, links, run, expanded=False))
            n = run.last + 1
            continue
        if run is not None and n == run.first:
            rows.append(_run_row(view, links, run, expanded=True))
        rows.append(_timeline_row(view, url, trace.glance(n), selected, run is not None))
        n += 1
    return tuple(rows), n


def window_around(view: TraceView, links: Links, step: int, size: int) -> Window:
    """The window that holds `step`, a third of the way down."""
    start = max(0, step - size // 3)
    end = min(len(view.trace.steps), start + size)
    start = max(0, min(start, end - size))
    return window(view, links, start, end, step, size)


APPENDED_LIMIT = 32
"""The most characters of a fragment's appended text a timeline row shows."""
RUN_NOUNS = {
    "exact-index": ("exact-index match", "exact-index matches"),
    "exact-id": ("exact-id match", "exact-id matches"),
    "continuation": ("continuation", "continuations"),
    "new": ("new block", "new blocks"),
    "drop": ("dropped fragment", "dropped fragments"),
    "text": ("text delta", "text deltas"),
    "thinking": ("thinking delta", "thinking deltas"),
}
"""What a run's row counts: its fragments by their rule, or a text's or a thought's pieces (a
step each: `Trace.quiet_runs`)."""


def badges(trace: Trace, step: Step, *, appended: bool = True) -> tuple[Badge, ...]:
    """One badge per fragment of the step: its rule, the block as of the step, what it appended."""
    return tuple(
        _badge(trace, step.step, f.rule, f.block, f.appended if appended else "", f.late)
        for f in step.fragments
    )


def _badge(
    trace: Trace, step: int, rule: str, block: int | None, appended: str, late: bool
) -> Badge:
    return Badge(
        rule=rule,
        label=block_label(trace, block, step),
        phantom=trace.is_phantom_block(block),
        late=late,
        appended=words.quote(appended, APPENDED_LIMIT) if appended else "",
    )


def _run_row(view: TraceView, links: Links, run: Run, *, expanded: bool) -> RunRow:
    singular, plural = RUN_NOUNS.get(run.rule, (run.rule, run.rule))
    what = words.count(run.fragments or run.steps, singular, plural)
    if run.block is not None:
        what += f" onto {block_label(view.trace, run.block, run.first)}"
    return RunRow(
        first=run.first,
        last=run.last,
        rule=run.rule,
        label=f"steps {words.number(run.first)}\u2013{words.number(run.last)}: {what}",
        url=links.step(run.first),
        after_url=links.step(run.last + 1) if run.last < view.last else None,
        expanded=expanded,
        phantom=view.trace.is_phantom_block(run.block),
        quirk_steps=view.quirks.count_within(run.first, run.last),
    )


def _timeline_row(
    view: TraceView, url: Callable[[int], str], step: Glance, selected: int, in_run: bool = False
) -> TimelineRow:
    trace, number = view.trace, step.step
    found = view.anomalies_by_step.get(number)
    return TimelineRow(
        step=number,
        line=step.line,
        kind=step.kind,
        url=url(number),
        selected=number == selected,
        assembled=step.assembled,
        badges=tuple(_badge(trace, number, *landing) for landing in step.landings),
        marks=_marks(trace, step),
        anomalies=tally(a.code for a in found) if found else (),
        error=clipped_head(step.error, 120).head if step.error else None,
        in_run=in_run,
        quirks=view.quirks.at(number),
    )


def _marks(trace: Trace, step: Glance) -> tuple[str, ...]:
    marks: list[str] = []
    types = [kind for kind, _, _ in step.fired]
    if "thinking_delta" in types:
        marks.append("thinking")
    if "text_delta" in types:
        marks.append("text")
    for kind, content_index, reason in step.fired:
        if kind == "toolcall_start":
            marks.append(f"start {_content_label(trace, content_index)}")
        elif kind in ("done", "error"):
            marks.append(f"{kind}: {reason or '?'}")
    if step.finish_reason:
        marks.append(f"finish: {step.finish_reason}")
    if not step.assembled:
        marks.append("not assembled")
    return tuple(marks)


def _content_label(trace: Trace, content_index: int | None) -> str:
    if content_index is None or not 0 <= content_index < len(trace.content):
        return "?"
    number = trace.content[content_index].number
    return f"#{number}" if number is not None else f"[{content_index}]"
