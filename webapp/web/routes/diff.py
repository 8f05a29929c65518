"""Two streams side by side: `/diff?a=ID&b=ID`, its JSON at `/api/diff`, and picking B.

`a` and `b` are stream ids (a stored stream's, or a built-in example's `example:KEY`), each
perhaps with its HAR entry (`har_entry_a`, `har_entry_b`); either may be a non-stream
`chat.completion` answer (pasted, or a capture's non-stream twin), held to what the stream
means and to what each client received (`webapp.triage.diff.Twin`); `ids` is auto, compare or ignore
(`webapp.triage.diff`). With no `b` the page picks it: the library, the examples, and a paste
box whose stream is stored (its secrets masked, as the API does) before the diff opens. A link
to a diff names both streams and their entries, so it shows the same diff to whoever opens it.
The client lenses' grades are shown for a stream whose lenses already ran (its clients page);
this build's two policies are graded always.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from webapp.core.jsoncheck import dumps
from webapp.core.records import ReaderError
from webapp.lenses.results import LensResult
from webapp.triage.diff import IDS_MODES, IdsMode, diff
from webapp.triage.sides import Side, lens_results
from webapp.web.appstate import client_jobs, service_of, settings_of, templates_of, uploads_of
from webapp.web.backend.capture.hops import hops_of
from webapp.web.backend.intake.ingest import FORM_OVERHEAD, Busy, clean_title, prepare
from webapp.web.backend.intake.masking import Masks
from webapp.web.backend.service import NotFound, Unreadable
from webapp.web.backend.team.owners import new_token, owned, remember, token_hash
from webapp.web.http.bodies import BadInput, form_text, read_form
from webapp.web.http.links import DIFF, DIFF_API, DIFF_PASTE, Links, diff_url
from webapp.web.http.problems import error_response
from webapp.web.http.query import DEFAULTS, BadQuery, parse_har_entry
from webapp.web.http.templating import render
from webapp.web.views.diff import Picker, diff_page, picker, stream_side, with_entries

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["streams"])
MAX_SEARCH = 200
PICKED = 50
"""Library streams the picker page lists (its search finds the others)."""


class _Unknown(Exception):
    """A diff names a stream no one has: which side, and the id."""

    def __init__(self, letter: str, stream_id: str) -> None:
        super().__init__(stream_id)
        self.letter = letter
        self.stream_id = stream_id


def _missing(request: Request, error: _Unknown) -> Response:
    shown = error.stream_id if len(error.stream_id) <= 64 else error.stream_id[:61] + "..."
    message = (
        f"Stream {error.letter} does not exist: no stream has the id {shown!r}. Links to "
        "streams stay valid as long as the server keeps its database; check that the whole "
        "link was copied."
    )
    return error_response(request, 404, message, f"No stream {error.letter}")


def _entry(request: Request, letter: str) -> int | None:
    name = f"har_entry_{letter}"
    try:
        return parse_har_entry(request.query_params.get(name))
    except BadQuery as error:
        raise BadQuery(str(error).replace("har_entry", name)) from None


def _ids(request: Request) -> IdsMode:
    value = (request.query_params.get("ids") or "auto").strip()
    for mode in IDS_MODES:
        if value == mode:
            return mode
    raise BadQuery(f"ids must be one of {', '.join(IDS_MODES)} (got {value[:40]!r})")


def _stream_id(request: Request, letter: str, required: bool = True) -> str:
    value = (request.query_params.get(letter) or "").strip()
    if not value and required:
        raise BadQuery(f"give {letter}=ID, the id of stream {letter.upper()} (a stream's "
                       "page has a “compare with…” control that builds this link)")  # fmt: skip
    return value


def _lenses(request: Request, stream_id: str, har_entry: int | None) -> tuple[LensResult, ...]:
    """The client lenses' results when they already ran on the stream, or on this entry of
    the HAR file (its clients page ran them); none are started here."""
    verdict = client_jobs(request).get(stream_id, har_entry)
    return lens_results(None if verdict is None else verdict.matrix)


def _side(
    request: Request, letter: str, stream_id: str, har_entry: int | None, role: str = ""
) -> Side:
    """A stream as side `letter` (`role`: what it is in a gateway's hop, said when it does
    not read)."""
    service = service_of(request)
    try:
        return stream_side(service, stream_id, har_entry, _lenses(request, stream_id, har_entry))
    except NotFound:
        raise _Unknown(letter.upper(), stream_id) from None
    except Unreadable as error:
        said = f"Stream {letter.upper()}{role} does not read, so it cannot be compared: {error}"
        raise Unreadable(said) from error


class _Hop:
    """Whether A and B are one exchange's two hops: `gateway` names the gateway when A is
    what it received and B what it sent; `reversed` when B is what it received."""

    def __init__(self, request: Request, a_id: str, b_id: str, entries: tuple[object, ...]):
        self.gateway: str | None = None
        self.reversed = False
        if any(entry is not None for entry in entries):
            return  # a HAR file's entry is no capture
        found = hops_of(service_of(request), b_id)
        if a_id in found.hops.inner:
            self.gateway = found.upstream or "the gateway"
        self.reversed = a_id in found.hops.outer

    def role(self, letter: str) -> str:
        """`, what the gateway received from the provider,` and the like, or ""."""
        inner = (letter == "a") != self.reversed
        if self.gateway is None and not self.reversed:
            return ""
        return (", what the gateway received from the provider," if inner
                else ", what the gateway sent on to the application,")  # fmt: skip


def _entries(request: Request, stream_id: str, har_entry: int | None) -> list[tuple[str, int]]:
    found = service_of(request).reading(stream_id, har_entry).result.entries
    return [(entry.label, entry.number) for entry in found if entry.number is not None]


def _page_context(request: Request) -> dict[str, Any]:
    a_id, b_id = _stream_id(request, "a"), _stream_id(request, "b")
    har_a, har_b, ids = _entry(request, "a"), _entry(request, "b"), _ids(request)
    hop = _Hop(request, a_id, b_id, (har_a, har_b))
    page = diff_page((a_id, _side(request, "a", a_id, har_a, hop.role("a"))),
                     (b_id, _side(request, "b", b_id, har_b, hop.role("b"))), ids,
                     hop.gateway, hop.reversed)  # fmt: skip
    a_entries, b_entries = _entries(request, a_id, har_a), _entries(request, b_id, har_b)
    if len(a_entries) > 1:
        page = replace(page, a=with_entries(
            page.a, a_entries, lambda n: diff_url(a_id, b_id, n, har_b, ids)))  # fmt: skip
    if len(b_entries) > 1:
        page = replace(page, b=with_entries(
            page.b, b_entries, lambda n: diff_url(a_id, b_id, har_a, n, ids)))  # fmt: skip
    return {"page": page}


def _picker_context(
    request: Request, a_id: str, har_a: int | None, search: str, *, text: str = "",
    error: str = "",
) -> dict[str, Any]:  # fmt: skip
    listed = None if settings_of(request).list_streams else list(owned(request))
    try:
        chosen: Picker = picker(service_of(request), a_id, har_a, listed,
                                search.strip()[:MAX_SEARCH], limit=PICKED)  # fmt: skip
    except NotFound:
        raise _Unknown("A", a_id) from None
    return {"picker": chosen, "text": text, "error": error, "paste_url": DIFF_PASTE,
            "action": DIFF, "a_url": Links(a_id, DEFAULTS, har_a).landing,
            "max_bytes": settings_of(request).max_bytes}  # fmt: skip


def control(request: Request, links: Links) -> dict[str, Any]:
    """The "compare with..." control of a stream page (its `compare` context)."""
    listed = None if settings_of(request).list_streams else list(owned(request))
    chosen = picker(service_of(request), links.stream_id, links.har_entry, listed)
    return {"picker": chosen, "action": DIFF, "paste_url": DIFF_PASTE,
            "picker_url": links.compare_with}  # fmt: skip


@router.get(DIFF)
def diff_view(request: Request) -> Response:
    """Streams A and B side by side; with no `b`, the page that picks it."""
    templates = templates_of(request)
    try:
        if not _stream_id(request, "b", required=False):
            a_id, har_a = _stream_id(request, "a"), _entry(request, "a")
            search = request.query_params.get("q") or ""
            context = _picker_context(request, a_id, har_a, search)
            return render(templates, request, "diff_pick.html", context)
        return render(templates, request, "diff.html", _page_context(request))
    except _Unknown as error:
        return _missing(request, error)
    except ReaderError as error:
        return error_response(request, 422, f"This diff cannot be made: {error}.")


@api_router.get(
    "/diff",
    summary="Two streams side by side",
    description='The same JSON as `streamviz diff A B --format json`: `{"a": {...}, "b": '
    '{...}, "calls": [{"a": CALL | null, "b": CALL | null, "same", "differences", "diverges", '
    '"grades"}], "same", "summary", "streams", "ids"}`. Query: `a` and `b` (stream ids), '
    "`har_entry_a` and `har_entry_b` (a HAR file's entry, 1-based), `ids` (auto | compare | "
    "ignore). `same` is true when the streams mean the same calls, however they were chunked. "
    'Either side may be a non-stream `chat.completion` answer: `"twin"` then says whether it '
    "agrees with the stream's intended reading and with what each client received "
    '(`{"answer": "a"|"b", "same", "reading", "clients", "sentence"}`; null otherwise). '
    "When A is B's inner hop (what a gateway received, B what it sent on: `GET "
    '/api/streams/ID` `"hops"`), it adds `"introduced"` (the quirk codes only B has), '
    '`"removed"` (only A\'s) and `"hop"`, the sentence that says what the gateway did.',
    responses={
        404: {"description": "No stream has one of the ids."},
        400: {"description": "A query value is not valid."},
        422: {
            "description": "A stream does not read (which one, and why), or a non-stream "
            "answer's calls cannot be read."
        },
    },
)
def diff_json(request: Request) -> Response:
    """Streams A and B side by side, as JSON."""
    try:
        a_id, b_id = _stream_id(request, "a"), _stream_id(request, "b")
        har_a, har_b, ids = _entry(request, "a"), _entry(request, "b"), _ids(request)
        hop = _Hop(request, a_id, b_id, (har_a, har_b))
        found = diff(_side(request, "a", a_id, har_a, hop.role("a")),
                     _side(request, "b", b_id, har_b, hop.role("b")), ids, hop.gateway)  # fmt: skip
    except _Unknown as error:
        return _missing(request, error)
    except ReaderError as error:
        return error_response(request, 422, f"This diff cannot be made: {error}.")
    return Response(dumps(found.to_json()), media_type="application/json")


@router.post(DIFF_PASTE)
async def paste(request: Request) -> Response:
    """Store a pasted stream (its secrets masked) and open its diff with stream A (303).

    As every upload: the form is received first (within `--body-timeout`), and only then does
    the paste take an upload slot to be read and stored, so a slow sender holds none."""
    limit = settings_of(request).max_bytes
    try:  # over the limit: `TooLarge`, answered by `webapp.web.routes.errors`
        form = await read_form(request, limit + FORM_OVERHEAD, limit)
    except BadInput as error:
        return error_response(request, 400, str(error))
    try:
        a_id, text = form_text(form, "a").strip(), form_text(form, "text")
        entry = form_text(form, "har_entry_a").strip() or None
        title = form_text(form, "title")
    finally:
        await form.close()
    uploads = uploads_of(request)
    try:
        with uploads.slot():
            return await _paste(request, a_id, text, entry, title, limit)
    except Busy as error:
        response = error_response(request, 503, str(error), "Too many uploads at once")
        response.headers["Retry-After"] = "2"
        return response


async def _paste(
    request: Request, a_id: str, text: str, entry: str | None, title: str, limit: int
) -> Response:
    try:
        har_a = parse_har_entry(entry)
    except BadQuery as error:
        return error_response(request, 400, str(error))
    service = service_of(request)
    try:
        a_info = await run_in_threadpool(service.info, a_id)  # the store: off the event loop
    except NotFound:
        return _missing(request, _Unknown("A", a_id))

    async def again(message: str, status: int) -> Response:
        context = await run_in_threadpool(
            lambda: _picker_context(request, a_id, har_a, "", text=text, error=message)
        )
        return render(templates_of(request), request, "diff_pick.html", context, status)

    if not text.strip():
        return await again("Paste a stream first.", 422)
    try:
        prepared = await run_in_threadpool(prepare, text.encode("utf-8", "surrogatepass"),
                                           "auto", limit, Masks())  # fmt: skip
    except ReaderError as error:
        return await again(str(error), 422)
    token = new_token()
    fallback = f"Pasted to compare with {a_info.title or 'a stream'}"
    info = await run_in_threadpool(
        service.store, prepared, title=clean_title(title, fallback), delete_hash=token_hash(token)
    )
    response = RedirectResponse(diff_url(a_id, info.id, har_a), status_code=303)
    remember(request, response, info.id, token)  # this browser may delete what it stored
    return response


__all__ = ["DIFF_API", "api_router", "router"]
