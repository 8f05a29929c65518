"""The home page: the paste box, the file picker, the options and the example gallery; storing.

A stream pasted or uploaded is read, checked for secrets (the user chooses what to mask when
any are found) and stored, then the browser is sent to its page (303), its findings first
(`Links.landing`); a form that does not read, or holds both a paste and a file, comes back
with the text and the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from webapp.core.options import Options
from webapp.core.readers import decode
from webapp.core.records import ReaderError
from webapp.core.rules import POLICIES
from webapp.core.words import count, excerpt
from webapp.examples import EXAMPLES
from webapp.web.appstate import service_of, settings_of, templates_of, uploads_of
from webapp.web.backend.intake import masking
from webapp.web.backend.intake.ingest import (
    FORM_OVERHEAD,
    INPUT_FORMATS,
    Busy,
    Prepared,
    clean_title,
    encode_text,
    prepare,
)
from webapp.web.backend.library import indexing
from webapp.web.backend.team.owners import new_token, remember, token_hash
from webapp.web.http.bodies import BadInput, form_file, form_text, read_form
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS, PATHS, BadQuery, options_query, parse_options
from webapp.web.http.templating import render
from webapp.web.views.stories import stop

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
        "stops": {key: stop(key) for key in EXAMPLES},
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
    title: str | None
    """None: titled from what it holds."""
    file_name: str
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
    if upload is not None and text.strip():
        raise _Refused(_both(text, upload[1]), 422, text)
    # A file's name comes back from the secrets preview in a field of its own.
    raw, file_name = upload if upload is not None else (encode_text(text), "")
    file_name = clean_title(file_name or form_text(form, "file_name"), "")
    if not raw or raw.isspace():  # not `strip`: it copies the whole upload (on the loop)
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
    title = clean_title(form_text(form, "title"), "") or None
    if not decision:
        found = await run_in_threadpool(_preview, prepared.raw)
        if found.groups:  # ask first: secrets in the content are masked only when kept ticked
            shown = await run_in_threadpool(decode, raw)
            fields = {name: form_text(form, name) for name in _FIELDS}
            raise _Preview(found, shown, title or "", {**fields, "file_name": file_name})
    return _Accepted(prepared, title, file_name, fmt, options)


class _Preview(Exception):
    """Secrets were found in the content: the user chooses which to mask before storing."""

    def __init__(self, found: masking.Preview, text: str, title: str, fields: dict[str, str]):
        super().__init__("preview")
        self.found = found
        self.text = text
        self.title = title
        self.fields = fields


def _both(text: str, file_name: str) -> str:
    """Why a paste and a chosen file together are refused (neither is picked silently)."""
    name = clean_title(file_name, "")
    chosen = f"the file {excerpt(name, 80)}" if name else "a file"
    typed = len(text.replace("\r\n", "\n"))  # as the box counts them; a form sends CRLF
    return (
        f"You pasted {count(typed, 'character')} and chose {chosen}: streamviz reads "
        "one stream at a time. The pasted text is kept below: show its timeline as it is, or "
        "clear the box and choose the file again."
    )


def _preview(raw: bytes) -> masking.Preview:
    """The secrets preview of the bytes to store (decoded here, in a worker thread: tens of
    megabytes decoded on the event loop held every other request meanwhile)."""
    return masking.preview(decode(raw))


def _redisplayed(raw: bytes) -> str:
    decoded = decode(raw)
    return decoded if len(decoded) <= REDISPLAY_LIMIT else ""


@router.post("/streams")
async def submit(request: Request) -> Response:
    """Store a pasted or uploaded stream and redirect to its page (303).

    The form is received first; only then does the upload take a slot (`UploadSlots`) to be
    checked and stored, so a slow sender holds none."""
    limit = settings_of(request).max_bytes
    try:  # over the limit: `TooLarge`, answered by `webapp.web.routes.errors`
        form = await read_form(request, limit + FORM_OVERHEAD, limit)
    except BadInput as error:
        context = _form_context(request, error=str(error))
        return render(templates_of(request), request, "home.html", context, 400)
    uploads = uploads_of(request)
    try:
        with uploads.slot():
            return await _submit(request, form, limit)
    except Busy as error:
        context = {"status": 503, "heading": "Too many uploads at once", "message": str(error)}
        response = render(templates_of(request), request, "error.html", context, 503)
        response.headers["Retry-After"] = "2"
        return response
    finally:
        await form.close()


async def _submit(request: Request, form: FormData, limit: int) -> Response:
    try:
        accepted = await _accept(form, limit)
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
    token = new_token()
    info = await run_in_threadpool(
        indexing.store,
        service_of(request),
        accepted.prepared,
        title=accepted.title,
        fallback="Pasted stream",
        file_name=accepted.file_name,
        input_format=accepted.input_format,
        delete_hash=token_hash(token),
    )
    response = RedirectResponse(Links(info.id, accepted.options).landing, status_code=303)
    remember(request, response, info.id, token)  # this browser may delete what it stored
    return response


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
    prepared = prepare(example.data(), "auto", settings_of(request).max_bytes)
    info = indexing.store(service_of(request), prepared, title=f"Example: {example.title}")
    return RedirectResponse(Links(info.id, example.options).step(0), status_code=303)
