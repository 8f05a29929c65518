"""View model of a stream's timeline page: `stream_page` builds all of it in one call.

The page is its stage (the stepping links, the step's detail, the state after it, the step's
notes and Share menu) and, around it, the rest: the title and notes, the summary, the
timeline's window and overview strip, the anomaly list, the quirks, the timing, the live
banner, the non-stream twin's line, and the Minimise and "compare with..." controls. A stored
non-stream answer has no timeline: `answer_of` is its page. An htmx step gets the stage alone
(`StreamPage.page` is None). A live capture's page is the view made at its pace
(`webapp.web.backend.capture.live`), following its latest record unless the URL names a step.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from fastapi import Request

from webapp.core.contract.answer import ANSWER_RECORDS
from webapp.core.options import Options
from webapp.core.rules import POLICIES
from webapp.triage.compare import Comparison
from webapp.web.appstate import minimiser_of, pace_of, service_of, settings_of
from webapp.web.backend.capture.hops import hops_around, through
from webapp.web.backend.capture.live import Live
from webapp.web.backend.capture.timing import Timing
from webapp.web.backend.capture.twin import twin_of
from webapp.web.backend.team.owners import owned
from webapp.web.backend.trace.anomaly_groups import Group
from webapp.web.backend.trace.overview import Strip, strip
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import DIFF, DIFF_PASTE, Links
from webapp.web.http.query import (
    COMPARED,
    PATHS,
    StreamSource,
    parse_anomaly,
    parse_har_entry,
    parse_int,
    parse_options,
    parse_policy,
    parse_present,
)
from webapp.web.http.text import stream_title
from webapp.web.views import timeline
from webapp.web.views.anomaly_list import Panel as AnomalyPanel
from webapp.web.views.anomaly_list import panel as anomaly_panel
from webapp.web.views.compare_step import StepPanel, step_panel
from webapp.web.views.diff import picker as diff_picker
from webapp.web.views.entries import Picker, opening, picker
from webapp.web.views.hops import HopPanel
from webapp.web.views.hops import panel as hop_panel
from webapp.web.views.live import (
    AnswerPage,
    LivePanel,
    TwinPanel,
    answer_page,
    arriving,
    following_step,
    live_panel,
    twin_panel,
)
from webapp.web.views.minimise import Section
from webapp.web.views.minimise import section as minimise_section
from webapp.web.views.panels import Detail, State, detail, state
from webapp.web.views.quirks import QuirkPanel
from webapp.web.views.quirks import panel as quirk_panel
from webapp.web.views.share import Share, share_menu
from webapp.web.views.stories import StoryView, narration, story_of
from webapp.web.views.stream.team import StepNotes, Team, notes_of, step_notes_of, team_of
from webapp.web.views.timing import Panel as TimingPanel
from webapp.web.views.timing import StepTime, step_time, timed_strip, timed_window
from webapp.web.views.timing import panel as timing_panel


def flat(*parts: Any) -> dict[str, Any]:
    """The fields of view-model dataclasses as one template context (None parts left out)."""
    context: dict[str, Any] = {}
    for part in parts:
        if part is not None:
            context.update({field.name: getattr(part, field.name) for field in fields(part)})
    return context


@dataclass(frozen=True, slots=True)
class Stage:
    """The stepping links, the step's detail, the state after it, and when it arrived."""

    links: Links
    nav: timeline.Nav
    detail: Detail
    state: State
    step: int
    step_time: StepTime | None
    narration: str | None
    """What an example's story says at this step (None for a stream, or a step it skips)."""
    live_pin: int | None = None
    """A live page's step chosen by the user (None: it follows the latest record)."""


@dataclass(frozen=True, slots=True)
class Around:
    """What the full page shows besides its stage."""

    options: Options
    stage_first: bool
    """The URL names a step: the stage comes before the notes and the findings."""
    summary: timeline.Summary
    window: timeline.Window
    policies: tuple[str, ...]
    paths: tuple[str, ...]
    overview: Strip
    quirks: QuirkPanel | None
    minimise: Section | None
    timing: TimingPanel | None
    live: LivePanel | None
    compare: dict[str, Any]
    hops: HopPanel | None
    """A capture's gateway hops (None for any other stream, one with none, and a live one)."""
    twin: TwinPanel | None
    """A capture's non-stream twin (`serve --twin`; None without one, and while live)."""
    anomalies: AnomalyPanel
    entries: Picker | None
    story: StoryView | None
    """An example's story bar (None for a stored stream)."""


