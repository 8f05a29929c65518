"""The JSON API beside the pages: store a stream, get its schema-1 trace, get its bytes."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, get_type_hints

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field, create_model
from starlette.concurrency import run_in_threadpool

from webapp.core.options import Options
from webapp.core.readers.timing import with_timing
from webapp.core.records import ReaderError
from webapp.core.tracejson import trace_document_parts
from webapp.storage import StreamInfo
from webapp.storage.hops import HopLinks
from webapp.web.appstate import service_of, settings_of, uploads_of
from webapp.web.backend.capture.timing import view_timing
from webapp.web.backend.capture.twin import twin_of
from webapp.web.backend.example_source import example_of
from webapp.web.backend.intake.ingest import (
    FORM_OVERHEAD,
    INPUT_FORMATS,
    Busy,
    Prepared,
    clean_title,
    prepare,
    prepare_json,
)
from webapp.web.backend.intake.masking import parse_redact
from webapp.web.backend.library import indexing
from webapp.web.backend.team.owners import new_token, token_hash
from webapp.web.http.bodies import (
    BadField,
    BadInput,
    TooLarge,
    form_file,
    form_text,
    json_body,
    read_body,
    read_form,
)
from webapp.web.http.links import Links
from webapp.web.http.problems import TRACE_EXAMPLE, CliJSONResponse, Problem, problem
from webapp.web.http.query import DEFAULTS, parse_har_entry, parse_options


class StreamCreated(BaseModel):
    """Where the stored stream lives."""

    id: str = Field(description="The stream's unguessable id.", examples=["h3Vq0h9yJ1x2..."])
    url: str = Field(
        description="Its timeline page.", examples=[Links("h3Vq0h9yJ1x2...", DEFAULTS).base]
    )
    format: str = Field(description="The input format the reader detected.", examples=["sse"])
    redacted: list[str] = Field(description="Secrets removed before storing, in words.")
    delete_token: str = Field(
        description="Deletes the stream (`DELETE /api/streams/{id}` with "
        "`Authorization: Bearer TOKEN`). Given once: the server keeps only its hash."
    )


_API_NAMES = {"redactions": "redacted"}
"""StreamInfo fields the API answers under another name."""
_INFO_FIELDS: dict[str, Any] = {
    _API_NAMES.get(name, name): (hint, Field(validation_alias=name))
    for name, hint in get_type_hints(StreamInfo).items()
}


class TwinOut(BaseModel):
    """A captured stream's non-stream twin (`serve --twin`)."""

    id: str = Field(description="The twin's own stream id (its page, `/diff?a=ID&b=TWIN`).")
    same: bool | None = Field(
        description="Whether the twin holds the calls the stream means (by name and arguments "
        "as JSON, not by id); null when the twin failed."
    )
    status: int = Field(description="The twin's HTTP status (0: no answer came).")
    where: str | None = Field(description="Where it first differs: call 1, `arguments.city`.")
    error: str | None = Field(description="How the twin failed, in words (never retried).")


StreamInfoOut = create_model(
    "StreamInfoOut", __doc__="A stored stream's record, without its bytes.", **_INFO_FIELDS
)
"""StreamInfo's fields, read from the dataclass itself so that the two cannot drift apart."""


class HopsOut(BaseModel):
    """A captured stream's gateway hops (`webapp.storage.hops`); empty lists for a stream
    that was not captured or has no hop."""

    inner: list[str] = Field(
        description="The capture of what this stream's upstream, a gateway, received from its "
        "own upstream (the provider): at most one id."
    )
    outer: list[str] = Field(
        description="The captures whose inner hop this stream is (what the gateway sent on)."
    )


StreamRecordOut = create_model(
    "StreamRecordOut",
    __base__=StreamInfoOut,
    __doc__="A stored stream's record, without its bytes, its gateway hops and its non-stream "
    "twin.",
    hops=(HopsOut, Field(description="The other captures of the same exchange.")),
    twin=(
        TwinOut | None,
        Field(default=None, description="The non-stream twin (`serve --twin`); null without one."),
    ),
)


_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No stream has this id."},
    400: {"model": Problem, "description": "A query value is not valid."},
    422: {"model": Problem, "description": "The stream does not read or assemble."},
}

_CREATE_BODY = {
    "required": True,
    "content": {
        **json_body(
            "The stream, as pasted.",
            {
                "title": {"type": "string", "description": "A title for the page."},
                "format": {"type": "string", "enum": list(INPUT_FORMATS), "default": "auto"},
                "redact": {
                    "type": "string",
                    "enum": ["auto", "none"],
                    "default": "auto",
                    "description": "auto: mask API keys, tokens, JWTs, long secrets and "
                    "e-mail addresses in the content (same length and character classes); "
                    "none: store the content as is (credential headers are removed either "
                    "way).",
                },
            },
            {"title": "weather call"},
        ),
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "title": {"type": "string"},
                    "format": {"type": "string", "enum": list(INPUT_FORMATS)},
                },
            }
        },
    },
}


router = APIRouter(prefix="/api", tags=["streams"], default_response_class=CliJSONResponse)


