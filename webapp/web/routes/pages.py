"""A stream's pages: one router, mounted at `/s/{id}` and at `/examples/{key}`.

Every handler takes the stream from `webapp.web.http.query.stream_source`, so a built-in example
(served from the package, stored nowhere, opening at its story's step and options) goes
through the same code as a stored stream. A page includes its partials; an htmx request gets
only the partial. Every URL a page pushes to history (`/s/{id}?step=N&policy=...&path=...`)
serves the full page when loaded directly, and links carry real `href`s, so everything works
without JavaScript; htmx only makes stepping and scrolling cheaper.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import QueryParams

from webapp.core.contract.answer import ANSWER_RECORDS
from webapp.core.rules import POLICIES
from webapp.storage.capture import Captures
from webapp.triage.compare import Comparison
from webapp.web.appstate import pace_of, service_of, settings_of, templates_of
from webapp.web.backend.capture.live import Live
from webapp.web.backend.capture.timing import Timing
from webapp.web.backend.capture.twin import TwinSummary, stored_answer, twin_of
from webapp.web.backend.example_source import example_of
from webapp.web.backend.service import Unreadable
from webapp.web.backend.team.owners import saw
from webapp.web.backend.trace.anomaly_groups import Group
from webapp.web.backend.trace.overview import strip
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.htmx import from_htmx, wants_partial
from webapp.web.http.links import Links
from webapp.web.http.query import (
    COMPARED,
    DEFAULTS,
    PATHS,
    BadQuery,
    Shown,
    StreamSource,
    parse_anomaly,
    parse_har_entry,
    parse_int,
    parse_options,
    parse_policy,
    parse_present,
)
from webapp.web.http.templating import render
from webapp.web.http.text import stream_title
from webapp.web.routes import clients, share, triage
from webapp.web.routes import diff as diff_routes
from webapp.web.routes import minimise as minimise_routes
from webapp.web.routes.share import share_menu
from webapp.web.views import timeline as views
from webapp.web.views.anomaly_list import panel as anomaly_panel
from webapp.web.views.compare_step import step_panel
from webapp.web.views.comparison import compare_page
from webapp.web.views.entries import opening, picker
from webapp.web.views.live import (
    answer_page,
    arriving,
    following_step,
    live_panel,
    twin_panel,
    unread_capture,
    waiting_panel,
)
from webapp.web.views.panels import detail, state
from webapp.web.views.quirks import panel as quirk_panel
from webapp.web.views.quirks import quirk_line
from webapp.web.views.timing import panel as timing_panel
from webapp.web.views.timing import step_time, timed_strip, timed_window

router = APIRouter(include_in_schema=False)


def view_of(
    request: Request, shown: StreamSource, embed: bool = False
) -> tuple[TraceView, Links, int]:
    """The view a page's URL names, its links, and its step (clamped to the trace)."""
    live, links, step = live_view_of(request, shown, embed)
    return live.view, links, step


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
    """As `view_of`, the view as a live capture's page shows it (`webapp.web.backend.capture.live`):
    every page and partial of a live stream shows the same view, made at its pace. A HAR file
    whose URL names no entry opens on its first entry with anomalies (`views.entries.opening`),
    and the links then name it."""
    links = links_of(shown, embed)
    step = parse_int(shown.query.get("step"), "step", 0)
    service, pace = service_of(request), pace_of(request)
    live = pace.view(service, shown.stream_id, links.options, links.har_entry)
    chosen = opening(service, live.view) if links.har_entry is None else None
    if chosen is not None:
        links = replace(links, har_entry=chosen)
        live = pace.view(service, shown.stream_id, links.options, chosen)
    return live, links, live.view.clamp(step)


def stage(view: TraceView, links: Links, step: int, timing: Timing | None = None) -> dict[str, Any]:
    """The stage's context: the stepping links, the step's detail, the state after it, and
    when the step arrived (when the input says)."""
    return {
        "links": links,
        "nav": views.nav(view, links, step),
        "detail": detail(view, step),
        "state": state(view, step),
        "step": step,
        "step_time": step_time(timing, step),
        "live_pin": None,
    }


