"""The framable, read-only views: a step (`/embed/s/{id}`, `/embed/examples/{key}`) and compare
(`.../compare`).

The step's view shows its badges, its detail and the blocks after it; compare's, the rows of
both policies and the selected step's blocks under each. Their stepping links stay under
`/embed/`; no forms, notes or team actions. Only these paths may be framed, and only by the
origins `streamviz serve --embed-origins` names (see `security.SecurityHeaders`). A frame's
load from any other origin gets a page that says so and names the flag (`framing`), and the
view opened in a tab of its own says who may frame it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.http.framing import refusal
from webapp.web.http.htmx import wants_partial
from webapp.web.http.query import Shown, parse_int
from webapp.web.http.security import REFUSAL_CSP
from webapp.web.http.templating import render
from webapp.web.http.text import stream_title
from webapp.web.views import timeline as views
from webapp.web.views.compare_step import step_panel
from webapp.web.views.comparison import compare_page
from webapp.web.views.stream.page import compared_step, comparison_of, flat, stage, view_of

router = APIRouter(include_in_schema=False)
"""Mounted at `/embed/s/{id}` and `/embed/examples/{key}`, as the stream pages' router is."""
VARY = "Sec-Fetch-Dest, Referer"
"""An embed's answer depends on whether it is a frame's load, and whose."""


def _framing(request: Request, full_url: str, title: str) -> tuple[Response | None, bool]:
    """The refusal for a frame's load this server would refuse (else None), and whether the
    view is open in a tab of its own (not framed: it then says who may frame it)."""
    allowed = settings_of(request).embed_origins
    refused = refusal(request.headers, allowed)
    framed = request.headers.get("sec-fetch-dest", "").lower() == "iframe"
    if refused is None:
        return None, not framed
    context = {"refused": refused, "full_url": full_url, "title": title, "allowed": allowed}
    response = render(templates_of(request), request, "embed_refused.html", context, 403)
    response.headers["Content-Security-Policy"] = REFUSAL_CSP
    response.headers["Cache-Control"] = "no-store"
    response.headers["Vary"] = VARY
    return response, False


def _page(request: Request, name: str, context: dict[str, Any]) -> Response:
    response = render(templates_of(request), request, name, context)
    response.headers["Vary"] = VARY
    return response


@router.get("")
def embed_view(request: Request, shown: Shown) -> Response:
    """The embedded view of a stream at a step; an htmx request gets only its stage."""
    view, links, step = view_of(request, shown, embed=True)
    title = stream_title(view.source.info)
    full_url = links.page.step(step)
    refused, alone = _framing(request, full_url, title)
    if refused is not None:
        return refused
    context = flat(stage(view, links, step))
    context.update(badges=views.badges(view.trace, view.trace.steps[step]))
    if wants_partial(request):
        return render(templates_of(request), request, "_embed_stage.html", context)
    context.update(title=title, full_url=full_url, alone=alone, **_allowed(request))
    return _page(request, "embed.html", context)


@router.get("/compare")
def embed_compare(request: Request, shown: Shown) -> Response:
    """The embedded view of compare: both policies' rows, the selected step's blocks."""
    comparison, links = comparison_of(request, shown)
    query = shown.query
    framed_links = links.embedded
    left, right = comparison.left.policy, comparison.right.policy
    chosen = query.get("step")
    selected = parse_int(chosen, "step", 0) if chosen else 0
    selected = max(0, min(selected, len(comparison.rows) - 1))
    size = settings_of(request).timeline_window
    start = parse_int(query.get("start"), "start", selected // size * size)
    service = service_of(request)
    reading = service.reading(shown.stream_id, links.har_entry)
    records = reading.result.records
    page = compare_page(
        comparison, links, only=False, start=start, size=size, records=records,
        selected=selected, framed=True,
    )  # fmt: skip
    title = stream_title(reading.info)
    full_url = links.compare(left, right, step=selected)
    refused, alone = _framing(request, full_url, title)
    if refused is not None:
        return refused
    context: dict[str, Any] = {"page": page, "links": framed_links}
    if wants_partial(request):
        return render(templates_of(request), request, "_compare_rows.html", context)
    context.update(
        title=title,
        full_url=full_url,
        alone=alone,
        panel=step_panel(comparison, records, selected),
        **_allowed(request),
    )
    return _page(request, "embed_compare.html", context)


@router.get("/compare/step")
def embed_compare_step(request: Request, shown: Shown) -> Response:
    """The embedded compare's selected step alone (htmx); a browser is sent to the view."""
    panel, comparison, links = compared_step(request, shown)
    if not wants_partial(request):
        left, right = comparison.left.policy, comparison.right.policy
        return RedirectResponse(links.compare(left, right, step=panel.step, framed=True), 303)
    context = {"panel": panel, "links": links.embedded}
    return render(templates_of(request), request, "_compare_step.html", context)


def _allowed(request: Request) -> dict[str, Any]:
    return {"allowed": settings_of(request).embed_origins}
