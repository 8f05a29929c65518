"""The team's JSON API: delete and rename a stream, notes on its steps, the library."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from webapp.storage import StreamInfo
from webapp.storage.team import Notes
from webapp.web.appstate import service_of
from webapp.web.backend.library.shelf import shelf
from webapp.web.backend.service import NotFound
from webapp.web.backend.team.notes import (
    Invalid,
    new_title,
    note_bounds,
    note_input,
    note_json,
    note_of,
    notes_of,
    store_note,
)
from webapp.web.backend.team.owners import (
    bearer,
    may_delete_note,
    may_edit_note,
    new_token,
    token_hash,
    token_matches,
)
from webapp.web.http.bodies import BadInput, json_object
from webapp.web.http.problems import CliJSONResponse, Problem, json_response, problem

router = APIRouter(prefix="/api", tags=["team"], default_response_class=CliJSONResponse)

_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No stream (or note) has this id."}
}
_INVALID: dict[int | str, dict[str, Any]] = {
    422: {"model": Problem, "description": "A field is missing, empty, too long or out of range."},
    400: {"model": Problem, "description": "The body is not a JSON object."},
}


_TOKEN_REFUSED: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "No token was sent."},
    403: {"model": Problem, "description": "Not the token that may do this."},
}
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""A token a client may choose for its notes: URL-safe, 16 to 64 characters."""


def _no_token(what: str) -> Response:
    return problem(
        401, f"send {what} as Authorization: Bearer TOKEN", {"WWW-Authenticate": "Bearer"}
    )


async def _checked(request: Request, work: Any) -> Response:
    """Run `work(body)` in a thread; bad bodies and fields become 400 and 422."""
    try:
        body = await json_object(request)
        result: Response = await run_in_threadpool(work, body)
        return result
    except BadInput as error:
        return problem(400, str(error))
    except Invalid as error:
        return problem(422, str(error))


@router.delete(
    "/streams/{stream_id}",
    status_code=204,
    summary="Delete a stream",
    description="Send the stream's `delete_token` (answered when it was stored) as "
    "`Authorization: Bearer TOKEN`. Removes the stream, its notes and everything derived from "
    "it; every URL of it then answers 404. 401 without a token, 403 with another one.",
    response_class=Response,
    responses={401: {"model": Problem}, 403: {"model": Problem}, **_NOT_FOUND},
)
def delete_stream(request: Request, stream_id: str) -> Response:
    """Remove the stream when the bearer token is its delete token."""
    service = service_of(request)
    token = bearer(request)
    service.info(stream_id)
    if token is None:
        return problem(
            401,
            "send the stream's delete token as Authorization: Bearer TOKEN",
            {"WWW-Authenticate": "Bearer"},
        )
    if not token_matches(token, service.storage.delete_hash(stream_id)):
        return problem(403, "this is not the stream's delete token")
    if not service.delete(stream_id, "by whoever stored it"):
        raise NotFound(stream_id)
    return Response(status_code=204)


@router.patch(
    "/streams/{stream_id}",
    summary="Rename a stream",
    description='`{"title": "..."}`: one line of plain text, 1 to 200 characters. Anyone with '
    "the link may rename.",
    responses={**_NOT_FOUND, **_INVALID},
)
async def rename_stream(request: Request, stream_id: str) -> Response:
    """Give the stream a new title."""
    service = service_of(request)
    await run_in_threadpool(service.info, stream_id)

    def work(body: dict[str, Any]) -> Response:
        if "title" not in body:
            raise Invalid('send {"title": "..."}')
        title = new_title(body["title"])
        if not service.storage.rename(stream_id, title):
            raise NotFound(stream_id)
        info: StreamInfo = service.info(stream_id)
        return json_response({"id": info.id, "title": info.title, "created": info.created})

    return await _checked(request, work)


@router.get(
    "/streams/{stream_id}/notes",
    summary="The notes on a stream's steps",
    description="By step, then in the order they were left.",
    responses=_NOT_FOUND,
)
def list_notes(request: Request, stream_id: str) -> Response:
    """Every note of the stream."""
    notes = notes_of(service_of(request), stream_id)
    return json_response({"notes": [note_json(note) for note in notes]})


