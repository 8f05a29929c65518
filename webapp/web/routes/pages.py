"""The HTML pages. A page includes its partials; an htmx request gets only the partial.

Every URL a page pushes to history (`/s/{id}?step=N&policy=...&path=...`) serves the full
page when loaded directly, and links carry real `href`s, so everything works without
JavaScript; htmx only makes stepping and scrolling cheaper.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, QueryParams

from webapp.core.options import Options
from webapp.core.readers import decode
from webapp.core.records import ReaderError
from webapp.core.rules import POLICIES
from webapp.core.words import count
from webapp.examples import EXAMPLES
from webapp.triage.compare import Comparison
from webapp.web.appstate import service_of, settings_of, templates_of
from webapp.web.backend import masking
from webapp.web.backend.ingest import (
    FORM_OVERHEAD,
    INPUT_FORMATS,
    BadInput,
    Busy,
    Prepared,
    TooLarge,
    UploadSlots,
    clean_title,
    encode_text,
    form_file,
    form_text,
    prepare,
    read_form,
)
from webapp.web.backend.overview import strip
from webapp.web.backend.team import new_token, remember, token_hash
from webapp.web.backend.traceview import TraceView
from webapp.web.htmx import wants_partial
from webapp.web.query import (
    COMPARED,
    DEFAULTS,
    PATHS,
    BadQuery,
    Links,
    options_query,
    parse_anomaly,
    parse_har_entry,
    parse_int,
    parse_options,
    parse_policy,
    parse_present,
)
from webapp.web.routes import clients, triage
from webapp.web.routes import minimise as minimise_routes
from webapp.web.templating import render
from webapp.web.text import stream_title
from webapp.web.views import timeline as views
from webapp.web.views.anomaly_list import panel as anomaly_panel
from webapp.web.views.compare_step import step_panel
from webapp.web.views.comparison import compare_page
from webapp.web.views.entries import entries
from webapp.web.views.panels import detail, state

router = APIRouter(include_in_schema=False)
REDISPLAY_LIMIT = 2_000_000
"""The most text of an uploaded file put back in the paste box when it does not read."""


def _form_context(
    request: Request,
    *,
    text: str = "",
    title: str = "",
    fields: dict[str, str] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    values = {"server_tools": "", "choice": str(DEFAULTS.choice), **options_query(DEFAULTS)}
    values["path"] = ""  # auto: the server-tools path when server tools are named
    values.update(fields or {})
    values.setdefault("format", "auto")
    return {
        "text": text,
        "title": title,
        "values": values,
        "error": error,
        "policies": POLICIES,
        "paths": PATHS,
        "formats": INPUT_FORMATS,
        "examples": tuple(EXAMPLES.values()),
        "max_bytes": settings_of(request).max_bytes,
    }


@router.get("/")
def home(request: Request) -> Response:
    """The paste box, the file picker, the options and the example gallery."""
    return render(templates_of(request), request, "home.html", _form_context(request))


class _Refused(Exception):
    """The form comes back to the user with this message and the text they sent."""

    def __init__(self, message: str, status: int, shown: str) -> None:
        super().__init__(message)
        self.status = status
        self.shown = shown


@dataclass(frozen=True, slots=True)
class _Accepted:
    prepared: Prepared
    title: str
    input_format: str
    options: Options


_FIELDS = ("policy", "path", "server_tools", "choice", "format")


async def _accept(form: FormData, limit: int) -> _Accepted:
    """Validate the form and read the stream it carries; raises _Refused or TooLarge."""
    text = form_text(form, "text")
    fields = {name: form_text(form, name) for name in _FIELDS}
    fmt = fields["format"] or "auto"
    try:
        options = parse_options(fields)
    except BadQuery as error:
        raise _Refused(str(error), 400, text) from error
    upload = await form_file(form, "file", limit)
    raw, fallback = upload if upload is not None else (encode_text(text), "Pasted stream")
    if not raw.strip():
        raise _Refused("Paste a stream or choose a file first.", 422, text)
    decision = form_text(form, "redact")  # "": not asked yet; "chosen" or "none": answered
    try:
        masks = masking.chosen_masks(decision, form_text(form, "key"), form.getlist("mask"))
        prepared = await run_in_threadpool(prepare, raw, fmt, limit, masks)
    except (BadInput, masking.BadChoice) as error:
        raise _Refused(str(error), 400, text) from error
    except ReaderError as error:
        shown = text
        if upload is not None:  # put the file's text in the box, unless it is huge
            shown = await run_in_threadpool(_redisplayed, raw)
        raise _Refused(str(error), 422, shown) from error
    title = clean_title(form_text(form, "title"), fallback)
    if not decision:
        found = await run_in_threadpool(masking.preview, decode(prepared.raw))
        if found.groups:  # ask first: secrets in the content are masked only when kept ticked
            shown = await run_in_threadpool(decode, raw)
            raise _Preview(found, shown, title, {name: form_text(form, name) for name in _FIELDS})
    return _Accepted(prepared, title, fmt, options)


class _Preview(Exception):
    """Secrets were found in the content: the user chooses which to mask before storing."""

    def __init__(self, found: masking.Preview, text: str, title: str, fields: dict[str, str]):
        super().__init__("preview")
        self.found = found
        self.text = text
        self.title = title
        self.fields = fields


def _redisplayed(raw: bytes) -> str:
    decoded = decode(raw)
    return decoded if len(decoded) <= REDISPLAY_LIMIT else ""


@router.post("/streams")
async def submit(request: Request) -> Response:
    """Store a pasted or uploaded stream and redirect to its timeline (303)."""
    uploads: UploadSlots = request.app.state.uploads
    try:
        with uploads.slot():
            return await _submit(request)
    except Busy as error:
        context = {"status": 503, "heading": "Too many uploads at once", "message": str(error)}
        response = render(templates_of(request), request, "error.html", context, 503)
        response.headers["Retry-After"] = "2"
        return response


async def _submit(request: Request) -> Response:
    limit = settings_of(request).max_bytes
    try:
        form = await read_form(request, limit + FORM_OVERHEAD, limit)
    except TooLarge:
        return _too_large(request, limit)
    except BadInput as error:
        context = _form_context(request, error=str(error))
        return render(templates_of(request), request, "home.html", context, 400)
    try:
        accepted = await _accept(form, limit)
    except TooLarge:
        return _too_large(request, limit)
    except _Preview as shown:
        context = {
            "preview": shown.found,
            "text": shown.text,
            "title": shown.title,
            "fields": shown.fields,
        }
        return render(templates_of(request), request, "redact_preview.html", context)
    except _Refused as refused:
        context = _form_context(
            request,
            text=refused.shown,
            title=form_text(form, "title"),
            fields={name: form_text(form, name) for name in _FIELDS},
            error=str(refused),
        )
        return render(templates_of(request), request, "home.html", context, refused.status)
    finally:
        await form.close()
    token = new_token()
    info = await run_in_threadpool(
        service_of(request).store,
        accepted.prepared,
        title=accepted.title,
        input_format=accepted.input_format,
        delete_hash=token_hash(token),
    )
    response = RedirectResponse(Links(info.id, accepted.options).step(0), status_code=303)
    remember(request, response, info.id, token)  # this browser may delete what it stored
    return response


def _too_large(request: Request, limit: int) -> Response:
    context = {
        "status": 413,
        "heading": "That stream is too large",
        "message": f"This server accepts streams of up to {count(limit, 'byte')}. "
        "Trim the stream, or start the server with a larger --max-bytes.",
    }
    return render(templates_of(request), request, "error.html", context, 413)


@router.post("/examples/{key}")
def open_example(request: Request, key: str) -> Response:
    """Store a built-in example like a paste and open its timeline with its options."""
    example = EXAMPLES.get(key)
    if example is None:
        context = {
            "status": 404,
            "heading": "No such example",
            "message": "There is no built-in example by that name.",
        }
        return render(templates_of(request), request, "error.html", context, 404)
    limit = settings_of(request).max_bytes
    try:
        prepared = prepare(example.data(), "auto", limit)
    except TooLarge:
        return _too_large(request, limit)
    info = service_of(request).store(prepared, title=f"Example: {example.title}")
    return RedirectResponse(Links(info.id, example.options).step(0), status_code=303)


def _view(request: Request, stream_id: str, embed: bool = False) -> tuple[TraceView, Links, int]:
    query = request.query_params
    options = parse_options(query)
    step = parse_int(query.get("step"), "step", 0)
    har_entry = parse_har_entry(query.get("har_entry"))
    code = parse_anomaly(query.get("anomaly"))
    start = parse_int(query.get("anomaly_start"), "anomaly_start", 0)
    view = service_of(request).view(stream_id, options, har_entry)
    present = parse_present(query.get("present"))
    links = Links(stream_id, options, har_entry, code, start if code else 0, present, embed)
    return view, links, view.clamp(step)


def _stage(view: TraceView, links: Links, step: int) -> dict[str, Any]:
    return {
        "links": links,
        "nav": views.nav(view, links, step),
        "detail": detail(view, step),
        "state": state(view, step),
        "step": step,
    }


def _anomalies(view: TraceView, links: Links, step: int) -> dict[str, Any]:
    found = view.anomaly_groups
    start = links.anomaly_start
    return {"anomalies": anomaly_panel(view.trace, found, links, step, links.anomaly, start)}


@router.get("/s/{stream_id}")
def stream_page(request: Request, stream_id: str) -> Response:
    """The timeline page at a step; an htmx request gets only the stage (nav, detail, state)."""
    view, links, step = _view(request, stream_id)
    context = _stage(view, links, step)
    context.update(triage.stage_context(request, view, links, step))
    templates = templates_of(request)
    if wants_partial(request):
        return render(templates, request, "_stage.html", context)
    context.update(triage.page_context(request, view, links, step))
    size = settings_of(request).timeline_window
    context.update(
        options=view.options,
        summary=views.summary(view),
        window=views.window_around(view, links, step, size),
        policies=POLICIES,
        paths=PATHS,
        overview=strip(view.buckets, len(view.trace.steps), links, step),
        entries=entries(view, links),
        minimise=minimise_routes.control(request, view, links),
        **_anomalies(view, links, step),
    )
    return render(templates, request, "stream.html", context)


@router.get("/s/{stream_id}/anomalies")
def anomalies(request: Request, stream_id: str) -> Response:
    """The anomaly list, filtered by `anomaly` (htmx); a browser is sent to the page."""
    view, links, step = _view(request, stream_id)
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    context = _anomalies(view, links, step)
    return render(templates_of(request), request, "_anomalies.html", context)


@router.get("/s/{stream_id}/timeline")
def timeline(request: Request, stream_id: str) -> Response:
    """The timeline window around a step (htmx); a browser is sent to the page at that step."""
    view, links, step = _view(request, stream_id)
    if not wants_partial(request):
        return RedirectResponse(links.step(step), status_code=303)
    size = settings_of(request).timeline_window
    context = {"window": views.window_around(view, links, step, size), "links": links}
    context["noted"] = triage.noted_steps(request, stream_id)
    return render(templates_of(request), request, "_timeline.html", context)


@router.get("/s/{stream_id}/rows")
def rows(request: Request, stream_id: str) -> Response:
    """More timeline rows before or after those shown (htmx, when the user scrolls)."""
    view, links, step = _view(request, stream_id)
    query = request.query_params
    start = parse_int(query.get("start"), "start", 0)
    size = settings_of(request).timeline_window
    end = parse_int(query.get("end"), "end", start + size)
    direction = query.get("direction") or "after"
    if direction not in ("before", "after"):
        raise BadQuery("direction must be before or after")
    if not wants_partial(request):
        return RedirectResponse(links.step(view.clamp(start)), status_code=303)
    end = min(end, start + size)
    window = views.window(view, links, start, end, step, size, fill=direction == "after")
    context = {"window": window, "links": links, "direction": direction}
    context["noted"] = triage.noted_steps(request, stream_id)
    return render(templates_of(request), request, "_rows.html", context)


@router.get("/s/{stream_id}/compare")
def compare(request: Request, stream_id: str) -> Response:
    """Two policies side by side; an htmx request gets only the next rows."""
    comparison, links, query = _comparison(request, stream_id)
    only = query.get("only") or ""
    if only not in ("", "differing"):
        raise BadQuery("only must be 'differing' or absent")
    size = settings_of(request).timeline_window
    chosen = query.get("step")
    selected = parse_int(chosen, "step", 0) if chosen else None
    if selected is not None:
        selected = max(0, min(selected, len(comparison.rows) - 1))
    start = parse_int(query.get("start"), "start", 0)
    if "start" not in query and selected is not None and not only:
        start = selected // size * size  # the window that holds the selected row
    service = service_of(request)
    reading = service.reading(stream_id, links.har_entry)
    records = reading.result.records
    page = compare_page(
        comparison, links, only=bool(only), start=start, size=size, records=records,
        selected=selected,
    )  # fmt: skip
    templates = templates_of(request)
    context: dict[str, Any] = {"page": page}
    if wants_partial(request):
        return render(templates, request, "_compare_rows.html", context)
    context.update(title=stream_title(service.info(stream_id)), links=links)
    context["panel"] = step_panel(comparison, records, selected) if selected is not None else None
    return render(templates, request, "compare.html", context)


@router.get("/s/{stream_id}/compare/step")
def compare_step(request: Request, stream_id: str) -> Response:
    """The compare page's selected step alone: its input, both policies' blocks as of it."""
    comparison, links, query = _comparison(request, stream_id)
    step = parse_int(query.get("step"), "step", 0)
    records = service_of(request).reading(stream_id, links.har_entry).result.records
    panel = step_panel(comparison, records, step)
    if not wants_partial(request):
        left, right = comparison.left.policy, comparison.right.policy
        return RedirectResponse(links.compare(left, right, step=panel.step), status_code=303)
    context = {"panel": panel, "links": links}
    return render(templates_of(request), request, "_compare_step.html", context)


def _comparison(request: Request, stream_id: str) -> tuple[Comparison, Links, QueryParams]:
    """The comparison a compare URL names, and the links of its page."""
    query = request.query_params
    options = parse_options(query)
    left = parse_policy(query.get("left"), COMPARED[0], "left")
    right = parse_policy(query.get("right"), COMPARED[1], "right")
    har_entry = parse_har_entry(query.get("har_entry"))
    comparison = service_of(request).comparison(stream_id, options, left, right, har_entry)
    present = parse_present(query.get("present"))
    links = Links(stream_id, replace(options, policy=right), har_entry, present=present)
    return comparison, links, query


@router.get("/rules")
def rules_page(request: Request) -> Response:
    """The five rules from the rules table, each with its example, and the fold model."""
    return render(templates_of(request), request, "rules.html", {})


router.include_router(clients.router)
