"""The API of captured streams: their timing, what the proxy knows of them, the kept request."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.redact.request import mask_request
from webapp.storage.capture import Captures
from webapp.web.appstate import service_of
from webapp.web.backend.capture.timing import timing_of
from webapp.web.http.problems import Problem
from webapp.web.http.query import parse_har_entry

router = APIRouter()
MASKED_HEADER = "streamviz-masked"
"""The header of a kept request's answer that lists what was masked in it (a JSON list)."""
_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "No stream has this id (or it kept no request)."},
    400: {"model": Problem, "description": "A query value is not valid."},
    422: {"model": Problem, "description": "The stream does not read."},
}


@router.get("/api/streams/{stream_id}/timing", tags=["streams"], responses=_ERRORS)
async def timing(request: Request, stream_id: str) -> JSONResponse:
    """When each step arrived: `{"timing": {"unit": "ms", "arrivals": [...one per step or
    null...], "first_byte", "end", "source"} | null, "live", "capture"}`."""
    har_entry = parse_har_entry(request.query_params.get("har_entry"))
    found: dict[str, Any] = await run_in_threadpool(
        timing_of, service_of(request), stream_id, har_entry
    )
    return JSONResponse(found)


@router.get(
    "/api/streams/{stream_id}/request",
    tags=["streams"],
    responses={404: _ERRORS[404]},
    response_class=Response,
)
async def kept_request(request: Request, stream_id: str) -> Response:
    """The request body of a captured stream, kept only with `serve --keep-requests`, its keys
    masked as an upload's are; the `streamviz-masked` header lists what was masked (JSON)."""
    service = service_of(request)
    info = await run_in_threadpool(service.info, stream_id)
    found = await run_in_threadpool(_kept, Captures(service.storage), info.id)
    if found is None:
        detail = "no request is kept for this stream: only captures of `serve --keep-requests`"
        return JSONResponse({"detail": detail}, 404)
    body, masked = found
    said = json.dumps(list(masked))  # ASCII: no byte of a name can break the header
    return Response(body, media_type="application/json", headers={MASKED_HEADER: said})


def _kept(captures: Captures, stream_id: str) -> tuple[bytes, tuple[str, ...]] | None:
    """The kept request body and what was masked in it; one kept before keys were masked is
    masked now."""
    body = captures.request(stream_id)
    capture = captures.get(stream_id)
    if body is None or capture is None:
        return None
    if capture.facts.request_masked is None:
        return mask_request(body)
    return body, capture.facts.request_masked
