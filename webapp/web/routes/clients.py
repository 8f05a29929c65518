"""The clients page: every client library graded on the stream, computed in the background.

Running the lenses takes seconds (LiteLLM alone imports for several), so the first visit starts
the work in a thread and shows a "computing" panel that htmx polls, with a plain reload link for
a browser without JavaScript; later visits get the cached result. The result is the verdict
(`webapp.triage.verdict.clients_verdict`: the lenses' calls lined up, each column graded against
what the stream means, where to file), the same one `streamviz clients` computes. It does not
depend on the policy or path, but on the HAR entry (each entry is a stream of its own), so it is
kept per (stream id, HAR entry), in a small in-process memo.
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
from webapp.core.records import ReadResult, Record
from webapp.core.tracejson import input_json
from webapp.lenses import Lens
from webapp.lenses.pins import BY_CLIENT, CLIENTS, INSTALL
from webapp.lenses.runner import TIMEOUT
from webapp.triage.verdict import Verdict, clients_verdict
from webapp.web.appstate import service_of, templates_of
from webapp.web.htmx import wants_partial
from webapp.web.links import Links
from webapp.web.query import DEFAULTS, Shown, parse_har_entry
from webapp.web.templating import render
from webapp.web.text import stream_title
from webapp.web.views.clients import clients_view

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
"""Part of the stream pages' router (`webapp.web.routes.pages`): `/s/{id}/clients`, and an
example's at `/examples/{key}/clients`."""
api_router = APIRouter(tags=["streams"], include_in_schema=False)
"""Included by `webapp.web.routes.api` under its `/api` prefix; kept out of /openapi.json for now
(the API tests pin the documented routes; adding it there is a change of theirs to make)."""
KEPT = 64
"""Streams (or HAR entries) whose client verdicts are kept in memory."""
Key = tuple[str, int | None]
"""A stream id and its HAR entry (None: the reader's default)."""


class ClientJobs:
    """Each stream's (and HAR entry's) verdict, computed once in a thread of its own and kept
    (LRU)."""

    def __init__(
        self, lenses: Sequence[Lens] | None = None, *, timeout: float = TIMEOUT, kept: int = KEPT
    ) -> None:
        self.lenses = lenses
        self.timeout = timeout
        self.kept = kept
        self._done: OrderedDict[Key, Verdict] = OrderedDict()
        self._running: dict[Key, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, stream_id: str, har_entry: int | None = None) -> Verdict | None:
        """The finished verdict, or None."""
        key = (stream_id, har_entry)
        with self._lock:
            verdict = self._done.get(key)
            if verdict is not None:
                self._done.move_to_end(key)
            return verdict

    def start(
        self,
        stream_id: str,
        source: Callable[[], ReadResult],
        har_entry: int | None = None,
    ) -> Verdict | None:
        """The verdict if it is done; otherwise start computing it (once) and return None.
        `source` gives the reading of the stream (its records and the model it names)."""
        key = (stream_id, har_entry)
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            if key in self._running:
                return None
            finished = self._running[key] = threading.Event()
        thread = threading.Thread(
            target=self._compute,
            args=(key, source, finished),
            name=f"lenses-{stream_id[:8]}",
            daemon=True,
        )
        thread.start()
        return None

    def wait(self, stream_id: str, timeout: float, har_entry: int | None = None) -> Verdict | None:
        """Wait for a started computation (tests and `?wait=1`); None if it is not done."""
        with self._lock:
            finished = self._running.get((stream_id, har_entry))
        if finished is not None:
            finished.wait(timeout)
        return self.get(stream_id, har_entry)

    def _compute(
        self, key: Key, source: Callable[[], ReadResult], finished: threading.Event
    ) -> None:
        try:
            result = source()
            verdict = judged(result.records, result.model, self.lenses, self.timeout)
        except Exception:  # the page shows "computing" again and the next visit retries
            log.exception("running the client lenses on stream %s failed", key[0])
        else:
            with self._lock:
                self._done[key] = verdict
                while len(self._done) > self.kept:
                    self._done.popitem(last=False)
        finally:
            with self._lock:
                self._running.pop(key, None)
            finished.set()


def judged(
    records: Sequence[Record], model: str | None, lenses: Sequence[Lens] | None, timeout: float
) -> Verdict:
    """The verdict `streamviz clients` prints for the same records: every lens run and graded
    against the intended reading (the contract read from the records, choice 0), the provider
    named by the model the input names."""
    return clients_verdict(records, lenses, timeout=timeout, model=model)


