"""The routes of minimising: the page's form and progress fragment, and the JSON API.

A form posts to a real URL: htmx gets the progress fragment (which polls itself until the job
ends), a browser without JavaScript is sent to the job's own page (reload to follow it).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from webapp.storage.jobs import Job
from webapp.web.appstate import minimiser_of, service_of, settings_of, templates_of
from webapp.web.backend.jobs.minimise import BUILT_IN, Busy, check, job_json
from webapp.web.backend.team.notes import Invalid, small_form
from webapp.web.backend.team.owners import hand_over, new_token, owned, remember, token_hash
from webapp.web.http.bodies import BadInput, json_object
from webapp.web.http.htmx import wants_partial
from webapp.web.http.links import Links, job_api
from webapp.web.http.problems import Problem, error_response, json_response, problem
from webapp.web.http.query import MAX_HAR_ENTRY, parse_har_entry, parse_options
from webapp.web.http.templating import render
from webapp.web.http.text import stream_title
from webapp.web.views import minimise as minimise_views
from webapp.web.views.minimise import JobView

router = APIRouter(include_in_schema=False)
api_router = APIRouter(prefix="/api", tags=["minimise"])
"""Documented in /openapi.json, so the schema fuzz reaches it too."""
NO_JOB = "no minimise job has this id (or its stream was deleted)"
_JOB_GONE: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": NO_JOB}}
RETRY_AFTER = "10"


def _chosen(form: FormData) -> tuple[object, object]:
    """`until` and `policy` from the page's one select (`target`: "POLICY UNTIL") or both."""
    target = form.get("target")
    if isinstance(target, str) and " " in target:
        policy, _, until = target.partition(" ")
        return until, policy
    return form.get("until"), form.get("policy", "adr-0019")


def _job_of(request: Request, job_id: str, stream_id: str | None = None) -> Job:
    job = minimiser_of(request).jobs.get(job_id) if 0 < len(job_id) <= 64 else None
    if job is None or (stream_id is not None and job.stream_id != stream_id):
        raise _NoJob(job_id)
    return job


class _NoJob(LookupError):
    pass


def _fragment(request: Request, job: Job | None, error: str = "", status: int = 200) -> Response:
    context = {"job": JobView(job) if job is not None else None, "error": error}
    return render(templates_of(request), request, "_minimise_job.html", context, status)


def _page(request: Request, job: Job) -> Response:
    info = service_of(request).info(job.stream_id)
    context = {"job": JobView(job), "error": "", "title": stream_title(info)}
    return render(templates_of(request), request, "minimise_job.html", context)


def _no_job_page(request: Request) -> Response:
    return error_response(request, 404, "No minimise job has this id (or its stream was deleted).")


# The page.


@router.get("/s/{stream_id}/minimise")
def form(request: Request, stream_id: str) -> Response:
    """The Minimise form with its choices for the page of the view the query names: the
    partial the page's section loads when opened (htmx), or a page of its own."""
    query = request.query_params
    har_entry = parse_har_entry(query.get("har_entry"))
    service = service_of(request)
    view = service.view(stream_id, parse_options(query), har_entry)
    links = Links(stream_id, view.options, har_entry)
    if links.example:
        return error_response(request, 422, BUILT_IN)
    running = minimiser_of(request).jobs.running_for(stream_id)
    budget = settings_of(request).minimise_seconds
    control = minimise_views.control(service, view, links, budget, running)
    context: dict[str, Any] = {"minimise": control}
    if wants_partial(request):
        return render(templates_of(request), request, "_minimise_form.html", context)
    context.update(title=stream_title(view.source.info), back_url=links.step(0))
    return render(templates_of(request), request, "minimise.html", context)


@router.post("/s/{stream_id}/minimise")
async def start_from_page(request: Request, stream_id: str) -> Response:
    """Start minimising; htmx gets the progress fragment, a browser the job's page."""
    service = service_of(request)
    await run_in_threadpool(service.info, stream_id)
    partial = wants_partial(request)
    try:
        form = await small_form(request)
        until, policy = _chosen(form)
        har_entry = parse_har_entry(request.query_params.get("har_entry"))  # the entry on screen
        checked = await run_in_threadpool(check, service, stream_id, until, policy, har_entry)
        token = new_token()
        job, new = await run_in_threadpool(
            minimiser_of(request).start_owned, checked, token_hash(token)
        )
    except Invalid as error:
        if partial:
            return _fragment(request, None, str(error), 422)
        return error_response(request, 422, f"That cannot be minimised: {error}")
    except Busy as error:
        response = (
            _fragment(request, None, f"{error}; try again in a few seconds.", 503)
            if partial
            else _busy_page(request, str(error))
        )
        response.headers["Retry-After"] = RETRY_AFTER
        return response
    response = (
        _fragment(request, job, status=200)
        if partial
        else RedirectResponse(JobView(job).url, status_code=303)
    )
    if new:  # the result will be this browser's to delete: keep its token under the job's id
        remember(request, response, job.id, token)
    return response


def _claim(request: Request, job: Job, response: Response) -> Response:
    """A finished job this browser started: its result's token moves to the result's id."""
    if job.status != "running" and job.id in owned(request):
        hand_over(request, response, job.id, job.result)
    return response


def _busy_page(request: Request, message: str) -> Response:
    return error_response(request, 503, f"{message}; try again in a few seconds.")


