"""Getting a stream in: bounded request bodies, secrets removed, the reader's verdict.

A body is never read whole before its size is known to fit: Content-Length is checked first,
then the bytes are counted as they arrive (a chunked body is refused as soon as it passes the
limit), and the form parser reads from that counting stream. A body must arrive whole within
`Settings.body_timeout` seconds (a trickling one gets `SlowBody`, a 408). A JSON body goes into
one buffer, emptied once parsed; a file is spooled by the form parser and read once. Only then,
with its body in, does an upload take one of the worker's `Settings.max_uploads` slots
(`UploadSlots`) for the heavy part: the parsing, redaction and reading, which run in a worker
thread, never on the event loop, and the storing. So slow senders hold no slot. What is
stored is the submitted bytes exactly, unless `webapp.core.redact` removed secrets or a
cassette's binary bodies were written out as text (`decoded_cassette`), in which case it is
that text in UTF-8.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import FormParser, MultiPartException, MultiPartParser
from starlette.requests import Request

from webapp.core import words
from webapp.core.readers import FORMATS, decode, read, read_bytes
from webapp.core.readers.cassette import decoded_cassette
from webapp.core.readers.codings import OverLimit
from webapp.core.records import ReadResult
from webapp.core.redact import redact
from webapp.settings import Settings
from webapp.web.backend.masking import REDACT_CHOICES, Masks, parse_redact
from webapp.web.text import one_line

INPUT_FORMATS = ("auto", *FORMATS)
FORM_OVERHEAD = 64 * 1024
"""Room for a form's other fields and multipart boundaries beyond the stream itself."""
MAX_TITLE = 200


class TooLarge(Exception):
    """The input is over the size limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the input is larger than the limit of {words.count(limit, 'byte')}")
        self.limit = limit


class SlowBody(Exception):
    """The request's body did not arrive whole in time (a 408)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the request's body did not arrive within {seconds:g} seconds (the server's "
            "--body-timeout); send it again over a faster link, or start the server with a "
            "larger --body-timeout"
        )
        self.seconds = seconds


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


class BadInput(ValueError):
    """The request is malformed (not the stream: the envelope around it)."""


class BadField(BadInput):
    """A field of the request has a value the API does not take (a 422, where a request with
    no stream in it at all is a 400)."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """A stream ready to store: its bytes, what the reader found, what was removed."""

    raw: bytes
    result: ReadResult
    redactions: tuple[str, ...]


def check_length(request: Request, limit: int, quoted: int | None = None) -> None:
    """Refuse at once a body whose declared length is over `limit` (the 413 quotes `quoted`)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(limit if quoted is None else quoted)


def body_timeout(request: Request) -> float:
    """The seconds a body of this app may take to arrive (`Settings.body_timeout`)."""
    settings: Settings = request.app.state.settings
    return settings.body_timeout


@asynccontextmanager
async def _in_time(request: Request) -> AsyncIterator[None]:
    """Raise SlowBody when what runs inside (reading the body) passes the body timeout."""
    seconds = body_timeout(request)
    try:
        async with asyncio.timeout(seconds):
            yield
    except TimeoutError:
        raise SlowBody(seconds) from None


async def _counted(request: Request, limit: int, quoted: int) -> AsyncGenerator[bytes, None]:
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise TooLarge(quoted)
        yield chunk


async def read_body(request: Request, limit: int, quoted: int | None = None) -> bytearray:
    """The whole body in one buffer, refused as soon as it passes `limit` bytes.

    `quoted` is the limit a refusal names (the configured one; `limit` may leave room for
    JSON escapes), `limit` itself by default.
    """
    said = limit if quoted is None else quoted
    check_length(request, limit, said)
    body = bytearray()
    async with _in_time(request):
        async for chunk in _counted(request, limit, said):
            body += chunk
    return body


async def read_form(request: Request, limit: int, stream_limit: int) -> FormData:
    """A multipart or urlencoded form, counted while read; no field may pass `stream_limit`.

    Every refusal names `stream_limit`, the limit the user configured, not the room left
    for the form's envelope nor the form parser's own.
    """
    check_length(request, limit, stream_limit)
    content_type = request.headers.get("content-type", "")
    stream = _counted(request, limit, stream_limit)
    try:
        if content_type.startswith("multipart/form-data"):
            parser = MultiPartParser(
                request.headers, stream, max_files=4, max_fields=40, max_part_size=stream_limit
            )
            async with _in_time(request):
                return await parser.parse()
        if content_type.startswith("application/x-www-form-urlencoded"):
            # The body's own bound holds a pasted field (`prepare` checks the text itself).
            form = FormParser(request.headers, stream, max_part_size=limit)
            async with _in_time(request):
                return await form.parse()
    except MultiPartException as error:
        if "maximum size" in str(error):
            raise TooLarge(stream_limit) from error
        raise BadInput(str(error)) from error
    raise BadInput("send the stream as a form (multipart/form-data) or as JSON")


def parse_form(headers: Headers, body: bytes, max_fields: int, max_part_size: int) -> FormData:
    """A form whose body was read already (`read_body`), parsed by Starlette's parsers as
    `Request.form` would (no files); meant for a worker thread, where it runs in a loop of its
    own, so that parsing tens of megabytes never holds the server's event loop.

    Raises BadInput when the form has more fields, or a longer one, than allowed.
    """

    async def chunks() -> AsyncGenerator[bytes, None]:
        yield body

    async def parse() -> FormData:
        kind = headers.get("content-type", "")
        if kind.startswith("multipart/form-data"):
            parser = MultiPartParser(
                headers, chunks(), max_files=0, max_fields=max_fields, max_part_size=max_part_size
            )
            return await parser.parse()
        if kind.startswith("application/x-www-form-urlencoded"):
            form = FormParser(headers, chunks(), max_fields=max_fields, max_part_size=max_part_size)
            return await form.parse()
        return FormData()

    try:
        return asyncio.run(parse())
    except MultiPartException as error:
        raise BadInput(str(error)) from error


def form_text(form: FormData, name: str) -> str:
    """A text field of the form ("" when absent or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


async def form_file(form: FormData, name: str, limit: int) -> tuple[bytes, str] | None:
    """The bytes and file name of an uploaded file, or None when no file was chosen."""
    value = form.get(name)
    if not isinstance(value, UploadFile) or not value.filename:
        return None
    data = await value.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(limit)
    return data, value.filename


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
    """A stream's title as stored: one line (`webapp.web.text.one_line`; PostgreSQL's text
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