def _anomalies(
    view: TraceView, links: Links, step: int, found: tuple[Group, ...] | None = None
) -> dict[str, Any]:
    found = view.anomaly_groups if found is None else found
    start = links.anomaly_start
    return {"anomalies": anomaly_panel(view.trace, found, links, step, links.anomaly, start)}


@router.get("")
def stream_page(request: Request, shown: Shown) -> Response:
    """The timeline page at a step; an htmx request gets only the stage (nav, detail, state).

    A live capture's page follows its latest record unless the URL names a step, and polls
    for more (`live`); one none of whose bytes read yet says it is waiting for them."""
    return _stream(request, shown, partial=wants_partial(request))


def _stream(
    request: Request,
    shown: StreamSource,
    *,
    partial: bool,
    made: tuple[Live, Links, int] | None = None,
) -> Response:
    """The page (or its stage), of the view `made` when the caller has it already."""
    try:
        live, links, step = made or live_view_of(request, shown)
    except Unreadable as error:
        return _unread(request, shown, partial, error)
    view = live.view
    if not live.live and view.source.records <= ANSWER_RECORDS:
        answered = _answer(request, view, links)
        if answered is not None:
            return answered
    pinned = "step" in shown.query or not live.live
    if not pinned:
        step = following_step(live)
    timing = live.timing
    context = stage(view, links, step, timing)
    context.update(share_menu(request, links, step, stream_title(view.source.info)))
    templates = templates_of(request)
    context["arriving"] = live.live
    if live.live:
        context["live_pin"] = step if pinned else None
    else:
        context.update(triage.stage_context(request, view, links, step))
    if partial:
        return render(templates, request, "_stage.html", context)
    context.update(_page(request, live, links, step, pinned))
    named = "har_entry" in shown.query
    context["entries"] = picker(service_of(request), live.view, links, named)
    response = render(templates, request, "stream.html", context)
    saw(request, response, shown.stream_id, "o")  # this browser's library holds it now
    return response


def _answer(request: Request, view: TraceView, links: Links) -> Response | None:
    """The page of a non-stream answer, which has no step to follow (None for a stream)."""
    service = service_of(request)
    reading = service.reading(links.stream_id, links.har_entry)
    capture = Captures(service.storage).get(links.stream_id)
    twin_of = capture.facts.twin_of if capture is not None else ""
    title = stream_title(view.source.info)
    page = answer_page(title, reading.result, links, twin_of)
    if page is None:
        return None
    return render(templates_of(request), request, "answer.html", {"page": page})


def _twin(request: Request, links: Links) -> TwinSummary | None:
    """The stream's non-stream twin, when this server's proxy sent one (`serve --twin`)."""
    if links.har_entry is not None or example_of(links.stream_id) is not None:
        return None
    return twin_of(service_of(request), links.stream_id)


def _page(request: Request, live: Live, links: Links, step: int, pinned: bool) -> dict[str, Any]:
    """What the full timeline page shows besides its stage."""
    view, timing = live.view, live.timing
    settings = settings_of(request)
    context = triage.page_context(request, view, links, step)
    size = settings.timeline_window
    window = views.window_around(view, links, step, size)
    if live.live:  # its end step has not come: the rows stop at the last record
        end = min(window.end, view.last)
        window = views.window(view, links, window.start, end, step, size, fill=False)
        if window.end >= view.last:
            window = replace(window, after_url=None, after_page=None)
    summary = views.summary(view)
    groups, columns = view.anomaly_groups, view.buckets
    if live.seen is not None:  # the anomalies of what has arrived, not of the end to come
        groups, columns = live.seen.groups, live.seen.buckets
        summary = replace(summary, anomalies=live.seen.counts)
    # a provider's quirks are judged on the whole stream (a call cut short, no finish_reason):
    # while it is live they would be about its end, which has not come
    marked = () if live.live else view.quirks.in_columns
    overview = strip(columns, len(view.trace.steps), links, step, marked)
    context.update(
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
        minimise=None if live.live else minimise_routes.section(request, view, links),
        timing=None if timing is None else timing_panel(view, timing, links, live=live.live),
        live=live_panel(live, links, step, pinned=pinned, poll_ms=settings.live_poll_ms),
        twin=None if live.live else twin_panel(_twin(request, links), links),
        compare=diff_routes.control(request, links),
        **_anomalies(view, links, step, groups),
    )
    return context


