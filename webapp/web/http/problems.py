"""Problem responses: what went wrong, in words, as the API's JSON `{"detail": ...}` (or, for a
browser, as the error page); JSON written the way the CLI writes it (compact UTF-8, lone
surrogates escaped); the API's example trace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from webapp.core.jsoncheck import dumps
from webapp.web.appstate import templates_of
from webapp.web.http.htmx import wants_partial
from webapp.web.http.templating import render


class Problem(BaseModel):
    """What went wrong, in words."""

    detail: str


class CliJSONResponse(JSONResponse):
    """JSON as the CLI writes it: compact UTF-8, lone surrogates escaped."""

    def render(self, content: Any) -> bytes:
        """The content as `webapp.core.jsoncheck.dumps` writes it."""
        return dumps(content)


def json_response(content: Any, status: int = 200) -> Response:
    """`content` as JSON the way the CLI writes it."""
    return CliJSONResponse(content, status_code=status)


def problem(status: int, detail: object, headers: Mapping[str, str] | None = None) -> Response:
    """`{"detail": DETAIL}` (an error's words) with `status`, and `headers` (Retry-After, ...)."""
    response = json_response(Problem(detail=str(detail)).model_dump(), status)
    response.headers.update(headers or {})
    return response


HEADINGS = {
    400: "That link has a value this page does not understand",
    404: "Nothing here",
    405: "Not allowed",
    408: "That upload arrived too slowly",
    413: "That stream is too large",
    422: "That stream does not read",
    500: "Something broke on our side",
}


def error_response(request: Request, status: int, message: str, heading: str = "") -> Response:
    """JSON `{"detail": ...}` under /api/, else the error page (under `heading`, or the
    status's own)."""
    if request.url.path.startswith("/api/"):
        return json_response({"detail": message}, status)
    context = {
        "status": status,
        "heading": heading or HEADINGS.get(status, "Something went wrong"),
        "message": message,
    }
    response = render(templates_of(request), request, "error.html", context, status)
    if wants_partial(request) and request.method == "GET":
        # htmx 4 swaps error answers too; a whole error page inside a panel helps nobody,
        # so send the browser to the URL itself, which answers with the full error page.
        response.headers["HX-Reswap"] = "none"
        query = request.url.query
        response.headers["HX-Redirect"] = request.url.path + (f"?{query}" if query else "")
    return response


TRACE_EXAMPLE = {
    "schema": 1,
    "policy": "adr-0019",
    "path": "client",
    "server_tools": [],
    "choice": 0,
    "steps": [
        {
            "step": 0,
            "line": 1,
            "kind": "chunk",
            "fragments": [
                {
                    "position": 0,
                    "index": 0,
                    "id": "call_1",
                    "name": "get_weather",
                    "arguments": "{}",
                    "rule": "new",
                    "block": 0,
                    "reason": 'no block under index 0; name "get_weather": opens a new block',
                }
            ],
            "events": [{"type": "start"}, {"type": "toolcall_start", "contentIndex": 0}],
        }
    ],
    "blocks": [],
    "content": [],
    "anomalies": [],
    "summary": {},
    "input": {
        "format": "sse",
        "records": 4,
        "notes": [],
        "model": None,
        "tools": [],
        "others": [],
        "meta": {},
    },
}
