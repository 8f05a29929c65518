"""The teaching pages: the five rules, the guided tour, the record, and the playground.

A built-in example's own pages (`/examples/{key}`, opening at its story) are a stream's pages
(`webapp.web.routes.pages`), served from the package.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.rules import RULES
from webapp.core.words import count
from webapp.examples import EXAMPLES
from webapp.settings import Settings
from webapp.triage.compare import compare
from webapp.web.appstate import service_of, settings_of, templates_of, uploads_of
from webapp.web.backend.intake.ingest import FORM_OVERHEAD, Busy, prepare
from webapp.web.backend.library import indexing
from webapp.web.backend.service import LIGHT_BELOW
from webapp.web.http.bodies import BadInput, TooLarge, parse_form, read_body
from webapp.web.http.links import PLAY_RUN, PLAY_URL_MOST, Links, linkable, play_url
from webapp.web.http.palette import RULES_CSS, RULES_CSS_ETAG
from webapp.web.http.query import parse_har_entry
from webapp.web.http.templating import render
from webapp.web.http.text import as_sse
from webapp.web.views.comparison import compare_page
from webapp.web.views.decision import rendered_decision
from webapp.web.views.flow import rule_flow
from webapp.web.views.playground import (
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
    to_records,
)
from webapp.web.views.stories import see_it, tour

router = APIRouter(include_in_schema=False)


@router.get("/rules")
def rules_page(request: Request) -> Response:
    """The five rules from the rules table, each with its example, and the fold model."""
    context = {"flow": rule_flow(), "seen_in": {rule.name: see_it(rule.name) for rule in RULES}}
    return render(templates_of(request), request, "rules.html", context)


@router.api_route("/rules.css", methods=["GET", "HEAD"])
def rules_stylesheet(request: Request) -> Response:
    """The rule colours (`webapp.web.http.palette`), which every page loads before app.css."""
    headers = {"ETag": RULES_CSS_ETAG, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == RULES_CSS_ETAG:
        return Response(status_code=304, headers=headers)
    return Response(RULES_CSS, media_type="text/css", headers=headers)


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
    result = read(as_sse(to_records(chunks)), "sse")
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
    uploads = uploads_of(request)
    with uploads.slot():
        yield


def _play_run(request: Request, body: bytes) -> Response:
    """`/play/run`'s work, in a worker thread: parse, run both policies, render the partial."""
    templates = templates_of(request)
    try:
        chunks = _posted_state(request, body)
    except BadPlay as error:
        return render(templates, request, "_play_error.html", {"message": str(error)}, 400)
    context = _play_result(chunks)
    url = play_url(context["token"])
    context.update(unlinked=0 if linkable(url) else len(url), url_most=PLAY_URL_MOST)
    response = render(templates, request, "_play_result.html", context)
    if linkable(url):  # else the address keeps the last state that fit, and the result says so
        response.headers["HX-Replace-Url"] = url
    return response


def _refused(request: Request, error: Exception, status: int = 400) -> Response:
    context = {"status": status, "heading": "The playground cannot use that", "message": str(error)}
    return render(templates_of(request), request, "error.html", context, status)


def _render_play(request: Request, context: dict[str, Any], status: int = 200) -> Response:
    context.setdefault("message", None)
    context.setdefault("unlinked", 0)
    context.setdefault("url_most", PLAY_URL_MOST)
    context.setdefault("keys", KEYS)
    context.setdefault("run_url", PLAY_RUN)
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


@router.post(PLAY_RUN)
async def play_run(request: Request) -> Response:
    """Run both policies on the posted state (stateless): the result partial, URL replaced
    (the page's; `POST /api/play` answers a stream's trace as JSON).

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
            url = play_url(token)
            if not linkable(url):  # no redirect to an address no server would take back
                context = await run_in_threadpool(_play_result, chunks)
                context.update(readonly=False, unlinked=len(url))
                return _render_play(request, context)
    except _PlayRefused as refused:
        return _refused(request, refused, refused.status)
    except BadPlay as error:
        return _refused(request, error)
    except Busy as error:
        return _busy(request, error)
    return RedirectResponse(url, status_code=303)


@router.post("/play/save")
async def play_save(request: Request) -> Response:
    """Store the edited stream as a new stream (the original never changes); its timeline."""
    settings: Settings = settings_of(request)
    try:
        body = await _play_body(request)
        with _heavy(request, body):
            chunks = await run_in_threadpool(_posted_state, request, body)
            raw = as_sse(to_records(chunks)).encode("utf-8", "surrogatepass")
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
    info = await run_in_threadpool(
        indexing.store, service, prepared, title=None, fallback="Playground stream"
    )
    return RedirectResponse(Links(info.id, Options()).landing, status_code=303)


def _busy(request: Request, error: Busy) -> Response:
    response = _refused(request, error, 503)
    response.headers["Retry-After"] = "2"
    return response
