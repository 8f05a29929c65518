"""Titles and notes: plain text, checked here and escaped wherever they are shown; a note's
step, its room on the stream and its step (`--max-notes`), its URL and JSON."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request

from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage.team import NoteBounds, Notes, StoredNote
from webapp.web.backend.intake.ingest import MAX_TITLE
from webapp.web.backend.service import NotFound, Service, Unreadable
from webapp.web.http.bodies import BadInput, TooLarge, read_form
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS
from webapp.web.http.text import one_line, printable

MAX_NOTE = 4_000
FORM_LIMIT = 64 * 1024
"""The most bytes a small form (a title, a note, a choice) may take."""
MAX_AUTHOR = 80
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Invalid(ValueError):
    """A title, note or step that cannot be stored; the message says why (a 422)."""


def clean_line(value: object, name: str, limit: int, *, required: bool) -> str:
    """One line of text (a title, an author): spaces folded, at most `limit` characters."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise Invalid(f"{name} must be a string")
    text = one_line(value)
    if required and not text:
        raise Invalid(f"{name} is empty")
    if len(text) > limit:
        raise Invalid(f"{name} is longer than {limit:,} characters ({len(text):,})")
    return text


def new_title(value: object) -> str:
    """The title a rename sends: one line, 1 to `MAX_TITLE` characters, else Invalid (a stream
    being stored takes `webapp.web.backend.intake.ingest.clean_title`, which falls back and
    cuts)."""
    return clean_line(value, "title", MAX_TITLE, required=True)


def clean_note(value: object) -> str:
    """A note's text: plain text, line breaks kept, 1 to `MAX_NOTE` characters."""
    if not isinstance(value, str):
        raise Invalid("text must be a string")
    text = _CONTROL.sub(" ", printable(value).replace("\r\n", "\n").replace("\r", "\n")).strip()
    if not text:
        raise Invalid("text is empty: write something in the note")
    if len(text) > MAX_NOTE:
        raise Invalid(f"text is longer than {MAX_NOTE:,} characters ({len(text):,})")
    return text


def parse_step(value: object, last: int) -> int:
    """A step number of a trace whose last step is `last`."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise Invalid("step must be a whole number")
    if not 0 <= value <= last:
        raise Invalid(f"step must be between 0 and {last} (got {value})")
    return value


def _last_step(service: Service, stream_id: str) -> int:
    """The stream's last step under the default options (its `end` step)."""
    try:
        return service.view(stream_id, Options()).last
    except Unreadable as error:
        raise Invalid(f"this stream does not assemble, so it has no steps: {error}") from error


@dataclass(frozen=True, slots=True)
class NoteInput:
    """A note as sent: step, text, author, all checked."""

    step: int
    text: str
    author: str


def note_input(
    service: Service,
    stream_id: str,
    body: Mapping[str, Any],
    bounds: NoteBounds,
    base: StoredNote | None = None,
) -> NoteInput:
    """Check a note's fields (its step against the stream's last); with `base` (an edit),
    fields left out keep their values, and a move to another step needs room there. Invalid
    in words."""
    last = _last_step(service, stream_id)
    if base is not None:
        body = {"step": base.step, "text": base.text, "author": base.author, **body}
    given = NoteInput(
        step=parse_step(body.get("step"), last),
        text=clean_note(body.get("text")),
        author=clean_line(body.get("author"), "author", MAX_AUTHOR, required=False),
    )
    if base is not None:
        _check_move(service, stream_id, base, given, bounds)
    return given


def note_bounds(settings: Settings) -> NoteBounds:
    """The server's bounds on notes (`--max-notes-per-stream`, `--max-notes-per-step`)."""
    return NoteBounds(settings.max_notes_per_stream, settings.max_notes_per_step)


def no_room(total: int, on_step: int, bounds: NoteBounds) -> str | None:
    """Why a note cannot be added to a stream holding `total` notes, `on_step` of them on the
    step, in words; None when it can."""
    if total >= bounds.per_stream:
        return (
            f"this stream holds {total:,} notes, the most one stream may "
            f"(the server's --max-notes-per-stream is {bounds.per_stream:,}): edit or delete "
            "one to add another"
        )
    if on_step >= bounds.per_step:
        return (
            f"this step holds {on_step:,} notes, the most one step may (the server's "
            f"--max-notes-per-step is {bounds.per_step:,}): edit or delete one, or note a "
            "step next to it"
        )
    return None


def room_on(service: Service, stream_id: str, step: int, bounds: NoteBounds) -> str | None:
    """Why no note can be added on this step now, or None (the page's form says so)."""
    return no_room(*Notes(service.storage).counts(stream_id, step), bounds)


def store_note(
    service: Service, stream_id: str, given: NoteInput, bounds: NoteBounds, author_hash: str = ""
) -> StoredNote:
    """Store a note within the bounds, editable by the token whose hash is `author_hash`;
    Invalid (a 422) in words when there is no room."""
    why = room_on(service, stream_id, given.step, bounds)
    notes = Notes(service.storage)
    note = (
        None
        if why
        else notes.add(stream_id, given.step, given.text, given.author, bounds, author_hash)
    )
    if note is None:  # full, or filled by another request between the count and the insert
        raise Invalid(why or room_on(service, stream_id, given.step, bounds) or "no room")
    return note


def _check_move(
    service: Service, stream_id: str, note: StoredNote, given: NoteInput, bounds: NoteBounds
) -> None:
    """An edit that moves a note to another step needs room on that step (Invalid if not)."""
    if given.step == note.step:
        return
    _, on_step = Notes(service.storage).counts(stream_id, given.step)
    if on_step >= bounds.per_step:
        why = no_room(0, on_step, bounds)
        raise Invalid(f"step {given.step}: {why}")


def note_url(stream_id: str, note: StoredNote) -> str:
    """A note's own link: its step's page, scrolled to the note."""
    return Links(stream_id, DEFAULTS).plain_step(note.step, note.id)


def note_json(note: StoredNote) -> dict[str, Any]:
    """A note as the API answers it."""
    return {
        "id": note.id,
        "step": note.step,
        "author": note.author,
        "text": note.text,
        "created": note.created,
        "edited": note.edited or None,
        "url": note_url(note.stream_id, note),
    }


def notes_of(service: Service, stream_id: str) -> list[StoredNote]:
    """The stream's notes (NotFound when there is no such stream)."""
    service.info(stream_id)
    return Notes(service.storage).of(stream_id)


def note_of(service: Service, stream_id: str, note_id: str) -> StoredNote:
    """One note of the stream, or NotFound."""
    service.info(stream_id)
    if not note_id.isascii() or not note_id.isdigit() or len(note_id) > 18:
        raise NotFound(stream_id)
    note = Notes(service.storage).get(stream_id, int(note_id))
    if note is None:
        raise NotFound(stream_id)
    return note


async def small_form(request: Request) -> FormData:
    """A small urlencoded or multipart form (a title, a note, a choice), at most `FORM_LIMIT`
    bytes; Invalid when it is larger or does not parse."""
    try:
        return await read_form(request, FORM_LIMIT, FORM_LIMIT)
    except TooLarge as error:
        raise Invalid(str(error)) from error
    except BadInput as error:
        raise Invalid(str(error)) from error
