"""Getting a stream in: secrets removed, the reader's verdict, a slot for the heavy part.

Its body is read under the bounds of `webapp.web.http.bodies` (its size, its time). A JSON body
goes into one buffer, emptied once parsed; a file is spooled by the form parser and read once.
Only then, with its body in, does an upload take one of the worker's `Settings.max_uploads` slots
(`UploadSlots`) for the heavy part: the parsing, redaction and reading, which run in a worker
thread, never on the event loop, and the storing. So slow senders hold no slot. What is
stored is the submitted bytes exactly, unless `webapp.core.redact` removed secrets or a
cassette's binary bodies were written out as text (`decoded_cassette`), in which case it is
that text in UTF-8.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from webapp.core.readers import FORMATS, decode, read, read_bytes
from webapp.core.readers.cassette import decoded_cassette
from webapp.core.readers.codings import OverLimit
from webapp.core.records import ReadResult
from webapp.core.redact import redact
from webapp.web.backend.intake.masking import REDACT_CHOICES, Masks, parse_redact
from webapp.web.http.bodies import BadField, BadInput, TooLarge
from webapp.web.http.text import one_line

INPUT_FORMATS = ("auto", *FORMATS)
FORM_OVERHEAD = 64 * 1024
"""Room for a form's other fields and multipart boundaries beyond the stream itself."""
MAX_TITLE = 200


class Busy(Exception):
    """Every upload slot of this worker is taken."""

    def __init__(self, slots: int) -> None:
        super().__init__(
            f"the server is checking {slots} other uploads right now; try again in a moment"
        )


class UploadSlots:
    """At most `size` uploads checked and stored at once, each once its body is in; one more
    is refused, not queued."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._free = threading.BoundedSemaphore(self.size)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one slot for the duration; raises Busy when none is free."""
        if not self._free.acquire(blocking=False):
            raise Busy(self.size)
        try:
            yield
        finally:
            self._free.release()


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stream ready to store: its bytes, what the reader found, what was removed."""

    raw: bytes
    result: ReadResult
    redactions: tuple[str, ...]


def parse_json_body(body: bytes | bytearray) -> dict[str, Any]:
    """The API's JSON body: an object with a string `text` and an optional string `title`."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise BadInput(f"the body is not JSON: {error}") from error
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise BadInput('send a JSON object with a string "text" (and optionally "title")')
    if "title" in value and value["title"] is not None and not isinstance(value["title"], str):
        raise BadField('"title" must be a string')
    for name, choices in (("format", INPUT_FORMATS), ("redact", REDACT_CHOICES)):
        if name in value and not isinstance(value[name], str):
            raise BadField(
                f'"{name}" must be one of {", ".join(choices)} (a string, not '
                f"{_json_kind(value[name])}); leave it out for the default"
            )
    return value


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    return "an array" if isinstance(value, list) else "a number"


def encode_text(text: str) -> bytes:
    """A pasted text as bytes (UTF-8; a lone surrogate from JSON is kept as its WTF-8 bytes)."""
    return text.encode("utf-8", "surrogatepass")


def clean_title(title: str | None, fallback: str) -> str:
    """A stream's title as stored: one line (`webapp.web.http.text.one_line`; PostgreSQL's text
    holds no NUL), `fallback` when empty, cut to `MAX_TITLE` characters."""
    return (one_line(title or "") or fallback)[:MAX_TITLE]


def prepare(raw: bytes, input_format: str, limit: int, masks: Masks | None = None) -> Prepared:
    """Check size and format, open a cassette's binary bodies, remove secrets (with `masks`,
    those in the content too), then read.

    Raises TooLarge over `limit` bytes, BadInput for a format no reader has, and ReaderError
    when no reader recognises the input, or when what it holds (a cassette's bodies inflated,
    its YAML aliases written out) passes `limit`.
    """
    if len(raw) > limit:
        raise TooLarge(limit)
    if input_format not in INPUT_FORMATS:
        raise BadField(f"format must be one of {', '.join(INPUT_FORMATS)}")
    text = decode(raw)
    with _held_to(limit):
        # Masking reads text: a body kept gzip-encoded is masked, and stored, as the text it
        # holds (a mask in its base64 would leave a body that no longer inflates).
        opened = decoded_cassette(text, limit) if input_format in ("auto", "cassette") else None
        if opened is not None:
            text = opened
        redaction = redact(text)
        removed = list(redaction.removed)
        if redaction.removed:
            text = redaction.text
        del redaction
        if masks is not None:
            text, masked = masks.apply(text)
            removed += masked
        if removed or opened is not None:
            raw = encode_text(text)
            return Prepared(raw, read(text, input_format, limit=limit), tuple(removed))
        del text  # the bytes' own text: a plain stream is read from the bytes, without it alive
        return Prepared(raw, read_bytes(raw, input_format, limit=limit), ())


@contextmanager
def _held_to(limit: int) -> Iterator[None]:
    """OverLimit (what an input holds passes `limit`) said with the flag that sets it."""
    try:
        yield
    except OverLimit as error:
        raise OverLimit(f"{error}; the limit is the server's --max-bytes", error.limit) from None


@dataclass(frozen=True, slots=True)
class JsonUpload:
    """What a JSON body asked to store."""

    prepared: Prepared
    title: str | None
    """None when it was given none (`webapp.web.backend.library.indexing` titles it from what it
    holds)."""
    input_format: str


def prepare_json(body: bytearray, limit: int) -> JsonUpload:
    """Parse the API's JSON body, then `prepare` its text; empties `body` once it is parsed.

    Run in a worker thread: parsing a body of tens of megabytes takes a while.
    """
    value = parse_json_body(body)
    body.clear()  # the one buffer of the upload goes as soon as its text is out
    raw = encode_text(value.pop("text"))
    title = clean_title(value.get("title"), "") or None
    fmt = value.get("format") or "auto"
    try:
        masks = parse_redact(value.get("redact"))
    except ValueError as error:
        raise BadField(str(error)) from error
    return JsonUpload(prepare(raw, fmt, limit, masks), title, fmt)