def _unread(request: Request, shown: StreamSource, partial: bool, error: Unreadable) -> Response:
    """The page of a live capture whose bytes do not read yet: a 204 to a swap or a poll
    (nothing to show yet). Any other stream's `error` is raised, said of the capture it is
    when the proxy recorded it (what the upstream answered): never a trace, nor its quirks."""
    service = service_of(request)
    capture = Captures(service.storage).get(shown.stream_id)
    if capture is None:
        raise error
    if not capture.live:
        raise Unreadable(unread_capture(capture, str(error))) from error
    if partial:
        return Response(status_code=204)
    info = service.info(shown.stream_id)
    links = links_of(shown)
    panel = waiting_panel(capture, links, info.size, settings_of(request).live_poll_ms)
    context = {"live": panel, "title": stream_title(info), "links": links}
    return render(templates_of(request), request, "live_waiting.html", context)


@router.get("/live")
def live_poll(request: Request, shown: Shown) -> Response:
    """What a live page polls (htmx): 204 while nothing new has arrived (or it is not time to
    show it yet), the page again once more has (htmx takes its `#live-view`), and, once the
    capture has ended, the ordinary page, loaded once: again (`HX-Refresh`) when the user chose
    a step, at the stream's end step (`HX-Redirect`) when it followed the latest chunk."""
    seen = parse_int(shown.query.get("seen"), "seen", 0)
    links = links_of(shown)
    if not from_htmx(request):  # a browser: to the page itself
        chosen = "step" in shown.query
        where = links.step(parse_int(shown.query.get("step"), "step", 0)) if chosen else None
        return RedirectResponse(where or links.following, status_code=303)
    try:
        made = live_view_of(request, shown)
    except Unreadable:  # nothing reads yet: wait while it is live, else show what the page says
        capture = Captures(service_of(request).storage).get(shown.stream_id)
        if capture is not None and capture.live:
            return Response(status_code=204)
        return Response(status_code=200, headers={"HX-Refresh": "true"})
    live = made[0]
    if not live.live:
        if "step" in shown.query:  # the page's URL names the step chosen: load it again
            return Response(status_code=200, headers={"HX-Refresh": "true"})
        # it followed the latest chunk: the ordinary page at the end, not at step 0
        return Response(status_code=200, headers={"HX-Redirect": links.step(live.view.last)})
    if live.size == seen:
        return Response(status_code=204)
    return _stream(request, shown, partial=False, made=made)


@router.get("/anomalies")
def anomalies(request: Request, shown: Shown) -> Response:
    """The anomaly list, filtered by `anomaly` (htmx); a browser is sent to the page."""
    live, links, step = live_view_of(request, shown)
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    context = _anomalies(live.view, links, step, live.seen.groups if live.seen else None)
    return render(templates_of(request), request, "_anomalies.html", context)


@router.get("/timeline")
def timeline(request: Request, shown: Shown) -> Response:
    """The timeline window around a step (htmx); a browser is sent to the page at that step."""
    live, links, step = live_view_of(request, shown)
    view = live.view
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    size = settings_of(request).timeline_window
    window = timed_window(views.window_around(view, links, step, size), live.timing)
    window = arriving(window, live.live)
    context = {"window": window, "links": links}
    context["noted"] = triage.noted_steps(request, shown.stream_id)
    return render(templates_of(request), request, "_timeline.html", context)


