"""The teaching pages: built-in examples at stable URLs, the guided tour, and the record.

`GET /examples/{key}` (and its `/compare`, `/compare/step`, `/rows`, `/timeline`,
`/anomalies`) serves an example from the package under the stream id `example:KEY` (see
`example_source`), through the same page code as a stored stream; nothing is stored. A URL
without a step or options opens at the example's story: its start step and its options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.options import Options
from webapp.core.readers import read
from webapp.examples import EXAMPLES, Example
from webapp.settings import Settings
from webapp.triage.compare import compare
from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.backend.example_source import example_id
from webapp.web.backend.ingest import TooLarge, prepare
from webapp.web.query import Links, options_query, parse_har_entry, play_url
from webapp.web.routes import pages
from webapp.web.templating import render
from webapp.web.views.comparison import compare_page
from webapp.web.views.decision import rendered_decision
from webapp.web.views.playground import (
    KEYS,
    MAX_CHUNKS,
    BadPlay,
    Chunk,
    decode,
    edited,
    encode,
    from_form,
    from_records,
    to_sse,
)
from webapp.web.views.stories import tour

router = APIRouter(include_in_schema=False)


def _missing(request: Request) -> Response:
    context = {
        "status": 404,
        "heading": "No such example",
        "message": "There is no built-in example by that name; the tour lists them all.",
    }
    return render(templates_of(request), request, "error.html", context, 404)


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


def _as_example(request: Request, key: str, page: Callable[[Request, str], Response]) -> Response:
    """A stream page for a built-in example, with its story's opening options as defaults."""
    example = EXAMPLES.get(key)
    if example is None:
        return _missing(request)
    return page(_defaulted(request, _opening(example)), example_id(key))


@router.get("/examples/{key}")
def example_page(request: Request, key: str) -> Response:
    """An example's timeline, from the package, opening at its story's step."""
    return _as_example(request, key, pages.stream_page)


@router.get("/examples/{key}/compare")
def example_compare(request: Request, key: str) -> Response:
    """An example's compare page, from the package, its story's step selected."""
    return _as_example(request, key, pages.compare)


@router.get("/examples/{key}/compare/step")
def example_compare_step(request: Request, key: str) -> Response:
    """The selected step of an example's compare page (htmx)."""
    return _as_example(request, key, pages.compare_step)


@router.get("/examples/{key}/timeline")
def example_timeline(request: Request, key: str) -> Response:
    """The timeline window of an example (htmx)."""
    return _as_example(request, key, pages.timeline)


@router.get("/examples/{key}/rows")
def example_rows(request: Request, key: str) -> Response:
    """More timeline rows of an example (htmx)."""
    return _as_example(request, key, pages.rows)


@router.get("/examples/{key}/anomalies")
def example_anomalies(request: Request, key: str) -> Response:
    """An example's anomaly list (htmx)."""
    return _as_example(request, key, pages.anomalies)


@router.get("/tour")
def tour_page(request: Request) -> Response:
    """The examples in teaching order, each opening on the page that suits it."""
    context = {"stops": tour()}
    return render(templates_of(request), request, "tour.html", context)


@router.get("/record")
def decision_page(request: Request) -> Response:
    """Decision record 0019, rendered, its terms linked to the rules and the examples."""
    context = {"decision": rendered_decision()}
    return render(templates_of(request), request, "decision.html", context)


def _play_result(chunks: tuple[Chunk, ...]) -> dict[str, Any]:
    """Both policies run on the state: the compare page's model of it, every row."""
    result = read(to_sse(chunks), "sse")
    comparison = compare(result.records, Options())
    links = Links("playground", Options())
    page = compare_page(comparison, links, only=False, start=0, size=len(chunks) + 4)
    return {"page": page, "chunks": chunks, "token": encode(chunks)}


def _play_form(form: Mapping[str, Any]) -> tuple[Chunk, ...]:
    fields = {name: value for name, value in form.items() if isinstance(value, str)}
    return from_form(fields)


def _refused(request: Request, error: Exception, status: int = 400) -> Response:
    context = {"status": status, "heading": "The playground cannot use that", "message": str(error)}
    return render(templates_of(request), request, "error.html", context, status)


def _render_play(request: Request, context: dict[str, Any], status: int = 200) -> Response:
    context.setdefault("message", None)
    context.setdefault("keys", KEYS)
    return render(templates_of(request), request, "play.html", context, status)


@router.get("/play")
def play_page(request: Request) -> Response:
    """The playground: a stream's fragments in a form, both policies re-run as it changes."""
    query = request.query_params
    token, source = query.get("s"), query.get("from")
    service = service_of(request)
    if token:
        try:
            chunks = decode(token)
        except BadPlay as error:
            return _refused(request, error)
    elif source:
        reading = service.reading(source, parse_har_entry(query.get("har_entry")))
        copied = from_records(reading.result.records)
        if copied is None:
            context = {
                "readonly": True,
                "message": f"This stream has more than {MAX_CHUNKS} chunks: the playground edits "
                "shorter streams. Minimise it first (streamviz minimise), or open its timeline.",
                "back": Links(source, Options()).step(0),
            }
            return _render_play(request, context, 413)
        chunks = copied
    else:
        example = EXAMPLES["continuation"]
        chunks = from_records(read(example.data().decode("utf-8"), "sse").records) or ()
    return _render_play(request, {"readonly": False, **_play_result(chunks)})


@router.post("/api/play")
async def play_run(request: Request) -> Response:
    """Run both policies on the posted state (stateless): the result partial, URL replaced."""
    form = await request.form(max_files=0, max_fields=MAX_CHUNKS * 40)
    templates = templates_of(request)
    try:
        chunks = _play_form(form)
    except BadPlay as error:
        return render(templates, request, "_play_error.html", {"message": str(error)}, 400)
    context = _play_result(chunks)
    response = render(templates, request, "_play_result.html", context)
    response.headers["HX-Replace-Url"] = play_url(context["token"])
    return response


@router.post("/play/edit")
async def play_edit(request: Request) -> Response:
    """A structural edit (add, remove, move a chunk; add, remove a fragment), then the page."""
    form = await request.form(max_files=0, max_fields=MAX_CHUNKS * 40)
    op = form.get("op")
    try:
        chunks = edited(_play_form(form), op if isinstance(op, str) else "")
    except BadPlay as error:
        return _refused(request, error)
    return RedirectResponse(play_url(encode(chunks)), status_code=303)


@router.post("/play/save")
async def play_save(request: Request) -> Response:
    """Store the edited stream as a new stream (the original never changes); its timeline."""
    form = await request.form(max_files=0, max_fields=MAX_CHUNKS * 40)
    settings: Settings = settings_of(request)
    try:
        chunks = _play_form(form)
        raw = to_sse(chunks).encode("utf-8", "surrogatepass")
        prepared = await run_in_threadpool(prepare, raw, "sse", settings.max_bytes)
    except BadPlay as error:
        return _refused(request, error)
    except TooLarge as error:
        return _refused(request, error, 413)
    service = service_of(request)
    info = await run_in_threadpool(service.store, prepared, title="Playground stream")
    return RedirectResponse(Links(info.id, Options()).step(0), status_code=303)
