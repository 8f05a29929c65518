"""Error answers: a page for a browser, JSON under /api, and never a 500 for what a user sends."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute, Match, Mount

from webapp.core.words import count
from webapp.web.backend.memory.inflight import Busy
from webapp.web.backend.service import Gone, NotFound, Unreadable
from webapp.web.http.bodies import SlowBody, TooLarge
from webapp.web.http.problems import HEADINGS, error_response
from webapp.web.http.query import BadQuery, NoSuchExample

log = logging.getLogger(__name__)

RETRY_AFTER = "10"
"""Seconds a 503 for a busy worker asks the client to wait."""


def deleted_message(error: Gone) -> str:
    """What a link to a deleted stream answers: when, and by whom, it was deleted."""
    when = error.deleted.deleted.replace("T", " ").replace("+00:00", " UTC")
    why = f" {error.deleted.why}" if error.deleted.why else ""
    return (
        f"The stream this link opened was deleted{why} on {when}: its bytes, notes and "
        "everything made from it are gone, and no one can open it again. Ask whoever "
        "shared the link for the stream itself (or its fixture.zip)."
    )


METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(routes: list[BaseRoute], request: Request) -> list[str]:
    """Every method some route answers at this path (Starlette's 405 names only the first
    route's: `/streams` answered `Allow: GET` though it takes POST too). Each method is asked
    of the routes as a request of its own would be, so routers nested by `include_router`
    answer too; mounts (static files) are left out."""
    found = []
    for method in METHODS:
        probe = {**request.scope, "method": method}
        if any(
            not isinstance(route, Mount) and route.matches(probe)[0] is Match.FULL
            for route in routes
        ):
            found.append(method)
    return found


async def not_found(request: Request, error: NotFound) -> Response:
    if isinstance(error, Gone):
        return error_response(request, 404, deleted_message(error), "This stream was deleted")
    return error_response(
        request, 404, "No stream has this id. Links to streams stay valid as long as the "
        "server keeps its database; check that the whole link was copied.",
    )  # fmt: skip


async def no_example(request: Request, error: NoSuchExample) -> Response:
    message = "There is no built-in example by that name; the tour lists them all."
    return error_response(request, 404, message, "No such example")


async def bad_query(request: Request, error: BadQuery) -> Response:
    return error_response(request, 400, str(error))


async def busy(request: Request, error: Busy) -> Response:
    response = error_response(request, 503, str(error))
    response.headers["Retry-After"] = RETRY_AFTER
    return response


async def slow_body(request: Request, error: SlowBody) -> Response:
    response = error_response(request, 408, str(error))
    response.headers["Connection"] = "close"  # the rest of that body is not read
    return response


async def too_large(request: Request, error: TooLarge) -> Response:
    """A page's upload over `--max-bytes` (the API answers its own, in its words)."""
    message = (
        f"This server accepts streams of up to {count(error.limit, 'byte')}. Trim the stream, "
        "or start the server with a larger --max-bytes."
    )
    return error_response(request, 413, message)


async def unreadable(request: Request, error: Unreadable) -> Response:
    return error_response(request, 422, str(error))


async def http_error(request: Request, error: HTTPException) -> Response:
    message = (
        error.detail if isinstance(error.detail, str) else HEADINGS.get(error.status_code, "Error")
    )
    if error.status_code == 404:
        message = "There is no page at this address."
    response = error_response(request, error.status_code, message)
    for name, value in (error.headers or {}).items():
        response.headers[name] = value
    if error.status_code == 405 and (
        methods := allowed_methods(request.app.router.routes, request)
    ):
        response.headers["Allow"] = ", ".join(methods)
    return response


async def invalid(request: Request, error: RequestValidationError) -> Response:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ()))
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return error_response(request, 422, "; ".join(parts) or "invalid request")


async def gone(request: Request, error: ClientDisconnect) -> Response:
    # A client that stops an upload is not a server failure: one line, no traceback
    # (a handler for the class itself also keeps Starlette from re-raising it).
    log.warning("client went away during %s %s", request.method, request.url.path)
    return Response(status_code=400)


async def crash(request: Request, error: Exception) -> Response:
    log.exception("unhandled error on %s", request.url.path)
    return error_response(request, 500, "The server failed on this request; it is logged.")


_HANDLERS: tuple[tuple[type[Exception], Any], ...] = (
    (NotFound, not_found),
    (NoSuchExample, no_example),
    (BadQuery, bad_query),
    (Busy, busy),
    (SlowBody, slow_body),
    (TooLarge, too_large),
    (Unreadable, unreadable),
    (HTTPException, http_error),
    (RequestValidationError, invalid),
    (ClientDisconnect, gone),
    (Exception, crash),
)
"""Each exception class and the handler that answers it (the last catches what no other does)."""


def install(app: FastAPI) -> None:
    """Register the handlers on the app."""
    for kind, handler in _HANDLERS:
        app.add_exception_handler(kind, handler)
