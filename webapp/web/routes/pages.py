"""A stream's pages: one router, mounted at `/s/{id}` and at `/examples/{key}`.

Every handler takes the stream from `webapp.web.query.stream_source`, so a built-in example
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

from webapp.core.rules import POLICIES
from webapp.triage.compare import Comparison
from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.backend.overview import strip
from webapp.web.backend.traceview import TraceView
from webapp.web.htmx import wants_partial
from webapp.web.links import Links
from webapp.web.query import (
    COMPARED,
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
from webapp.web.routes import clients, share, triage
from webapp.web.routes import diff as diff_routes
from webapp.web.routes import minimise as minimise_routes
from webapp.web.routes.share import share_menu
from webapp.web.templating import render
from webapp.web.text import stream_title
from webapp.web.views import timeline as views
from webapp.web.views.anomaly_list import panel as anomaly_panel
from webapp.web.views.compare_step import step_panel
from webapp.web.views.comparison import compare_page
from webapp.web.views.entries import entries
from webapp.web.views.panels import detail, state
from webapp.web.views.quirks import panel as quirk_panel
from webapp.web.views.quirks import quirk_line

router = APIRouter(include_in_schema=False)


def view_of(
    request: Request, shown: StreamSource, embed: bool = False
) -> tuple[TraceView, Links, int]:
    """The view a page's URL names, its links, and its step (clamped to the trace)."""
    query, stream_id = shown.query, shown.stream_id
    options = parse_options(query)
    step = parse_int(query.get("step"), "step", 0)
    har_entry = parse_har_entry(query.get("har_entry"))
    code = parse_anomaly(query.get("anomaly"))
    start = parse_int(query.get("anomaly_start"), "anomaly_start", 0)
    view = service_of(request).view(stream_id, options, har_entry)
    present = parse_present(query.get("present"))
    links = Links(stream_id, options, har_entry, code, start if code else 0, present, embed)
    return view, links, view.clamp(step)


def stage(view: TraceView, links: Links, step: int) -> dict[str, Any]:
    """The stage's context: the stepping links, the step's detail, the state after it."""
    return {
        "links": links,
        "nav": views.nav(view, links, step),
        "detail": detail(view, step),
        "state": state(view, step),
        "step": step,
    }


def _anomalies(view: TraceView, links: Links, step: int) -> dict[str, Any]:
    found = view.anomaly_groups
    start = links.anomaly_start
    return {"anomalies": anomaly_panel(view.trace, found, links, step, links.anomaly, start)}


@router.get("")
def stream_page(request: Request, shown: Shown) -> Response:
    """The timeline page at a step; an htmx request gets only the stage (nav, detail, state)."""
    view, links, step = view_of(request, shown)
    context = stage(view, links, step)
    context.update(triage.stage_context(request, view, links, step))
    context.update(share_menu(request, links, step, stream_title(view.source.info)))
    templates = templates_of(request)
    if wants_partial(request):
        return render(templates, request, "_stage.html", context)
    context.update(triage.page_context(request, view, links, step))
    size = settings_of(request).timeline_window
    context.update(
        options=view.options,
        summary=views.summary(view),
        window=views.window_around(view, links, step, size),
        policies=POLICIES,
        paths=PATHS,
        overview=strip(view.buckets, len(view.trace.steps), links, step, view.quirks.in_columns),
        quirks=quirk_panel(view.trace.contract, links),
        entries=entries(view, links),
        minimise=minimise_routes.section(request, view, links),
        compare=diff_routes.control(request, links),
        **_anomalies(view, links, step),
    )
    return render(templates, request, "stream.html", context)


@router.get("/anomalies")
def anomalies(request: Request, shown: Shown) -> Response:
    """The anomaly list, filtered by `anomaly` (htmx); a browser is sent to the page."""
    view, links, step = view_of(request, shown)
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    context = _anomalies(view, links, step)
    return render(templates_of(request), request, "_anomalies.html", context)


@router.get("/timeline")
def timeline(request: Request, shown: Shown) -> Response:
    """The timeline window around a step (htmx); a browser is sent to the page at that step."""
    view, links, step = view_of(request, shown)
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    size = settings_of(request).timeline_window
    context = {"window": views.window_around(view, links, step, size), "links": links}
    context["noted"] = triage.noted_steps(request, shown.stream_id)
    return render(templates_of(request), request, "_timeline.html", context)


@router.get("/rows")
def rows(request: Request, shown: Shown) -> Response:
    """More timeline rows before or after those shown (htmx, when the user scrolls)."""
    view, links, step = view_of(request, shown)
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
    context = {"window": window, "links": links, "direction": direction}
    context["noted"] = triage.noted_steps(request, shown.stream_id)
    return render(templates_of(request), request, "_rows.html", context)


@router.get("/compare")
def compare(request: Request, shown: Shown) -> Response:
    """Two policies side by side; an htmx request gets only the next rows."""
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
    return render(templates, request, "compare.html", context)


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
