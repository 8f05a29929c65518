"""What a team does with stored streams: owner tokens, titles, notes, the library, retention.

A stream's delete token is given once, to whoever stored it; the store keeps only its SHA-256.
A browser that stored streams keeps their ids and tokens in one cookie (`OWNER_COOKIE`,
HttpOnly, SameSite=Lax, Secure when the server is reached over https), bounded to the last
`OWNED_AT_MOST`; that cookie is how the page knows to offer "Delete" and which streams "your
streams" are. Titles and notes are plain text,
checked here and escaped wherever they are shown.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from webapp.core.anomalies import severity_of
from webapp.core.jsvalue import truthy
from webapp.core.options import Options
from webapp.settings import Settings
from webapp.storage.team import Library, NoteBounds, Notes, StoredNote
from webapp.web.backend.ingest import MAX_TITLE
from webapp.web.backend.service import NotFound, Service, Unreadable
from webapp.web.links import Links
from webapp.web.query import DEFAULTS
from webapp.web.text import one_line, printable

log = logging.getLogger(__name__)

OWNER_COOKIE = "streamviz_own"
OWNED_AT_MOST = 40
"""Streams one browser's cookie remembers (about 60 bytes each: under the 4 KiB a cookie has)."""
MAX_NOTE = 4_000
MAX_AUTHOR = 80
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Invalid(ValueError):
    """A title, note or step that cannot be stored; the message says why (a 422)."""


class Forbidden(PermissionError):
    """No token, or not this stream's token (a 403; 401 when none was sent)."""


def new_token() -> str:
    """A delete token: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def token_hash(token: str) -> str:
    """What the store keeps of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_matches(token: str, stored: str | None) -> bool:
    """Whether `token` is the one whose hash is `stored` (never for a stream without one)."""
    return bool(stored) and hmac.compare_digest(token_hash(token), stored or "")


def bearer(request: Request) -> str | None:
    """The token of an `Authorization: Bearer ...` header, or None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


# The owner cookie: "id:token.id:token...", newest last.


def owned(request: Request) -> dict[str, str]:
    """The streams this browser stored: id -> delete token, oldest first."""
    found: dict[str, str] = {}
    for pair in request.cookies.get(OWNER_COOKIE, "").split("."):
        stream_id, _, token = pair.partition(":")
        if _ID.fullmatch(stream_id) and _ID.fullmatch(token):
            found[stream_id] = token
    return dict(list(found.items())[-OWNED_AT_MOST:])


def secure(request: Request) -> bool:
    """Whether cookies are Secure: the public URL is https, or this request came over TLS."""
    public: str = request.app.state.settings.public_url
    return public.lower().startswith("https://") or request.url.scheme == "https"


def _set_owned(request: Request, response: Response, streams: Mapping[str, str]) -> None:
    kept = list(streams.items())[-OWNED_AT_MOST:]
    value = ".".join(f"{stream_id}:{token}" for stream_id, token in kept)
    tls = secure(request)
    if not value:
        response.delete_cookie(OWNER_COOKIE, path="/", httponly=True, samesite="lax", secure=tls)
        return
    response.set_cookie(
        OWNER_COOKIE,
        value,
        max_age=400 * 24 * 3600,
        path="/",
        httponly=True,
        samesite="lax",
        secure=tls,
    )


def remember(request: Request, response: Response, stream_id: str, token: str) -> None:
    """Add a stream this browser stored to its cookie."""
    streams = owned(request)
    streams.pop(stream_id, None)
    streams[stream_id] = token
    _set_owned(request, response, streams)


def hand_over(request: Request, response: Response, old_id: str, new_id: str) -> None:
    """Move a token in the browser's cookie from one id to another (a minimise job's, to the
    stream it made); with no `new_id`, drop it."""
    streams = owned(request)
    token = streams.pop(old_id, None)
    if token is None:
        return
    if new_id:
        streams[new_id] = token
    _set_owned(request, response, streams)


def forget(request: Request, response: Response, stream_id: str) -> None:
    """Take a deleted stream out of the browser's cookie."""
    streams = owned(request)
    if streams.pop(stream_id, None) is not None:
        _set_owned(request, response, streams)


# Titles and notes.


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
    being stored takes `webapp.web.backend.ingest.clean_title`, which falls back and cuts)."""
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


def last_step(service: Service, stream_id: str) -> int:
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


def note_input(body: Mapping[str, Any], last: int, base: StoredNote | None = None) -> NoteInput:
    """Check a note's fields; with `base` (an edit), fields left out keep their values."""
    if base is not None:
        body = {"step": base.step, "text": base.text, "author": base.author, **body}
    return NoteInput(
        step=parse_step(body.get("step"), last),
        text=clean_note(body.get("text")),
        author=clean_line(body.get("author"), "author", MAX_AUTHOR, required=False),
    )


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
    service: Service, stream_id: str, given: NoteInput, bounds: NoteBounds
) -> StoredNote:
    """Store a note within the bounds; Invalid (a 422) in words when there is no room."""
    why = room_on(service, stream_id, given.step, bounds)
    note = (
        None
        if why
        else Notes(service.storage).add(stream_id, given.step, given.text, given.author, bounds)
    )
    if note is None:  # full, or filled by another request between the count and the insert
        raise Invalid(why or room_on(service, stream_id, given.step, bounds) or "no room")
    return note


def check_move(
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


# The library.


def stats(service: Service, stream_id: str) -> dict[str, Any]:
    """What the library shows of a stream: chunks, named calls, errors, warnings."""
    try:
        view = service.view(stream_id, Options())
    except Unreadable as error:
        return {"unreadable": str(error)[:200]}
    chunks = view.trace.chunk_count
    calls = sum(1 for block in view.trace.blocks if truthy(block.name))
    severities = [severity_of(anomaly.code) for anomaly in view.trace.anomalies]
    return {
        "chunks": chunks,
        "calls": calls,
        "errors": severities.count("error"),
        "warnings": len(severities) - severities.count("error"),
    }


def filled_stats(service: Service, stream_id: str) -> dict[str, Any]:
    """The stream's numbers, computed and kept for the next listing."""
    found = stats(service, stream_id)
    Library(service.storage).keep_stats(stream_id, found)
    return found


# Retention.

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


RETENTION_EVERY = 3600.0
"""Seconds between two sweeps of a server run with `--retention-days`."""


class Retention:
    """Removes the streams stored more than `days` days before the clock's now."""

    def __init__(
        self, service: Service, days: int, clock: Clock = _utcnow, every: float = RETENTION_EVERY
    ) -> None:
        self.service = service
        self.days = days
        self.clock = clock
        self.every = every

    async def start(self) -> asyncio.Task[None] | None:
        """Sweep once now, then every `every` seconds in a task (None when nothing expires)."""
        if self.days <= 0:
            return None
        await run_in_threadpool(self.sweep)
        return asyncio.create_task(self._periodically())

    async def _periodically(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await run_in_threadpool(self.sweep)
            except Exception:  # a store that is down now may be up at the next sweep
                log.exception("retention: the sweep failed")

    def sweep(self) -> list[str]:
        """Remove the streams past retention now; their ids."""
        if self.days <= 0:
            return []
        cutoff = (self.clock() - timedelta(days=self.days)).isoformat(timespec="seconds")
        removed = [
            stream_id
            for stream_id in self.service.storage.created_before(cutoff)
            if self.service.delete(stream_id)
        ]
        if removed:
            log.info("retention: removed %d streams older than %d days", len(removed), self.days)
        return removed