@dataclass(frozen=True, slots=True)
class StreamPage:
    """A stream's timeline page at a step; `page` and `team` are None for the stage alone."""

    stage: Stage
    share: Share
    arriving: bool
    """A live capture: its rows are still arriving."""
    step_notes: StepNotes | None
    """The step's notes (None on a live page, which takes none)."""
    page: Around | None = None
    team: Team | None = None

    def context(self) -> dict[str, Any]:
        """The template's context: every part's fields, flat."""
        parts = (self.stage, self.step_notes, self.page, self.team)
        return {**flat(*parts), "share": self.share, "arriving": self.arriving}


def links_of(shown: StreamSource, embed: bool = False) -> Links:
    """The links of the view a page's URL names."""
    query = shown.query
    options = parse_options(query)
    har_entry = parse_har_entry(query.get("har_entry"))
    code = parse_anomaly(query.get("anomaly"))
    start = parse_int(query.get("anomaly_start"), "anomaly_start", 0)
    present = parse_present(query.get("present"))
    return Links(shown.stream_id, options, har_entry, code, start if code else 0, present, embed)


def live_view_of(
    request: Request, shown: StreamSource, embed: bool = False
) -> tuple[Live, Links, int]:
    """The view a page's URL names as a live capture's page shows it, its links, and its step
    (clamped to the trace): every page and partial of a live stream shows the same view, made
    at its pace. A HAR file whose URL names no entry opens on its first entry with anomalies
    (`webapp.web.views.entries.opening`), and the links then name it."""
    links = links_of(shown, embed)
    step = parse_int(shown.query.get("step"), "step", 0)
    service, pace = service_of(request), pace_of(request)
    live = pace.view(service, shown.stream_id, links.options, links.har_entry)
    chosen = opening(service, live.view) if links.har_entry is None else None
    if chosen is not None:
        links = replace(links, har_entry=chosen)
        live = pace.view(service, shown.stream_id, links.options, chosen)
    return live, links, live.view.clamp(step)


def view_of(
    request: Request, shown: StreamSource, embed: bool = False
) -> tuple[TraceView, Links, int]:
    """As `live_view_of`, the view alone."""
    live, links, step = live_view_of(request, shown, embed)
    return live.view, links, step


def stage(view: TraceView, links: Links, step: int, timing: Timing | None = None) -> Stage:
    """The stage at `step`: the stepping links, the detail, the state after it, when the
    step arrived (when the input says), and what an example's story says of it."""
    nav = timeline.nav(view, links, step)
    shown = detail(view, step), state(view, step)
    return Stage(links, nav, *shown, step, step_time(timing, step), narration(links, step))


def anomalies_of(
    view: TraceView, links: Links, step: int, found: tuple[Group, ...] | None = None
) -> AnomalyPanel:
    """The anomaly list at `step`, filtered as the links say (of `found`: what has arrived)."""
    found = view.anomaly_groups if found is None else found
    return anomaly_panel(view.trace, found, links, step, links.anomaly, links.anomaly_start)


def stream_page(
    request: Request,
    shown: StreamSource,
    *,
    partial: bool,
    made: tuple[Live, Links, int] | None = None,
) -> StreamPage:
    """The page (or, `partial`, its stage) of the view `made` when the caller has it already;
    Unreadable when the stream's bytes do not read (yet)."""
    live, links, step = made or live_view_of(request, shown)
    view = live.view
    pinned = "step" in shown.query or not live.live
    if not pinned:
        step = following_step(live)
    shown_stage = stage(view, links, step, live.timing)
    if live.live:
        shown_stage = replace(shown_stage, live_pin=step if pinned else None)
    notes = [] if live.live and partial else notes_of(request, view)
    page = StreamPage(
        shown_stage,
        share_menu(request, links, step, stream_title(view.source.info)),
        arriving=live.live,
        step_notes=None if live.live else step_notes_of(request, view, links, step, notes),
    )
    if partial:
        return page
    around = _around(request, shown, live, links, step, pinned)
    return replace(page, page=around, team=team_of(request, view, links, step, notes))


