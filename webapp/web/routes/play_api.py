"""`POST /api/play`: assemble a stream sent as JSON, store nothing, answer the trace.

The playground page runs its form through `POST /play/run` (an htmx partial, in
`webapp.web.routes.teach`); this is the JSON beside it, as every `/api/` route is: the
schema-1 trace document `streamviz trace --format json` prints.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from webapp.core.assembler import assemble
from webapp.core.records import ReaderError
from webapp.core.tracejson import trace_document_parts
from webapp.web.appstate import settings_of, uploads_of
from webapp.web.backend.intake.ingest import (
    FORM_OVERHEAD,
    INPUT_FORMATS,
    Busy,
    encode_text,
    parse_json_body,
    prepare,
)
from webapp.web.http.bodies import BadField, BadInput, TooLarge, json_body, read_body
from webapp.web.http.problems import TRACE_EXAMPLE, CliJSONResponse, Problem, problem
from webapp.web.http.query import BadQuery, parse_options

router = APIRouter(prefix="/api", tags=["playground"], default_response_class=CliJSONResponse)

OPTION_FIELDS = ("policy", "path", "server_tools", "choice")
"""The body's assembly options, as the trace route's query names them."""

_BODY: dict[str, Any] = {
    "required": True,
    "content": json_body(
        "The stream, in any input format.",
        {
            "policy": {"type": "string", "enum": ["adr-0019", "exact-key"]},
            "path": {"type": "string", "enum": ["client", "server-tools"]},
            "server_tools": {"type": "string"},
            "choice": {"type": "string"},
            "format": {"type": "string", "enum": list(INPUT_FORMATS)},
        },
        {"policy": "adr-0019", "path": "client"},
    ),
}


def _options(value: dict[str, Any]) -> dict[str, str]:
    """The body's options as the query parser takes them; BadField for a non-string."""
    found: dict[str, str] = {}
    for name in OPTION_FIELDS:
        given = value.get(name)
        if given is None:
            continue
        if isinstance(given, int) and not isinstance(given, bool) and name == "choice":
            given = str(given)
        if not isinstance(given, str):
            raise BadField(f'"{name}" must be a string; leave it out for the default')
        found[name] = given
    return found


def _trace(body: bytearray, limit: int) -> Response:
    """Read, assemble and write the trace document (in a worker thread)."""
    value = parse_json_body(body)
    body.clear()
    options = parse_options(_options(value))
    raw = encode_text(value["text"])
    prepared = prepare(raw, value.get("format") or "auto", limit)
    result = prepared.result
    trace = assemble(result.records, options)
    parts = trace_document_parts(trace, result, len(result.records))
    return Response(b"".join(parts), media_type="application/json")


@router.post(
    "/play",
    summary="Assemble a stream without storing it",
    description='`{"text": ..., "policy": "adr-0019" | "exact-key", "path": "client" | '
    '"server-tools"}` (and optionally `server_tools`, `choice`, `format`): the stream is read, '
    "assembled and answered as the schema-1 trace (the same JSON as `streamviz trace --format "
    "json` and `/api/streams/{id}/trace`); nothing is stored. Credentials in headers, HAR "
    "files and curl commands are removed first, as for a stored stream. 413 over the server's "
    "--max-bytes, 422 when no reader recognises the text or a field is not valid, 400 when the "
    "body is not such an object, 503 when the server is checking too many uploads at once.",
    responses={
        200: {"content": {"application/json": {"example": TRACE_EXAMPLE}}},
        400: {"model": Problem, "description": "The body is not a JSON object with text."},
        413: {"model": Problem, "description": "Over the size limit."},
        422: {"model": Problem, "description": "No reader recognises it, or a bad field."},
        503: {"model": Problem, "description": "Too many uploads at once; retry."},
    },
    openapi_extra={"requestBody": _BODY},
)
async def play(request: Request) -> Response:
    """The trace of the stream in the body, under the options it names."""
    limit: int = settings_of(request).max_bytes
    uploads = uploads_of(request)
    try:
        body = await read_body(request, 2 * limit + FORM_OVERHEAD, limit)
        with uploads.slot():
            return await run_in_threadpool(_trace, body, limit)
    except Busy as error:
        return problem(503, error, {"Retry-After": "2"})
    except TooLarge as error:
        return problem(413, error)
    except (BadField, BadQuery, ReaderError) as error:
        return problem(422, error)
    except BadInput as error:
        return problem(400, error)