@router.get("/rows")
def rows(request: Request, shown: Shown) -> Response:
    """More timeline rows before or after those shown (htmx, when the user scrolls)."""
    live, links, step = live_view_of(request, shown)
    view = live.view
    query = shown.query
    start = parse_int(query.get("start"), "start", 0)
    size = settings_of(request).timeline_window
    end = parse_int(query.get("end"), "end", start + size)
    direction = query.get("direction") or "after"
    if direction not in ("before", "after"):
        raise BadQuery("direction must be before or after")
    if not wants_partial(request):
        return RedirectResponse(links.step(view.clamp(start)), status_code=303)
    end = min(end, start + size)
    window = views.window(view, links, start, end, step, size, fill=direction == "after")
    window = arriving(timed_window(window, live.timing), live.live)
    context = {"window": window, "links": links, "direction": direction}
    context["noted"] = triage.noted_steps(request, shown.stream_id)
    return render(templates_of(request), request, "_rows.html", context)


@router.get("/compare")
def compare(request: Request, shown: Shown) -> Response:
    """Two policies side by side; an htmx request gets only the next rows."""
    entry = parse_har_entry(shown.query.get("har_entry"))
    if stored_answer(service_of(request), shown.stream_id, entry):  # no steps: its own page
        return RedirectResponse(Links(shown.stream_id, DEFAULTS, entry).base, 303)
    comparison, links, query = comparison_of(request, shown)
    only = query.get("only") or ""
    if only not in ("", "differing"):
        raise BadQuery("only must be 'differing' or absent")
    size = settings_of(request).timeline_window
    chosen = query.get("step")
    selected = parse_int(chosen, "step", 0) if chosen else None
    if selected is not None:
        selected = max(0, min(selected, len(comparison.rows) - 1))
    start = parse_int(query.get("start"), "start", 0)
    if "start" not in query and selected is not None and not only:
        start = selected // size * size  # the window that holds the selected row
    service = service_of(request)
    reading = service.reading(shown.stream_id, links.har_entry)
    records = reading.result.records
    page = compare_page(
        comparison, links, only=bool(only), start=start, size=size, records=records,
        selected=selected,
    )  # fmt: skip
    templates = templates_of(request)
    context: dict[str, Any] = {"page": page}
    if wants_partial(request):
        return render(templates, request, "_compare_rows.html", context)
    title = stream_title(reading.info)
    context.update(title=title, links=links)
    context["quirk_line"] = quirk_line(comparison.right.contract, links)
    context["panel"] = step_panel(comparison, records, selected) if selected is not None else None
    sides = comparison.left.policy, comparison.right.policy
    context.update(share_menu(request, links, selected, title, sides))
    response = render(templates, request, "compare.html", context)
    saw(request, response, shown.stream_id, "o")  # this browser's library holds it now
    return response


@router.get("/compare/step")
def compare_step(request: Request, shown: Shown) -> Response:
    """The compare page's selected step alone: its input, both policies' blocks as of it."""
    comparison, links, query = comparison_of(request, shown)
    step = parse_int(query.get("step"), "step", 0)
    records = service_of(request).reading(shown.stream_id, links.har_entry).result.records
    panel = step_panel(comparison, records, step)
    if not wants_partial(request):
        left, right = comparison.left.policy, comparison.right.policy
        return RedirectResponse(links.compare(left, right, step=panel.step), status_code=303)
    context: dict[str, Any] = {"panel": panel, "links": links}
    title = stream_title(service_of(request).info(shown.stream_id))
    sides = comparison.left.policy, comparison.right.policy
    context.update(share_menu(request, links, panel.step, title, sides))
    return render(templates_of(request), request, "_compare_step.html", context)


def comparison_of(request: Request, shown: StreamSource) -> tuple[Comparison, Links, QueryParams]:
    """The comparison a compare URL names, and the links of its page."""
    query, stream_id = shown.query, shown.stream_id
    options = parse_options(query)
    left = parse_policy(query.get("left"), COMPARED[0], "left")
    right = parse_policy(query.get("right"), COMPARED[1], "right")
    har_entry = parse_har_entry(query.get("har_entry"))
    comparison = service_of(request).comparison(stream_id, options, left, right, har_entry)
    present = parse_present(query.get("present"))
    links = Links(stream_id, replace(options, policy=right), har_entry, present=present)
    return comparison, links, query


router.include_router(clients.router)
router.include_router(share.router)