@router.post(
    "/streams/{stream_id}/notes",
    status_code=201,
    summary="Leave a note on a step",
    description='`{"step": N, "text": "...", "author": "..."}`: plain text up to 4,000 '
    "characters, an optional author name; `step` must be one of the stream's steps. A stream "
    "holds at most the server's --max-notes-per-stream notes (200 by default), a step "
    "--max-notes-per-step (20); one more is a 422 in words. Anyone with the link may leave a "
    "note. Answers the note with its `edit_token`: send it as `Authorization: Bearer TOKEN` "
    "to edit or delete the note (the server keeps only its hash). Send a token of your own "
    "as Bearer to use it for all your notes instead.",
    responses={**_NOT_FOUND, **_INVALID},
)
async def add_note(request: Request, stream_id: str) -> Response:
    """Store a note; 201 with its id, its link and its edit token."""
    service = service_of(request)
    await run_in_threadpool(service.info, stream_id)
    sent = bearer(request)
    token = sent if sent is not None and _TOKEN.fullmatch(sent) else new_token()

    bounds = note_bounds(request.app.state.settings)

    def work(body: dict[str, Any]) -> Response:
        given = note_input(service, stream_id, body, bounds)
        note = store_note(service, stream_id, given, bounds, token_hash(token))
        return json_response({**note_json(note), "edit_token": token}, 201)

    return await _checked(request, work)


@router.get("/streams/{stream_id}/notes/{note_id}", summary="One note", responses=_NOT_FOUND)
def get_note(request: Request, stream_id: str, note_id: str) -> Response:
    """One note of the stream."""
    return json_response(note_json(note_of(service_of(request), stream_id, note_id)))


@router.patch(
    "/streams/{stream_id}/notes/{note_id}",
    summary="Edit a note",
    description="Any of `step`, `text`, `author`; the others keep their values. Only with the "
    "note's `edit_token` as `Authorization: Bearer TOKEN` (401 without one, 403 with another).",
    responses={**_NOT_FOUND, **_INVALID, **_TOKEN_REFUSED},
)
async def edit_note(request: Request, stream_id: str, note_id: str) -> Response:
    """Change a note's text, author or step."""
    service = service_of(request)
    note = await run_in_threadpool(note_of, service, stream_id, note_id)
    token = bearer(request)
    if token is None:
        return _no_token("the note's edit token")
    if not may_edit_note(token, note.author_hash):
        return problem(403, "this is not the note's edit token")

    bounds = note_bounds(request.app.state.settings)

    def work(body: dict[str, Any]) -> Response:
        given = note_input(service, stream_id, body, bounds, note)
        notes = Notes(service.storage)
        if not notes.edit(stream_id, note.id, given.step, given.text, given.author):
            raise NotFound(stream_id)
        edited = notes.get(stream_id, note.id)
        assert edited is not None
        return json_response(note_json(edited))

    return await _checked(request, work)


@router.delete(
    "/streams/{stream_id}/notes/{note_id}",
    status_code=204,
    summary="Delete a note",
    description="With the note's `edit_token`, or the stream's `delete_token`, as "
    "`Authorization: Bearer TOKEN` (401 without one, 403 with another).",
    response_class=Response,
    responses={**_NOT_FOUND, **_TOKEN_REFUSED},
)
def delete_note(request: Request, stream_id: str, note_id: str) -> Response:
    """Remove a note."""
    service = service_of(request)
    note = note_of(service, stream_id, note_id)
    token = bearer(request)
    if token is None:
        return _no_token("the note's edit token (or the stream's delete token)")
    if not may_delete_note(token, note.author_hash, token, service.storage.delete_hash(stream_id)):
        return problem(403, "this is neither the note's edit token nor the stream's delete token")
    if not Notes(service.storage).remove(stream_id, note.id):
        raise NotFound(stream_id)
    return Response(status_code=204)


@router.get(
    "/streams",
    summary="The library",
    description="Streams newest first, 20 a page (`page`, from 1), searched by title (`q`). "
    "Every stream only on a server run with `--list-streams`; otherwise the streams this "
    "browser stored (its cookie). Each with chunks, calls, errors, warnings and notes.",
)
def library(request: Request) -> Response:
    """One page of the library."""
    try:
        found = shelf(request, service_of(request), request.app.state.settings)
    except Invalid as error:
        return problem(422, str(error))
    return json_response(found.to_json())