def _gone(request: Request) -> Response:
    """A job that is not there, as the poll's fragment or as a page."""
    if wants_partial(request):
        return _fragment(request, None, "This job is gone (its stream was deleted?).", 404)
    return _no_job_page(request)


@router.get("/s/{stream_id}/minimise/{job_id}")
async def job_page(request: Request, stream_id: str, job_id: str) -> Response:
    """The job's progress: the fragment for htmx's poll, a page for a browser."""
    try:
        job = await run_in_threadpool(_job_of, request, job_id, stream_id)
    except _NoJob:
        return _gone(request)
    if wants_partial(request):
        return _claim(request, job, _fragment(request, job))
    return _claim(request, job, await run_in_threadpool(_page, request, job))


@router.post("/s/{stream_id}/minimise/{job_id}/cancel")
async def cancel_from_page(request: Request, stream_id: str, job_id: str) -> Response:
    """Ask the job to stop; the fragment (it keeps polling until the job says cancelled)."""
    try:
        job = await run_in_threadpool(_job_of, request, job_id, stream_id)
    except _NoJob:
        return _gone(request)
    found = await run_in_threadpool(minimiser_of(request).jobs.cancel, job.id)
    if wants_partial(request):
        return _fragment(request, found or job)
    return RedirectResponse(JobView(job).url, status_code=303)


# The API.


def _entry_of(value: object) -> int | None:
    """A body's `har_entry`: absent or null, or a whole number from 1 (Invalid otherwise)."""
    if value is None:
        return None
    if type(value) is not int or not 1 <= value <= MAX_HAR_ENTRY:
        raise Invalid(f"har_entry must be a whole number from 1 to {MAX_HAR_ENTRY}, or null "
                      f"(entries count from 1), not {str(value)[:40]!r}")  # fmt: skip
    return value


@api_router.post(
    "/streams/{stream_id}/minimise",
    status_code=202,
    summary="Minimise a stream",
    description='`{"until": "fingerprint" | "anomaly:CODE" | "differs" | "rule:RULE", '
    '"policy": "adr-0019", "har_entry": null}`: a background job shrinks the stream (a HAR '
    "file's entry `har_entry`, the first event stream when null) to fewer records that keep "
    "the property, within the server's time budget, and stores the result as a new stream. "
    "`fingerprint` keeps the bug itself: the quirk codes, the anomalies with their blocks' "
    "names under the policy, and both policies' grades. 202 with the job and a `Location` to "
    "poll; a job already running for this stream, entry, property and policy is answered "
    "instead (without a `delete_token`, which goes to whoever started it).",
    responses={
        404: {"model": Problem, "description": "No stream has this id."},
        400: {"model": Problem, "description": "The body is not a JSON object."},
        422: {"model": Problem, "description": "An unknown property or policy, or one the "
              "stream does not show."},
        503: {"model": Problem, "description": "This worker runs as many jobs as it may."},
    },
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"type": "object", "required": ["until"], "properties": {
            "until": {"type": "string",
                      "examples": ["fingerprint", "anomaly:phantom-call", "differs"]},
            "policy": {"type": "string", "enum": ["adr-0019", "exact-key"]},
            "har_entry": {"type": ["integer", "null"], "minimum": 1},
        }},
    }}}},
)  # fmt: skip
async def start_from_api(request: Request, stream_id: str) -> Response:
    """`{"until": "fingerprint" | "anomaly:CODE" | "differs" | "rule:RULE", "policy":
    "adr-0019", "har_entry": N}` -> 202 with the job (the same job when one is already running
    for this stream, entry, property and policy)."""
    service = service_of(request)
    await run_in_threadpool(service.info, stream_id)
    try:
        body: dict[str, Any] = await json_object(request)
        har_entry = _entry_of(body.get("har_entry"))
        checked = await run_in_threadpool(
            check, service, stream_id, body.get("until"), body.get("policy", "adr-0019"),
            har_entry,
        )  # fmt: skip
        token = new_token()
        job, new = await run_in_threadpool(
            minimiser_of(request).start_owned, checked, token_hash(token)
        )
    except BadInput as error:
        return problem(400, str(error))
    except Invalid as error:
        return problem(422, str(error))
    except Busy as error:
        return problem(503, f"{error}; try again later", {"Retry-After": RETRY_AFTER})
    answer = job_json(job)
    if new:  # the token that will delete the result (a job already running has its own)
        answer["delete_token"] = token
    response = json_response(answer, 202)
    response.headers["Location"] = job_api(job.id)
    return response


@api_router.get("/jobs/{job_id}", summary="A minimise job", responses=_JOB_GONE)
def get_job(request: Request, job_id: str) -> Response:
    """The job's status, progress and (when done) the minimised stream's id."""
    try:
        return json_response(job_json(_job_of(request, job_id)))
    except _NoJob:
        return problem(404, NO_JOB)


@api_router.delete(
    "/jobs/{job_id}", status_code=202, summary="Cancel a minimise job", responses=_JOB_GONE
)
def cancel_job(request: Request, job_id: str) -> Response:
    """Ask a running job to stop (202 with the job as it is now)."""
    try:
        job = _job_of(request, job_id)
    except _NoJob:
        return problem(404, NO_JOB)
    found = minimiser_of(request).jobs.cancel(job.id)
    return json_response(job_json(found or job), 202)