@router.post(
    "/streams",
    status_code=201,
    summary="Store a stream",
    description='Send the stream as JSON `{"text": ..., "title": ...}` or as a multipart '
    "`file`. Credentials in headers, HAR files and curl commands are removed, and secrets in "
    "the content masked (`redact`: auto, the default, or none), before storing. Answers 201 with "
    "the new id and the timeline URL; 413 over the size limit; 422 when no reader recognises "
    "the input or a field (`title`, `format`, `redact`) has a value the API does not take; 400 "
    "when the request holds no stream at all; 408 when its body does not arrive within the "
    "server's --body-timeout; 503 when the server is checking too many uploads at once.",
    response_model=StreamCreated,
    responses={
        413: {"model": Problem, "description": "Over the size limit."},
        503: {"model": Problem, "description": "Too many uploads at once; retry."},
        408: {"model": Problem, "description": "The body did not arrive in time."},
        422: {
            "model": Problem,
            "description": "No reader recognises the input, or a field's value is not valid.",
        },
        400: {"model": Problem, "description": "The request holds no stream."},
    },
    openapi_extra={"requestBody": _CREATE_BODY},
)
async def create_stream(request: Request) -> StreamCreated | Response:
    """Store a stream sent as JSON or as a multipart file."""
    try:
        token = new_token()
        info = await _create(request, token_hash(token))
    except Busy as error:
        return problem(503, error, {"Retry-After": "2"})
    except TooLarge as error:
        return problem(413, error)
    except BadField as error:
        return problem(422, error)
    except BadInput as error:
        return problem(400, error)
    except ReaderError as error:
        return problem(422, error)
    return StreamCreated(
        id=info.id,
        url=Links(info.id, Options()).base,
        format=info.format,
        redacted=list(info.redactions),
        delete_token=token,
    )


async def _create(request: Request, delete_hash: str) -> StreamInfo:
    """Receive one upload, then, holding an upload slot, check and store it; everything but
    the receiving runs in a thread."""
    settings = settings_of(request)
    limit: int = settings.max_bytes
    uploads = uploads_of(request)
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        # JSON escapes can double the text's size; the text itself is checked in `prepare`.
        body = await read_body(request, 2 * limit + FORM_OVERHEAD, limit)
        with uploads.slot():
            upload = await run_in_threadpool(prepare_json, body, limit)
            prepared, title, fmt = upload.prepared, upload.title, upload.input_format
            return await _store(request, prepared, title, "", fmt, delete_hash)
    else:
        form = await read_form(request, limit + FORM_OVERHEAD, limit)
        try:
            sent = await form_file(form, "file", limit)
            if sent is None:
                raise BadInput("send a multipart field named 'file', or JSON with 'text'")
            raw, filename = sent
            title = clean_title(form_text(form, "title"), "") or None
            file_name = clean_title(filename, "")
            fmt = form_text(form, "format") or "auto"
            try:
                masks = parse_redact(form_text(form, "redact") or None)
            except ValueError as error:
                raise BadField(str(error)) from error
        finally:
            await form.close()
        with uploads.slot():
            prepared = await run_in_threadpool(prepare, raw, fmt, limit, masks)
            del raw
            return await _store(request, prepared, title, file_name, fmt, delete_hash)


async def _store(
    request: Request,
    prepared: Prepared,
    title: str | None,
    file_name: str,
    fmt: str,
    delete_hash: str,
) -> StreamInfo:
    """Store and index it (`title` None: titled from what it holds, `file_name` and all)."""
    service = service_of(request)
    return await run_in_threadpool(
        indexing.store,
        service,
        prepared,
        title=title,
        fallback="API stream",
        file_name=file_name,
        input_format=fmt,
        delete_hash=delete_hash,
    )


@router.get(
    "/streams/{stream_id}",
    summary="A stored stream's record",
    response_model=StreamRecordOut,
    responses={404: _ERRORS[404]},
)
def stream_info(request: Request, stream_id: str) -> dict[str, Any]:
    """Title, size, formats and redactions of a stored stream, its gateway hops
    (`"hops": {"inner": [IDS], "outer": [IDS]}`) and its non-stream twin."""
    service = service_of(request)
    info = service.info(stream_id)
    hops = HopLinks(service.storage).of(info.id)
    twin = twin_of(service, stream_id) if example_of(stream_id) is None else None
    return {
        **asdict(info),
        "hops": hops.to_json(),
        "twin": None if twin is None else twin.to_json(),
    }


@router.get(
    "/streams/{stream_id}/trace",
    summary="The schema-1 trace",
    description="The same JSON as `streamviz trace --format json` (`Trace.to_json()`), plus "
    "an `input` key with what the reader found (format, notes, and for HAR the model, tools "
    "and other entries), and a `timing` key when the input carries timing (a captured stream, "
    'a cassette, a HAR entry\'s `timings`): `{"unit": "ms", "arrivals": [one per step '
    'or null], "first_byte", "end", "source"}`. Query: `policy` (adr-0019 | exact-key), '
    "`path` (client | server-tools), `server_tools` (comma-separated names or `prefix*`), "
    "`choice` (0...), `har_entry` (a HAR file's entry to read, 1-based; default: its first "
    "event stream).",
    responses={
        200: {"content": {"application/json": {"example": TRACE_EXAMPLE}}},
        **_ERRORS,
    },
)
def stream_trace(request: Request, stream_id: str) -> Response:
    """Assemble the stored stream under the given options and return the trace."""
    options = parse_options(request.query_params)
    har_entry = parse_har_entry(request.query_params.get("har_entry"))
    service = service_of(request)
    view = service.view(stream_id, options, har_entry)
    source = view.source
    timing = view_timing(service, view, settings_of(request).stall_ms)
    parts = trace_document_parts(view.trace, source.found, source.records)
    body = b"".join(with_timing(parts, None if timing is None else timing.document()))
    return Response(body, media_type="application/json")


@router.get(
    "/streams/{stream_id}/raw",
    summary="The stored bytes",
    description="Exactly the bytes that were stored (after secrets were removed, if any).",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "The stream's bytes."},
        404: _ERRORS[404],
    },
)
def stream_raw(request: Request, stream_id: str) -> Response:
    """The stored bytes, byte for byte, as text/plain."""
    raw = service_of(request).raw(stream_id)
    return Response(raw, media_type="text/plain; charset=utf-8")
