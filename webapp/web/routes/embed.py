"""The framable, read-only view of one step (`/embed/s/{id}`, `/embed/examples/{key}`).

It shows the step's badges, its detail and the blocks after it, with stepping links that stay
under `/embed/`; no forms, notes or team actions. Only these paths may be framed, and only by
the origins `streamviz serve --embed-origins` names (see `security.SecurityHeaders`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from webapp.web.appstate import templates_of
from webapp.web.htmx import wants_partial
from webapp.web.query import Shown
from webapp.web.routes import pages
from webapp.web.templating import render
from webapp.web.text import stream_title
from webapp.web.views import timeline as views

router = APIRouter(include_in_schema=False)
"""Mounted at `/embed/s/{id}` and `/embed/examples/{key}`, as the stream pages' router is."""


@router.get("")
def embed_view(request: Request, shown: Shown) -> Response:
    """The embedded view of a stream at a step; an htmx request gets only its stage."""
    view, links, step = pages.view_of(request, shown, embed=True)
    context = pages.stage(view, links, step)
    context.update(
        badges=views.badges(view.trace, view.trace.steps[step]),
        title=stream_title(view.source.info),
        full_url=links.page.step(step),
    )
    templates = templates_of(request)
    if wants_partial(request):
        return render(templates, request, "_embed_stage.html", context)
    return render(templates, request, "embed.html", context)
