"""Sharing a stream: the stream as one HTML file to download.

The menu (`webapp.web.views.share`) is part of the timeline's stage and of compare's selected
step, so every page that shows a step offers it. `/s/{id}/export.html` (and an example's
`/examples/{key}/export.html`) is the stream as one self-contained file
(`webapp.web.views.export`), under the view's options and HAR entry.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from markupsafe import Markup

from webapp.triage.report import verdict
from webapp.web.appstate import service_of, settings_of, site_root, templates_of
from webapp.web.backend.capture.twin import stored_answer
from webapp.web.backend.team.notes import notes_of
from webapp.web.http.links import Links
from webapp.web.http.query import COMPARED, DEFAULTS, Shown, parse_har_entry, parse_options
from webapp.web.http.templating import render
from webapp.web.views.comparison import headline
from webapp.web.views.export import export, style_hash, stylesheet

router = APIRouter(include_in_schema=False)
"""Part of the stream pages' router (`webapp.web.routes.pages`): `/s/{id}/export.html`."""


@router.get("/export.html")
def export_file(request: Request, shown: Shown) -> Response:
    """The stream as one HTML file that opens offline (a download)."""
    query, stream_id = shown.query, shown.stream_id
    options = parse_options(query)
    har_entry = parse_har_entry(query.get("har_entry"))
    service = service_of(request)
    if stored_answer(service, stream_id, har_entry):  # no steps to export: its own page
        return RedirectResponse(Links(stream_id, DEFAULTS, har_entry).base, 303)
    view = service.view(stream_id, options, har_entry)
    notes = notes_of(service, stream_id)
    comparison = service.comparison(stream_id, options, *COMPARED, har_entry)
    links = Links(stream_id, options, har_entry)
    doc = export(
        view,
        notes,
        where=site_root(request) + links.landing,
        exported=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        verdict=verdict(view.trace),
        headline=headline(comparison),
        max_steps=settings_of(request).export_steps,
    )
    css = stylesheet()
    # The stylesheet is the package's own file, not data: it goes in as it is written.
    context = {"doc": doc, "css": Markup(css), "style_hash": style_hash(css)}
    response = render(templates_of(request), request, "export.html", context)
    name = "".join(c if c.isalnum() else "-" for c in stream_id)
    response.headers["Content-Disposition"] = f'attachment; filename="streamviz-{name}.html"'
    return response
