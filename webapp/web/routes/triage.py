"""The team's pages: rename in place, notes on steps, delete, the report, the fixture, the library.

Every form posts to a real URL and is answered with a redirect to a GET page (or, for an htmx
request, with the partial it replaces), so all of it works without JavaScript.
"""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from webapp.core.assembler import assemble
from webapp.core.jsoncheck import dumps
from webapp.core.readers import read
from webapp.core.records import ReaderError, Record
from webapp.core.redact.content import scrub
from webapp.core.rules import POLICIES, Policy
from webapp.storage.team import Notes
from webapp.triage.report import Links as ReportLinks
from webapp.triage.report import Note, cell, render
from webapp.triage.verdict import policies_verdict
from webapp.web.appstate import client_jobs, service_of, settings_of, site_root, templates_of
from webapp.web.backend.capture.hops import gateway_of
from webapp.web.backend.capture.timing import fixture_cassette, record_timing
from webapp.web.backend.capture.twin import stored_answer
from webapp.web.backend.example_source import example_of
from webapp.web.backend.jobs.fixture import Fixtures, fixture_kind
from webapp.web.backend.library.shelf import shelf
from webapp.web.backend.service import LIGHT_BELOW, Unreadable
from webapp.web.backend.team.notes import (
    Invalid,
    new_title,
    note_bounds,
    note_input,
    note_of,
    note_url,
    notes_of,
    small_form,
    store_note,
)
from webapp.web.backend.team.owners import (
    author_token,
    forget,
    keep_author,
    may_delete_note,
    may_edit_note,
    new_token,
    owned,
    saw,
    token_hash,
    token_matches,
)
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.bodies import form_text
from webapp.web.http.htmx import wants_partial
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS, parse_har_entry, parse_int, parse_options
from webapp.web.http.templating import render as render_page
from webapp.web.http.text import as_sse
from webapp.web.views.stream.team import Header

router = APIRouter(include_in_schema=False)


def _error(request: Request, status: int, heading: str, message: str) -> Response:
    context = {"status": status, "heading": heading, "message": message}
    return render_page(templates_of(request), request, "error.html", context, status)


# Rename.


@router.post("/s/{stream_id}/title")
async def rename(request: Request, stream_id: str) -> Response:
    """Store a new title; back to the page (htmx: the title form alone)."""
    service = service_of(request)
    info = await run_in_threadpool(service.info, stream_id)
    try:
        form = await small_form(request)
        title = new_title(form_text(form, "title"))
    except Invalid as error:
        return _error(request, 422, "That title cannot be stored", str(error))
    step = parse_int(form_text(form, "step"), "step", 0)
    links = Links(stream_id, DEFAULTS)
    await run_in_threadpool(service.storage.rename, stream_id, title)
    response: Response
    if wants_partial(request):
        header = Header(stream_id, title, "", step, False, info.parent)
        context = {"header": header, "team_links": {"title": links.title}}
        response = render_page(templates_of(request), request, "_title.html", context)
    else:
        response = RedirectResponse(links.plain_step(step), status_code=303)
    saw(request, response, stream_id, "r")  # this browser's library holds it now
    return response


# Delete.


@router.get("/s/{stream_id}/delete")
def confirm_delete(request: Request, stream_id: str) -> Response:
    """Ask before deleting; only the browser that stored the stream may."""
    info = service_of(request).info(stream_id)
    context = {
        "info": info,
        "can_delete": stream_id in owned(request),
        "delete_url": Links(stream_id, DEFAULTS).deletion,
        "back_url": Links(stream_id, DEFAULTS).base,
    }
    return render_page(templates_of(request), request, "delete.html", context)


@router.post("/s/{stream_id}/delete")
def delete(request: Request, stream_id: str) -> Response:
    """Delete with the token in this browser's cookie, then show the library."""
    service = service_of(request)
    service.info(stream_id)
    token = owned(request).get(stream_id)
    if token is None or not token_matches(token, service.storage.delete_hash(stream_id)):
        return _error(
            request,
            403,
            "This browser cannot delete this stream",
            "Only the browser that stored a stream (or the server's operator, with "
            "`streamviz delete`) can delete it.",
        )
    service.delete(stream_id, "by the browser that stored it")
    response = RedirectResponse("/streams?deleted=1", status_code=303)
    forget(request, response, stream_id)
    return response


# Notes.


def _note_fields(form: FormData) -> dict[str, Any]:
    return {name: form_text(form, name) for name in ("step", "text", "author") if name in form}


