"""Request bodies read under bounds: their size, their time, their forms and JSON objects.

A body is never read whole before its size is known to fit: Content-Length is checked first,
then the bytes are counted as they arrive (a chunked body is refused as soon as it passes the
limit), and the form parser reads from that counting stream. A body must arrive whole within
`Settings.body_timeout` seconds (a trickling one gets `SlowBody`, a 408). A JSON object sent to
the team's or the jobs' API is read whole under `MAX_OBJECT` (`json_object`). A stream sent as
JSON is described to the API's schema by `json_body`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.datastructures import FormData, Headers, UploadFile
from starlette.formparsers import FormParser, MultiPartException, MultiPartParser
from starlette.requests import Request

from webapp.core import words
from webapp.settings import Settings


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


class BadInput(ValueError):
    """The request is malformed (not the stream: the envelope around it)."""


class BadField(BadInput):
    """A field of the request has a value the API does not take (a 422, where a request with
    no stream in it at all is a 400)."""


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


MAX_OBJECT = 64 * 1024
"""A JSON object of the team's or the jobs' API: a title, a note or a job's options fit in far
less."""


async def json_object(request: Request, limit: int = MAX_OBJECT) -> dict[str, Any]:
    """The request's JSON object (BadInput when it is not one)."""
    try:
        raw = await read_body(request, limit)
    except TooLarge as error:
        raise BadInput(str(error)) from error
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise BadInput(f"the body is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise BadInput("send a JSON object")
    return value


EXAMPLE_TEXT = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"get_weather","arguments":"{}"}}]}}]}\n\ndata: [DONE]\n'
)
"""The stream of the request bodies' examples: one call in one chunk."""


def json_body(text: str, properties: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
    """A request body's JSON content for the API's schema: an object of the stream (`text`,
    required, described so) and `properties`; its example sends `EXAMPLE_TEXT`."""
    return {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string", "description": text}, **properties},
            },
            "example": {"text": EXAMPLE_TEXT, **example},
        }
    }
