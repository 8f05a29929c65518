"""What the app factory put on `app.state`, typed: the service, the settings, the templates,
the pace of live views, the upload slots, the clients' jobs and the minimiser."""

from __future__ import annotations

import threading

from fastapi import Request
from fastapi.templating import Jinja2Templates

from webapp.settings import MB, Settings
from webapp.web.backend.capture.live import Pace
from webapp.web.backend.intake.ingest import UploadSlots
from webapp.web.backend.jobs.clientjobs import ClientJobs
from webapp.web.backend.jobs.minimise import Minimiser, minimiser
from webapp.web.backend.service import Service


def service_of(request: Request) -> Service:
    """The app's service (store, caches)."""
    service: Service = request.app.state.service
    return service


def pace_of(request: Request) -> Pace:
    """How often this worker makes live streams' views again."""
    pace: Pace = request.app.state.pace
    return pace


def settings_of(request: Request) -> Settings:
    """The app's settings."""
    settings: Settings = request.app.state.settings
    return settings


def uploads_of(request: Request) -> UploadSlots:
    """The worker's upload slots (`--max-uploads`): an upload is checked and stored in one."""
    uploads: UploadSlots = request.app.state.uploads
    return uploads


def templates_of(request: Request) -> Jinja2Templates:
    """The app's Jinja templates."""
    templates: Jinja2Templates = request.app.state.templates
    return templates


def site_root(request: Request) -> str:
    """Where this server's users reach it, for absolute links: `--public-url`, else the
    address this request came to (`http://host:port`, no slash at the end)."""
    public = settings_of(request).public_url
    return public.rstrip("/") if public else str(request.base_url).rstrip("/")


def client_jobs(request: Request) -> ClientJobs:
    """The app's jobs (made on first use from the settings; a test may set
    `app.state.clients` first), bound to the app's service."""
    state = request.app.state
    with _MAKING:
        found: ClientJobs | None = getattr(state, "clients", None)
        if found is None:
            settings = settings_of(request)
            found = state.clients = ClientJobs(
                timeout=settings.lens_timeout,
                memory=settings.lens_memory_mb * MB,
                processes=settings.lens_processes,
                waiting=settings.lens_waiting,
            )
    return found.bind(service_of(request))


_MAKING = threading.Lock()


def minimiser_of(request: Request) -> Minimiser:
    """The app's minimiser, under the settings' budget and bound on jobs at once."""
    settings = settings_of(request)
    return minimiser(
        request.app.state, service_of(request), settings.minimise_seconds, settings.minimise_jobs
    )