@router.post("/s/{stream_id}/notes")
async def add_note(request: Request, stream_id: str) -> Response:
    """Leave a note on a step; then its own link."""
    service = service_of(request)
    await run_in_threadpool(service.info, stream_id)
    bounds = note_bounds(settings_of(request))
    token = author_token(request) or new_token()
    try:
        form = await small_form(request)
        given = await run_in_threadpool(note_input, service, stream_id, _note_fields(form), bounds)
        note = await run_in_threadpool(
            store_note, service, stream_id, given, bounds, token_hash(token)
        )
    except Invalid as error:
        return _error(request, 422, "That note cannot be stored", str(error))
    response = RedirectResponse(note_url(stream_id, note), status_code=303)
    keep_author(request, response, token)  # this browser may edit and delete it
    saw(request, response, stream_id, "n")  # this browser's library holds it now
    return response


def _not_yours(request: Request, what: str) -> Response:
    return _error(
        request,
        403,
        f"This browser cannot {what} this note",
        "Only the browser that left a note can edit or delete it (the browser that stored the "
        "stream can delete it too). Leave a note of your own on the step instead.",
    )


@router.post("/s/{stream_id}/notes/{note_id}")
async def edit_note(request: Request, stream_id: str, note_id: str) -> Response:
    """Change a note's text (or author); then its link."""
    service = service_of(request)
    note = await run_in_threadpool(note_of, service, stream_id, note_id)
    if not may_edit_note(author_token(request), note.author_hash):
        return _not_yours(request, "edit")
    bounds = note_bounds(settings_of(request))
    try:
        form = await small_form(request)
        fields = _note_fields(form)
        given = await run_in_threadpool(note_input, service, stream_id, fields, bounds, note)
    except Invalid as error:
        return _error(request, 422, "That note cannot be stored", str(error))
    await run_in_threadpool(
        Notes(service.storage).edit, stream_id, note.id, given.step, given.text, given.author
    )
    return RedirectResponse(note_url(stream_id, replace(note, step=given.step)), status_code=303)


@router.post("/s/{stream_id}/notes/{note_id}/delete")
def delete_note(request: Request, stream_id: str, note_id: str) -> Response:
    """Remove a note; back to its step."""
    service = service_of(request)
    note = note_of(service, stream_id, note_id)
    owner = owned(request).get(stream_id)
    delete_hash = service.storage.delete_hash(stream_id)
    if not may_delete_note(author_token(request), note.author_hash, owner, delete_hash):
        return _not_yours(request, "delete")
    Notes(service.storage).remove(stream_id, note.id)
    return RedirectResponse(Links(stream_id, DEFAULTS).plain_step(note.step), status_code=303)


# Report and fixture.


def _views(request: Request, stream_id: str) -> tuple[TraceView, TraceView]:
    query = request.query_params
    options = parse_options(query)
    har_entry = parse_har_entry(query.get("har_entry"))
    service = service_of(request)
    view = service.view(stream_id, options, har_entry)
    other: Policy = "exact-key" if options.policy == "adr-0019" else "adr-0019"
    return view, service.view(stream_id, replace(options, policy=other), har_entry)


@router.get("/s/{stream_id}/report.md")
def report(request: Request, stream_id: str) -> Response:
    """The Markdown report (`webapp.triage.report`), with the notes; its step links absolute
    (pasted into a tracker), from `--public-url`, else from the address the request came to."""
    entry = parse_har_entry(request.query_params.get("har_entry"))
    if stored_answer(service_of(request), stream_id, entry):  # no steps: its own page
        return RedirectResponse(Links(stream_id, DEFAULTS, entry).base, 303)
    view, other = _views(request, stream_id)
    notes = [Note(n.step, n.author, n.text) for n in notes_of(service_of(request), stream_id)]
    har_entry = view.source.har_entry
    reading = service_of(request).reading(stream_id, har_entry)  # every record
    # The clients' verdict on this entry when its clients page computed it (as `streamviz
    # report --clients`), else this build's two policies graded (as `streamviz report`).
    contract = view.trace.contract
    gateway = None
    if har_entry is None and contract is not None:
        gateway = gateway_of(service_of(request), stream_id, contract.codes)
    judged = client_jobs(request).get(stream_id, har_entry) or policies_verdict(
        reading.result.records, contract=contract, model=reading.result.model, gateway=gateway
    )
    text = render(
        reading.result,
        view.trace,
        other.trace,
        title=view.source.info.title or "Untitled stream",
        notes=notes,
        links=ReportLinks(site_root(request), stream_id, har_entry),
        judged=judged,
    )
    return Response(
        text.encode("utf-8", "backslashreplace"),
        media_type="text/markdown; charset=utf-8",
        headers={"Content-Disposition": f'inline; filename="streamviz-{stream_id}.md"'},
    )


