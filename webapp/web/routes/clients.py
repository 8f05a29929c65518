"""The clients page: what each client library hands the application, computed in the background.

Running the lenses takes seconds (LiteLLM alone imports for several), so the first visit starts
the work in a thread and shows a "computing" panel that htmx polls, with a plain reload link for
a browser without JavaScript; later visits get the cached result. Results do not depend on the
policy or path, so they are kept per stream id, in a small in-process memo.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.jsoncheck import dumps
from webapp.core.records import Record
from webapp.lenses import Lens, Matrix, clients_view
from webapp.lenses.pins import BY_CLIENT, CLIENTS, INSTALL
from webapp.lenses.runner import TIMEOUT
from webapp.web.appstate import service_of, templates_of
from webapp.web.htmx import wants_partial
from webapp.web.links import Links
from webapp.web.query import DEFAULTS, Shown
from webapp.web.templating import render
from webapp.web.text import stream_title

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
"""Part of the stream pages' router (`webapp.web.routes.pages`): `/s/{id}/clients`, and an
example's at `/examples/{key}/clients`."""
api_router = APIRouter(tags=["streams"], include_in_schema=False)
"""Included by `webapp.web.routes.api` under its `/api` prefix; kept out of /openapi.json for now
(the API tests pin the documented routes; adding it there is a change of theirs to make)."""
KEPT = 64
"""Streams whose client results are kept in memory."""


class ClientJobs:
    """Each stream's matrix, computed once in a thread of its own and kept (LRU)."""

    def __init__(
        self, lenses: Sequence[Lens] | None = None, *, timeout: float = TIMEOUT, kept: int = KEPT
    ) -> None:
        self.lenses = lenses
        self.timeout = timeout
        self.kept = kept
        self._done: OrderedDict[str, Matrix] = OrderedDict()
        self._running: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, stream_id: str) -> Matrix | None:
        """The finished matrix, or None."""
        with self._lock:
            matrix = self._done.get(stream_id)
            if matrix is not None:
                self._done.move_to_end(stream_id)
            return matrix

    def start(self, stream_id: str, records: Callable[[], Sequence[Record]]) -> Matrix | None:
        """The matrix if it is done; otherwise start computing it (once) and return None."""
        with self._lock:
            if stream_id in self._done:
                self._done.move_to_end(stream_id)
                return self._done[stream_id]
            if stream_id in self._running:
                return None
            finished = self._running[stream_id] = threading.Event()
        thread = threading.Thread(
            target=self._compute,
            args=(stream_id, records, finished),
            name=f"lenses-{stream_id[:8]}",
            daemon=True,
        )
        thread.start()
        return None

    def wait(self, stream_id: str, timeout: float) -> Matrix | None:
        """Wait for a started computation (tests and `?wait=1`); None if it is not done."""
        with self._lock:
            finished = self._running.get(stream_id)
        if finished is not None:
            finished.wait(timeout)
        return self.get(stream_id)

    def _compute(
        self, stream_id: str, records: Callable[[], Sequence[Record]], finished: threading.Event
    ) -> None:
        try:
            matrix = clients_view(records(), self.lenses, timeout=self.timeout)
        except Exception:  # the page shows "computing" again and the next visit retries
            log.exception("running the client lenses on stream %s failed", stream_id)
        else:
            with self._lock:
                self._done[stream_id] = matrix
                while len(self._done) > self.kept:
                    self._done.popitem(last=False)
        finally:
            with self._lock:
                self._running.pop(stream_id, None)
            finished.set()


def jobs(request: Request) -> ClientJobs:
    """The app's jobs (made on first use; a test may set `app.state.clients` first)."""
    state = request.app.state
    with _MAKING:
        found: ClientJobs | None = getattr(state, "clients", None)
        if found is None:
            found = state.clients = ClientJobs()
        return found


_MAKING = threading.Lock()


def _start(request: Request, stream_id: str) -> Matrix | None:
    service = service_of(request)
    reading = service.reading(stream_id)  # NotFound / Unreadable become the usual error pages
    matrix = jobs(request).start(stream_id, lambda: reading.result.records)
    if matrix is None and request.query_params.get("wait") in ("1", "true"):
        matrix = jobs(request).wait(stream_id, jobs(request).timeout * 2)
    return matrix


def page_context(stream_id: str, matrix: Matrix | None) -> dict[str, Any]:
    """What the template needs: the matrix (or None while computing) and the URLs."""
    links = Links(stream_id, DEFAULTS)
    return {
        "matrix": matrix,
        "stream_id": stream_id,
        "page_url": links.clients,
        "poll_url": links.clients_matrix,
        "json_url": links.clients_json,
        "links": links,
        "pins": BY_CLIENT,
        "clients": CLIENTS,
        "install": INSTALL,
    }


@router.get("/clients")
async def clients_page(request: Request, shown: Shown) -> Response:
    """Every client's view of the stream, or a "computing" panel that polls for it."""
    stream_id = shown.stream_id
    matrix = await run_in_threadpool(_start, request, stream_id)
    service = service_of(request)
    reading = service.reading(stream_id)
    context = page_context(stream_id, matrix)
    context["title"] = stream_title(reading.info)
    return render(templates_of(request), request, "clients.html", context)


@router.get("/clients/matrix")
async def clients_matrix(request: Request, shown: Shown) -> Response:
    """The matrix panel (htmx polls it while computing); a browser is sent to the page."""
    matrix = await run_in_threadpool(_start, request, shown.stream_id)
    if not wants_partial(request):
        return RedirectResponse(Links(shown.stream_id, DEFAULTS).clients, status_code=303)
    context = page_context(shown.stream_id, matrix)
    return render(templates_of(request), request, "_clients_matrix.html", context)


@api_router.get("/streams/{stream_id}/clients", summary="Every client library's view")
async def clients_json(request: Request, stream_id: str, wait: bool = False) -> Response:
    """`{"clients", "policies", "rows", "verdict"}` once computed (200); 202 while computing.

    `wait=true` waits for the result instead (up to twice the lens timeout). Written as the
    rest of the API writes JSON (`webapp.core.jsoncheck.dumps`): a call id holding a lone surrogate
    comes out escaped, not as a UnicodeEncodeError.
    """
    matrix = await run_in_threadpool(_start, request, stream_id)
    if matrix is None:
        return Response(dumps({"status": "computing"}), 202, media_type="application/json")
    body = await run_in_threadpool(dumps, matrix.to_json())
    return Response(body, media_type="application/json")
