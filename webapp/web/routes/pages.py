"""A stream's pages: one router, mounted at `/s/{id}` and at `/examples/{key}`.

Every handler takes the stream from `webapp.web.http.query.stream_source`, so a built-in example
(served from the package, stored nowhere, opening at its story's step and options) goes
through the same code as a stored stream. A page includes its partials; an htmx request gets
only the partial. Every URL a page pushes to history (`/s/{id}?step=N&policy=...&path=...`)
serves the full page when loaded directly, and links carry real `href`s, so everything works
without JavaScript; htmx only makes stepping and scrolling cheaper.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from webapp.storage.capture import Captures
from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.backend.capture.live import Live
from webapp.web.backend.capture.twin import stored_answer
from webapp.web.backend.service import Unreadable
from webapp.web.backend.team.owners import saw
from webapp.web.http.htmx import from_htmx, wants_partial
from webapp.web.http.links import Links
from webapp.web.http.query import (
    DEFAULTS,
    BadQuery,
    Shown,
    StreamSource,
    parse_har_entry,
    parse_int,
)
from webapp.web.http.templating import render
from webapp.web.http.text import stream_title
from webapp.web.views import timeline as views
from webapp.web.views.compare_step import step_panel
from webapp.web.views.comparison import compare_page
from webapp.web.views.live import arriving, unread_capture, waiting_panel
from webapp.web.views.quirks import quirk_line
from webapp.web.views.share import share_menu
from webapp.web.views.stories import story_of
from webapp.web.views.stream import page as model
from webapp.web.views.stream.page import (
    anomalies_of,
    compared_step,
    comparison_of,
    links_of,
    live_view_of,
)
from webapp.web.views.stream.team import noted_steps
from webapp.web.views.timing import timed_window

router = APIRouter(include_in_schema=False)


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
        made = made or live_view_of(request, shown)
        answer = model.answer_of(request, made)
        page = None if answer else model.stream_page(request, shown, partial=partial, made=made)
    except Unreadable as error:
        return _unread(request, shown, partial, error)
    templates = templates_of(request)
    if page is None:  # a stored non-stream answer: no step to follow, its calls listed
        return render(templates, request, "answer.html", {"page": answer})
    if partial:
        return render(templates, request, "_stage.html", page.context())
    response = render(templates, request, "stream.html", page.context())
    saw(request, response, shown.stream_id, "o")  # this browser's library holds it now
    return response


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
    found = anomalies_of(live.view, links, step, live.seen.groups if live.seen else None)
    return render(templates_of(request), request, "_anomalies.html", {"anomalies": found})


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
    context["noted"] = noted_steps(request, shown.stream_id)
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
    context["noted"] = noted_steps(request, shown.stream_id)
    return render(templates_of(request), request, "_rows.html", context)


@router.get("/compare")
def compare(request: Request, shown: Shown) -> Response:
    """Two policies side by side; an htmx request gets only the next rows."""
    entry = parse_har_entry(shown.query.get("har_entry"))
    if stored_answer(service_of(request), shown.stream_id, entry):  # no steps: its own page
        return RedirectResponse(Links(shown.stream_id, DEFAULTS, entry).base, 303)
    comparison, links = comparison_of(request, shown)
    query = shown.query
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
    context["story"] = story_of(links, "compare")
    context["panel"] = step_panel(comparison, records, selected) if selected is not None else None
    sides = comparison.left.policy, comparison.right.policy
    context["share"] = share_menu(request, links, selected, title, sides)
    response = render(templates, request, "compare.html", context)
    saw(request, response, shown.stream_id, "o")  # this browser's library holds it now
    return response


@router.get("/compare/step")
def compare_step(request: Request, shown: Shown) -> Response:
    """The compare page's selected step alone: its input, both policies' blocks as of it."""
    panel, comparison, links = compared_step(request, shown)
    if not wants_partial(request):
        left, right = comparison.left.policy, comparison.right.policy
        return RedirectResponse(links.compare(left, right, step=panel.step), status_code=303)
    context: dict[str, Any] = {"panel": panel, "links": links}
    title = stream_title(service_of(request).info(shown.stream_id))
    sides = comparison.left.policy, comparison.right.policy
    context["share"] = share_menu(request, links, panel.step, title, sides)
    return render(templates_of(request), request, "_compare_step.html", context)
