"""The teaching pages: built-in examples at stable URLs, the guided tour, and the record.

`GET /examples/{key}` (and its `/compare`, `/compare/step`, `/rows`, `/timeline`,
`/anomalies`) serves an example from the package under the stream id `example:KEY` (see
`example_source`), through the same page code as a stored stream; nothing is stored. A URL
without a step or options opens at the example's story: its start step and its options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.compare import compare
from webapp.examples import EXAMPLES, Example
from webapp.options import Options
from webapp.readers import read
from webapp.settings import Settings
from webapp.web import pages
from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.comparison import compare_page
from webapp.web.example_source import example_id
from webapp.web.ingest import (
    FORM_OVERHEAD,
    BadInput,
    Busy,
    TooLarge,
    UploadSlots,
    parse_form,
    prepare,
    read_body,
)
from webapp.web.playground import (
    KEYS,
    MAX_CHUNKS,
    MAX_TEXT,
    BadPlay,
    Chunk,
    decode,
    edited,
    encode,
    from_form,
    from_records,
    to_sse,
)
from webapp.web.query import Links, options_query, parse_har_entry, play_url
from webapp.web.record import rendered_record
from webapp.web.service import LIGHT_BELOW
from webapp.web.stories import tour
from webapp.web.templating import render
from webapp.words import count

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
def record_page(request: Request) -> Response:
    """Decision record 0019, rendered, its terms linked to the rules and the examples."""
    context = {"record": rendered_record()}
    return render(templates_of(request), request, "record.html", context)


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


_PLAY_FIELDS = MAX_CHUNKS * 40
_PLAY_FIELD_BYTES = 12 * MAX_TEXT + 1024
"""A field's bytes on the wire: a value of MAX_TEXT characters, each percent-encoded UTF-8."""


class _PlayRefused(Exception):
    """A playground post refused before its state is read: the status and the words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _play_body(request: Request) -> bytes:
    """The posted form's bytes, refused (413) as soon as they pass `--max-bytes`."""
    limit = settings_of(request).max_bytes
    try:
        return bytes(await read_body(request, limit + FORM_OVERHEAD, limit))
    except TooLarge:
        raise _PlayRefused(
            413,
            f"this playground state is larger than the server's limit of {count(limit, 'byte')} "
            "(its --max-bytes)",
        ) from None


def _posted_state(request: Request, body: bytes, op: str | None = None) -> tuple[Chunk, ...]:
    """The state a posted form names (after the edit in its `op` field, if asked); run in a
    worker thread. Raises BadPlay."""
    try:
        form = parse_form(request.headers, body, _PLAY_FIELDS, _PLAY_FIELD_BYTES)
    except BadInput as error:
        raise BadPlay(f"the playground cannot read that form: {error}") from error
    chunks = _play_form(form)
    if op is None:
        return chunks
    verb = form.get("op")
    return edited(chunks, verb if isinstance(verb, str) else "")


@contextmanager
def _heavy(request: Request, body: bytes) -> Iterator[None]:
    """A large playground post takes one of the worker's upload slots (Busy when none is free):
    it is read and run like an upload; a small one, the usual edit, never waits for them."""
    if len(body) < LIGHT_BELOW:
        yield
        return
    uploads: UploadSlots = request.app.state.uploads
    with uploads.slot():
        yield


def _play_run(request: Request, body: bytes) -> Response:
    """`/api/play`'s work, in a worker thread: parse, run both policies, render the partial."""
    templates = templates_of(request)
    try:
        chunks = _posted_state(request, body)
    except BadPlay as error:
        return render(templates, request, "_play_error.html", {"message": str(error)}, 400)
    context = _play_result(chunks)
    response = render(templates, request, "_play_result.html", context)
    response.headers["HX-Replace-Url"] = play_url(context["token"])
    return response


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
                "shorter streams. Minimize it first (streamviz minimize), or open its timeline.",
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
    """Run both policies on the posted state (stateless): the result partial, URL replaced.

    The body is bounded by `--max-bytes` (413) and everything after receiving it runs in a
    worker thread, a large one under an upload slot (503 when none is free)."""
    templates = templates_of(request)
    try:
        body = await _play_body(request)
        with _heavy(request, body):
            return await run_in_threadpool(_play_run, request, body)
    except _PlayRefused as refused:
        context = {"message": str(refused)}
        return render(templates, request, "_play_error.html", context, refused.status)
    except Busy as error:
        return _busy(request, error)


@router.post("/play/edit")
async def play_edit(request: Request) -> Response:
    """A structural edit (add, remove, move a chunk; add, remove a fragment), then the page."""
    try:
        body = await _play_body(request)
        with _heavy(request, body):
            chunks = await run_in_threadpool(_posted_state, request, body, "op")
            token = await run_in_threadpool(encode, chunks)
    except _PlayRefused as refused:
        return _refused(request, refused, refused.status)
    except BadPlay as error:
        return _refused(request, error)
    except Busy as error:
        return _busy(request, error)
    return RedirectResponse(play_url(token), status_code=303)


@router.post("/play/save")
async def play_save(request: Request) -> Response:
    """Store the edited stream as a new stream (the original never changes); its timeline."""
    settings: Settings = settings_of(request)
    try:
        body = await _play_body(request)
        with _heavy(request, body):
            chunks = await run_in_threadpool(_posted_state, request, body)
            raw = to_sse(chunks).encode("utf-8", "surrogatepass")
            prepared = await run_in_threadpool(prepare, raw, "sse", settings.max_bytes)
    except _PlayRefused as refused:
        return _refused(request, refused, refused.status)
    except BadPlay as error:
        return _refused(request, error)
    except TooLarge as error:
        return _refused(request, error, 413)
    except Busy as error:
        return _busy(request, error)
    service = service_of(request)
    info = await run_in_threadpool(service.store, prepared, title="Playground stream")
    return RedirectResponse(Links(info.id, Options()).step(0), status_code=303)


def _busy(request: Request, error: Busy) -> Response:
    response = _refused(request, error, 503)
    response.headers["Retry-After"] = "2"
    return response