def jobs(request: Request) -> ClientJobs:
    """The app's jobs (made on first use; a test may set `app.state.clients` first)."""
    state = request.app.state
    with _MAKING:
        found: ClientJobs | None = getattr(state, "clients", None)
        if found is None:
            found = state.clients = ClientJobs()
        return found


_MAKING = threading.Lock()


def _start(request: Request, stream_id: str, har_entry: int | None) -> Verdict | None:
    service = service_of(request)
    service.reading(stream_id, har_entry)  # NotFound / Unreadable become the usual error pages
    found = jobs(request)

    def source() -> ReadResult:
        return service.reading(stream_id, har_entry).result

    verdict = found.start(stream_id, source, har_entry)
    if verdict is None and request.query_params.get("wait") in ("1", "true"):
        verdict = found.wait(stream_id, found.timeout * 2, har_entry)
    return verdict


def page_context(
    stream_id: str, verdict: Verdict | None, har_entry: int | None = None
) -> dict[str, Any]:
    """What the template needs: the page's view of the verdict (None while computing), the
    URLs (all on the HAR entry on screen)."""
    links = Links(stream_id, DEFAULTS, har_entry)
    return {
        "page": clients_view(verdict, links) if verdict is not None else None,
        "stream_id": stream_id,
        "page_url": links.clients,
        "poll_url": links.clients_matrix,
        "json_url": links.clients_json,
        "links": links,
        "pins": BY_CLIENT,
        "clients": CLIENTS,
        "install": INSTALL,
    }


def _entry(shown: Shown) -> int | None:
    return parse_har_entry(shown.query.get("har_entry"))


@router.get("/clients")
async def clients_page(request: Request, shown: Shown) -> Response:
    """Every client's view of the stream, graded, or a "computing" panel that polls for it."""
    stream_id, har_entry = shown.stream_id, _entry(shown)
    verdict = await run_in_threadpool(_start, request, stream_id, har_entry)
    reading = service_of(request).reading(stream_id, har_entry)
    context = page_context(stream_id, verdict, har_entry)
    context["title"] = stream_title(reading.info)
    context["entry"] = reading.result.meta.get("entry") if har_entry is not None else None
    return render(templates_of(request), request, "clients.html", context)


@router.get("/clients/matrix")
async def clients_matrix(request: Request, shown: Shown) -> Response:
    """The verdict and matrix panel (htmx polls it while computing); a browser is sent to the
    page."""
    stream_id, har_entry = shown.stream_id, _entry(shown)
    verdict = await run_in_threadpool(_start, request, stream_id, har_entry)
    if not wants_partial(request):
        return RedirectResponse(Links(stream_id, DEFAULTS, har_entry).clients, status_code=303)
    context = page_context(stream_id, verdict, har_entry)
    return render(templates_of(request), request, "_clients_matrix.html", context)


def clients_document(verdict: Verdict, source: ReadResult) -> dict[str, Any]:
    """The API's answer: what `streamviz clients --format json` prints for the same input."""
    return {**verdict.to_json(), "input": input_json(source)}


@api_router.get("/streams/{stream_id}/clients", summary="Every client library's view, graded")
async def clients_json(
    request: Request, stream_id: str, wait: bool = False, har_entry: str | None = None
) -> Response:
    """`{"clients", "policies", "rows", "comparison", "grades", "quirks", "intended", "why",
    "verdict", "file", "input"}` once computed (200), what `streamviz clients --format json`
    prints; 202 while computing. `har_entry=N` picks a HAR file's entry, as on the pages.

    `wait=true` waits for the result instead (up to twice the lens timeout). Written as the
    rest of the API writes JSON (`webapp.core.jsoncheck.dumps`): a call id holding a lone surrogate
    comes out escaped, not as a UnicodeEncodeError.
    """
    entry = parse_har_entry(har_entry)
    verdict = await run_in_threadpool(_start, request, stream_id, entry)
    if verdict is None:
        return Response(dumps({"status": "computing"}), 202, media_type="application/json")
    source = service_of(request).reading(stream_id, entry).result
    body = await run_in_threadpool(dumps, clients_document(verdict, source))
    return Response(body, media_type="application/json")
