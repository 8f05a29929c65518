"""The clients page: every client library graded on the stream, computed in the background.

Running the lenses takes seconds (LiteLLM alone imports for several), so the first visit hands
the stream to the worker's line for the lenses (`webapp.web.backend.jobs.clientjobs`: one
bound on lens processes per worker, results kept in the store for every worker and host) and
shows a panel that says where it is ("waiting: 3rd in line") and that htmx polls, with a plain
reload link for a browser without JavaScript; later visits get the kept result. The result is
the verdict (`webapp.triage.verdict`: the lenses' calls lined up, each column graded against
what the stream means, where to file), the same one `streamviz clients` computes. It does not
depend on the policy or path, but on the HAR entry (each entry is a stream of its own) and on
the lenses installed (a library installed after the server started is a new computation).
"Compute again" (a POST) forgets the kept result. While a lens is missing and `make run`'s
install is under way, the page shows the install's log and keeps polling until it ends.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.jsoncheck import dumps
from webapp.core.records import ReadResult
from webapp.core.tracejson import input_json
from webapp.lenses.pins import BY_CLIENT, CLIENTS, INSTALL
from webapp.triage.verdict import Verdict
from webapp.web.appstate import client_jobs, service_of, settings_of, templates_of
from webapp.web.backend.capture.twin import stored_answer
from webapp.web.backend.jobs.clientjobs import ClientJobs, Full, Pending
from webapp.web.backend.jobs.lensinstall import Install, install_state
from webapp.web.http.htmx import wants_partial
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS, Shown, parse_har_entry
from webapp.web.http.templating import render
from webapp.web.http.text import ordinal, stream_title
from webapp.web.views.clients import clients_view

router = APIRouter(include_in_schema=False)
"""Part of the stream pages' router (`webapp.web.routes.pages`): `/s/{id}/clients`, and an
example's at `/examples/{key}/clients`."""
api_router = APIRouter(tags=["streams"], include_in_schema=False)
"""Included by `webapp.web.routes.api` under its `/api` prefix; kept out of /openapi.json for now
(the API tests pin the documented routes; adding it there is a change of theirs to make)."""
BUSY_RETRY = 30
"""Seconds a refused page asks to wait (Retry-After) when the line for the lenses is full."""

__all__ = ["ClientJobs", "api_router", "router"]


def _start(request: Request, stream_id: str, har_entry: int | None) -> Verdict | Pending:
    service = service_of(request)
    service.reading(stream_id, har_entry)  # NotFound / Unreadable become the usual error pages
    found = client_jobs(request)
    progress = found.start(stream_id, har_entry)
    if isinstance(progress, Pending) and request.query_params.get("wait") in ("1", "true"):
        return found.wait(stream_id, found.timeout * 2, har_entry) or progress
    return progress


def _busy(request: Request, error: Full) -> Response:
    context = {
        "status": 503,
        "heading": "The server is running the client libraries on other streams",
        "message": f"{error}; try again in a moment.",
    }
    response = render(templates_of(request), request, "error.html", context, 503)
    response.headers["Retry-After"] = str(BUSY_RETRY)
    return response


def waiting_words(pending: Pending) -> str:
    """Where a verdict being made is, in words: "waiting: 3rd in line", "running: 2 of 5
    libraries answered", "grading"."""
    place = pending.place
    if place is None:
        return "grading the libraries' answers"
    if not place.running:
        return f"waiting: {ordinal(place.position)} in line"
    return f"running: {place.finished} of {place.total} libraries answered"


def page_context(
    stream_id: str,
    progress: Verdict | Pending | None,
    har_entry: int | None = None,
    install: Install | None = None,
) -> dict[str, Any]:
    """What the template needs: the page's view of the verdict (None while computing) or where
    it is, the lens install under way, the URLs (all on the HAR entry on screen)."""
    links = Links(stream_id, DEFAULTS, har_entry)
    verdict = progress if isinstance(progress, Verdict) else None
    missing = verdict is not None and any(
        g.grade is None and not (g.limited or g.skipped) for g in verdict.grades
    )
    return {
        "page": clients_view(verdict, links) if verdict is not None else None,
        "waiting": waiting_words(progress) if isinstance(progress, Pending) else "",
        "installing": install if install is not None and (missing or verdict is None) else None,
        "stream_id": stream_id,
        "page_url": links.clients,
        "poll_url": links.clients_matrix,
        "again_url": links.clients_again,
        "json_url": links.clients_json,
        "links": links,
        "pins": BY_CLIENT,
        "clients": CLIENTS,
        "install": INSTALL,
    }


def _install(request: Request) -> Install | None:
    return install_state(settings_of(request).lens_install_log)


def _entry(shown: Shown) -> int | None:
    return parse_har_entry(shown.query.get("har_entry"))


@router.get("/clients")
async def clients_page(request: Request, shown: Shown) -> Response:
    """Every client's view of the stream, graded, or a panel that says where it is and polls."""
    stream_id, har_entry = shown.stream_id, _entry(shown)
    if await run_in_threadpool(stored_answer, service_of(request), stream_id, har_entry):
        return RedirectResponse(Links(stream_id, DEFAULTS, har_entry).base, 303)
    try:
        progress = await run_in_threadpool(_start, request, stream_id, har_entry)
    except Full as error:
        return _busy(request, error)
    reading = service_of(request).reading(stream_id, har_entry)
    install = await run_in_threadpool(_install, request)
    context = page_context(stream_id, progress, har_entry, install)
    context["title"] = stream_title(reading.info)
    context["entry"] = reading.result.meta.get("entry") if har_entry is not None else None
    return render(templates_of(request), request, "clients.html", context)


@router.get("/clients/matrix")
async def clients_matrix(request: Request, shown: Shown) -> Response:
    """The verdict and matrix panel (htmx polls it while computing); a browser is sent to the
    page."""
    stream_id, har_entry = shown.stream_id, _entry(shown)
    if not wants_partial(request):
        return RedirectResponse(Links(stream_id, DEFAULTS, har_entry).clients, status_code=303)
    try:
        progress = await run_in_threadpool(_start, request, stream_id, har_entry)
    except Full as error:
        return _busy(request, error)
    install = await run_in_threadpool(_install, request)
    context = page_context(stream_id, progress, har_entry, install)
    return render(templates_of(request), request, "_clients_matrix.html", context)


@router.post("/clients/again")
async def clients_again(request: Request, shown: Shown) -> Response:
    """Forget the kept verdict and lens results of the stream (its HAR entry), then back to
    the page, which computes them again."""
    stream_id, har_entry = shown.stream_id, _entry(shown)
    service = service_of(request)
    await run_in_threadpool(service.reading, stream_id, har_entry)  # a 404 for no such stream
    await run_in_threadpool(client_jobs(request).forget, stream_id, har_entry)
    return RedirectResponse(Links(stream_id, DEFAULTS, har_entry).clients, status_code=303)


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
    try:
        progress = await run_in_threadpool(_start, request, stream_id, entry)
    except Full as error:
        body = dumps({"status": "busy", "error": str(error)})
        headers = {"Retry-After": str(BUSY_RETRY)}
        return Response(body, 503, headers=headers, media_type="application/json")
    if isinstance(progress, Pending):
        body = dumps({"status": "computing", "where": waiting_words(progress)})
        return Response(body, 202, media_type="application/json")
    source = service_of(request).reading(stream_id, entry).result
    body = await run_in_threadpool(dumps, clients_document(progress, source))
    return Response(body, media_type="application/json")
