"""The API of captured streams: their timing, what the proxy knows of them, the kept request."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.storage.capture import Captures
from webapp.web.appstate import service_of
from webapp.web.backend.capture.recorder import timing_of
from webapp.web.query import parse_har_entry
from webapp.web.routes.api import Problem

router = APIRouter()
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
    """The request body of a captured stream, kept only with `serve --keep-requests`."""
    service = service_of(request)
    info = await run_in_threadpool(service.info, stream_id)
    body = await run_in_threadpool(Captures(service.storage).request, info.id)
    if body is None:
        detail = "no request is kept for this stream: only captures of `serve --keep-requests`"
        return JSONResponse({"detail": detail}, 404)
    return Response(body, media_type="application/json")