def _around(
    request: Request, shown: StreamSource, live: Live, links: Links, step: int, pinned: bool
) -> Around:
    """What the full timeline page shows besides its stage."""
    view, timing = live.view, live.timing
    settings = settings_of(request)
    size = settings.timeline_window
    window = timeline.window_around(view, links, step, size)
    if live.live:  # its end step has not come: the rows stop at the last record
        end = min(window.end, view.last)
        window = timeline.window(view, links, window.start, end, step, size, fill=False)
        if window.end >= view.last:
            window = replace(window, after_url=None, after_page=None)
    summary = timeline.summary(view)
    groups, columns = view.anomaly_groups, view.buckets
    if live.seen is not None:  # the anomalies of what has arrived, not of the end to come
        groups, columns = live.seen.groups, live.seen.buckets
        summary = replace(summary, anomalies=live.seen.counts)
    # a provider's quirks are judged on the whole stream (a call cut short, no finish_reason):
    # while it is live they would be about its end, which has not come
    marked = () if live.live else view.quirks.in_columns
    drawn = None if live.live or live.seen is not None else view.strips  # an ended stream's
    overview = strip(columns, len(view.trace.steps), links, step, marked, drawn)
    running = None if live.live else minimiser_of(request).jobs.running_for(view.source.info.id)
    return Around(
        options=view.options,
        # a URL that names a step (a shared link, a reload) lands on it: the stage comes
        # before the notes and the findings; a live page keeps one order while it is polled
        stage_first="step" in request.query_params and not live.live,
        summary=summary,
        window=arriving(timed_window(window, timing), live.live),
        policies=POLICIES,
        paths=PATHS,
        overview=timed_strip(overview, columns, timing),
        quirks=None if live.live else quirk_panel(view.trace.contract, links),
        minimise=None if live.live else minimise_section(links, running),
        timing=None if timing is None else timing_panel(view, timing, links, live=live.live),
        live=live_panel(live, links, step, pinned=pinned, poll_ms=settings.live_poll_ms),
        compare=_compare_control(request, links, stream_title(view.source.info)),
        hops=None if live.live else _hops(request, live, links),
        twin=None if live.live else _twin(request, live, links),
        anomalies=anomalies_of(view, links, step, groups),
        entries=picker(service_of(request), view, links, "har_entry" in shown.query),
        story=story_of(links, "timeline"),
    )


def _hops(request: Request, live: Live, links: Links) -> HopPanel | None:
    """The gateway hops of a captured stream (None for any other, and for one with none)."""
    if links.example or links.har_entry is not None:
        return None
    service = service_of(request)
    found = hops_around(service, links.stream_id, live.capture)
    contract = live.view.trace.contract
    codes = [] if contract is None else [found.code for found in contract.quirks]
    return hop_panel(links.stream_id, found, through(service, found, codes))


def _twin(request: Request, live: Live, links: Links) -> TwinPanel | None:
    """The line on a captured stream's non-stream twin, when this server's proxy sent one (a
    stream that was not captured has none: its twin is not looked for)."""
    if links.example or links.har_entry is not None or live.capture is None:
        return None
    return twin_panel(twin_of(service_of(request), links.stream_id), links)


def answer_of(request: Request, made: tuple[Live, Links, int]) -> AnswerPage | None:
    """The page of a stored non-stream answer, which has no step to follow (None for a
    stream, and for one still arriving)."""
    live, links, _ = made
    view = live.view
    if live.live or view.source.records > ANSWER_RECORDS:
        return None
    reading = service_of(request).reading_of(view.source.info, links.har_entry)
    stream = live.capture.facts.twin_of if live.capture is not None else ""
    return answer_page(stream_title(view.source.info), reading.result, links, stream)


def _compare_control(request: Request, links: Links, title: str) -> dict[str, Any]:
    """The "compare with..." control (on the stream titled `title`): the streams it offers,
    where it goes."""
    listed = None if settings_of(request).list_streams else list(owned(request))
    service = service_of(request)
    chosen = diff_picker(service, links.stream_id, links.har_entry, listed, title=title)
    return {"picker": chosen, "action": DIFF, "paste_url": DIFF_PASTE,
            "picker_url": links.compare_with}  # fmt: skip


def comparison_of(request: Request, shown: StreamSource) -> tuple[Comparison, Links]:
    """The comparison a compare URL names, and the links of its page."""
    query, stream_id = shown.query, shown.stream_id
    options = parse_options(query)
    left = parse_policy(query.get("left"), COMPARED[0], "left")
    right = parse_policy(query.get("right"), COMPARED[1], "right")
    har_entry = parse_har_entry(query.get("har_entry"))
    comparison = service_of(request).comparison(stream_id, options, left, right, har_entry)
    present = parse_present(query.get("present"))
    links = Links(stream_id, replace(options, policy=right), har_entry, present=present)
    return comparison, links


def compared_step(request: Request, shown: StreamSource) -> tuple[StepPanel, Comparison, Links]:
    """The compare page's selected step (`?step=N`, the first by default), with its comparison
    and the links of its page."""
    comparison, links = comparison_of(request, shown)
    step = parse_int(shown.query.get("step"), "step", 0)
    records = service_of(request).reading(shown.stream_id, links.har_entry).result.records
    return step_panel(comparison, records, step), comparison, links