FIXTURE_README = (
    "Regression fixture from streamviz stream “{title}” ({where}), redacted. Replay: "
    "`streamviz check stream.sse --expect expected.adr-0019.json` and "
    "`streamviz check stream.sse --policy exact-key --expect expected.exact-key.json` "
    "(exit 0: unchanged, 1: the trace changed).\n\n"
    "cassette.yaml is the same stream as a vcrpy / pytest-recording cassette (one POST to "
    "https://api.openai.com/v1/chat/completions answering it as an event stream), for a test "
    "suite to replay with its own client: `vcr.use_cassette('cassette.yaml', "
    "record_mode='none', match_on=['method', 'path'])`, or pytest-recording's "
    "`@pytest.mark.vcr('cassette.yaml')`.\n"
)


def fixture_bundle(
    view: TraceView,
    records: Sequence[Record],
    where: str,
    arrivals: Sequence[float | None] | None = None,
) -> bytes:
    """A zip of stream.sse (secrets masked), expected.POLICY.json for both policies,
    cassette.yaml (the stream as a vcrpy cassette, with `arrivals` per record when known),
    README.md; `records` are the stream's, read on demand (a trace view keeps none)."""
    text, _ = scrub(as_sse(records))
    try:
        replay = read(text, "sse")
    except ReaderError as error:
        raise Unreadable(f"this stream does not replay as SSE: {error}") from error
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("stream.sse", text.encode("utf-8", "backslashreplace"))
        for name in POLICIES:
            trace = assemble(replay.records, replace(view.options.canonical(), policy=name))
            bundle.writestr(f"expected.{name}.json", dumps(trace.to_json(), indent=True) + b"\n")
        cassette = fixture_cassette(text, replay, view.source.found.model, arrivals)
        bundle.writestr("cassette.yaml", cassette.encode("utf-8", "backslashreplace"))
        title = view.source.info.title or "Untitled stream"
        readme = FIXTURE_README.format(title=cell(title), where=where)  # inert Markdown
        bundle.writestr("README.md", readme.encode("utf-8", "backslashreplace"))
    return buffer.getvalue()


_MAKING = threading.Lock()


def _fixtures(request: Request) -> Fixtures:
    """The app's fixture bundles (one per app: its builds under way)."""
    with _MAKING:
        found: Fixtures | None = getattr(request.app.state, "fixtures", None)
        if found is None:
            found = request.app.state.fixtures = Fixtures()
    return found


@router.get("/s/{stream_id}/fixture.zip")
def fixture(request: Request, stream_id: str) -> Response:
    """The regression fixture bundle to download: built once (under the bound on heavy work)
    and kept as an artefact of the stream (`webapp.web.backend.jobs.fixture`)."""
    service = service_of(request)
    options = parse_options(request.query_params)
    har_entry = parse_har_entry(request.query_params.get("har_entry"))
    info = service.info(stream_id)  # NotFound: the usual 404 page
    where = Links(stream_id, DEFAULTS).at(settings_of(request).public_url)
    kind = fixture_kind(har_entry, info.title or "Untitled stream", where)

    def build() -> bytes:
        view = service.view(stream_id, options, har_entry)
        reading = service.reading(stream_id, har_entry)
        arrivals = record_timing(service, stream_id, har_entry)
        return fixture_bundle(view, reading.result.records, where, arrivals)

    storage = None if example_of(stream_id) is not None else service.storage
    light = info.size < LIGHT_BELOW
    bundle = _fixtures(request).get(
        storage, (stream_id, options.key(), kind), lambda: service.gate.heavy_for(light), build
    )
    return Response(
        bundle,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="fixture-{stream_id}.zip"'},
    )


# The library.


@router.get("/streams")
def library(request: Request) -> Response:
    """Streams newest first, searched by title, paginated."""
    try:
        found = shelf(request, service_of(request), settings_of(request))
    except Invalid as error:
        return _error(request, 400, "That search cannot be run", str(error))
    context = {
        "shelf": found,
        "deleted": request.query_params.get("deleted") == "1",
        "retention_days": settings_of(request).retention_days,
    }
    return render_page(templates_of(request), request, "streams.html", context)
