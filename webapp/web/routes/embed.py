"""The framable, read-only view of one step (`/embed/s/{id}`, `/embed/examples/{key}`).

It shows the step's badges, its detail and the blocks after it, with stepping links that stay
under `/embed/`; no forms, notes or team actions. Only these paths may be framed, and only by
the origins `streamviz serve --embed-origins` names (see `security.SecurityHeaders`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from webapp.examples import EXAMPLES
from webapp.web.appstate import templates_of
from webapp.web.backend.example_source import example_id
from webapp.web.htmx import wants_partial
from webapp.web.routes import pages, teach
from webapp.web.templating import render
from webapp.web.text import stream_title
from webapp.web.views import timeline as views

router = APIRouter(include_in_schema=False)


def embed_view(request: Request, stream_id: str) -> Response:
    """The embedded view of a stream at a step; an htmx request gets only its stage."""
    view, links, step = pages._view(request, stream_id, embed=True)
    context = pages._stage(view, links, step)
    context.update(
        badges=views.badges(view.trace, view.trace.steps[step]),
        title=stream_title(view.source.info),
        full_url=links.page.step(step),
    )
    templates = templates_of(request)
    if wants_partial(request):
        return render(templates, request, "_embed_stage.html", context)
    return render(templates, request, "embed.html", context)


@router.get("/embed/s/{stream_id}")
def embed_stream(request: Request, stream_id: str) -> Response:
    """A stored stream's step, for an iframe."""
    return embed_view(request, stream_id)


@router.get("/embed/examples/{key}")
def embed_example(request: Request, key: str) -> Response:
    """A built-in example's step, for an iframe, opening at its story's step."""
    example = EXAMPLES.get(key)
    if example is None:
        return teach._missing(request)
    return embed_view(teach._defaulted(request, teach._opening(example)), example_id(key))
