"""The teaching pages: built-in examples at stable URLs, the guided tour, and the record.

`GET /examples/{key}` (and its `/compare`, `/rows`, `/timeline`, `/anomalies`) serves an
example from the package under the stream id `example:KEY` (see `example_source`), through
the same page code as a stored stream; nothing is stored. A URL without a step or options
opens at the example's story: its start step and its options.
"""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from webapp.examples import EXAMPLES, Example
from webapp.web import pages
from webapp.web.example_source import example_id
from webapp.web.query import options_query
from webapp.web.record import rendered_record
from webapp.web.stories import tour
from webapp.web.templating import render

router = APIRouter(include_in_schema=False)


def _missing(request: Request) -> Response:
    context = {
        "status": 404,
        "heading": "No such example",
        "message": "There is no built-in example by that name; the tour lists them all.",
    }
    return render(request.app.state.templates, request, "error.html", context, 404)


def _defaulted(request: Request, defaults: dict[str, str]) -> Request:
    """The request with `defaults` added to its query for every name the query lacks."""
    query = request.query_params
    pairs = [(name, value) for name, value in defaults.items() if name not in query]
    pairs.extend(query.multi_items())
    scope = dict(request.scope)
    scope["query_string"] = urlencode(pairs).encode("latin-1")
    return Request(scope, request.receive)


def _opening(example: Example) -> dict[str, str]:
    """The query an example's page opens with when its URL names nothing."""
    return {"step": str(example.story.start_step), **options_query(example.options)}


@router.get("/examples/{key}")
def example_page(request: Request, key: str) -> Response:
    """An example's timeline, from the package, opening at its story's step."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return pages.stream_page(_defaulted(request, _opening(example)), example_id(key))


@router.get("/examples/{key}/compare")
def example_compare(request: Request, key: str) -> Response:
    """An example's compare page, from the package, its story's step selected."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return pages.compare(_defaulted(request, _opening(example)), example_id(key))


@router.get("/examples/{key}/timeline")
def example_timeline(request: Request, key: str) -> Response:
    """The timeline window of an example (htmx)."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return pages.timeline(_defaulted(request, _opening(example)), example_id(key))


@router.get("/examples/{key}/rows")
def example_rows(request: Request, key: str) -> Response:
    """More timeline rows of an example (htmx)."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return pages.rows(_defaulted(request, _opening(example)), example_id(key))


@router.get("/examples/{key}/anomalies")
def example_anomalies(request: Request, key: str) -> Response:
    """An example's anomaly list (htmx)."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return pages.anomalies(_defaulted(request, _opening(example)), example_id(key))


@router.get("/tour")
def tour_page(request: Request) -> Response:
    """The examples in teaching order, each opening on the page that suits it."""
    context = {"stops": tour()}
    return render(request.app.state.templates, request, "tour.html", context)


@router.get("/record")
def record_page(request: Request) -> Response:
    """Decision record 0019, rendered, its terms linked to the rules and the examples."""
    context = {"record": rendered_record()}
    return render(request.app.state.templates, request, "record.html", context)
