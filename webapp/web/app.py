"""The app factory: `create_app(settings)` wires the store, the caches, the routes and headers.

`create_app_from_env` is the same for `uvicorn --factory`, which `streamviz serve --workers N`
uses: each worker process reads its settings from `STREAMVIZ_*` environment variables.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from webapp.proxy.forward import Forwarder
from webapp.proxy.guard import AllowedHosts, RefuseCrossSite, RefuseUnknownHosts
from webapp.proxy.mount import ProxyRoutes
from webapp.proxy.replay import ReplayRoutes
from webapp.proxy.store import StoreRecorder
from webapp.settings import Settings
from webapp.tuning import serving
from webapp.web.backend.capture import recording
from webapp.web.backend.capture.live import Pace
from webapp.web.backend.intake.ingest import UploadSlots
from webapp.web.backend.jobs.minimise import interrupt_orphans
from webapp.web.backend.library.indexing import Backfill
from webapp.web.backend.memory.inflight import RequestScope
from webapp.web.backend.service import Service
from webapp.web.backend.team.retention import Retention
from webapp.web.http.links import EMBEDDED, EXAMPLE, STORED
from webapp.web.http.security import CSP, SecurityHeaders
from webapp.web.http.templating import STATIC, make_templates, warm
from webapp.web.routes import (
    api,
    capture,
    clients,
    embed,
    errors,
    home,
    pages,
    play_api,
    share,
    teach,
    team_api,
    triage,
)
from webapp.web.routes import diff as diff_routes
from webapp.web.routes import minimise as minimise_routes
from webapp.web.routes.docs import DOCS_PATH, docs_csp, docs_page
from webapp.web.routes.replay import StoredReplays


def create_app(settings: Settings) -> FastAPI:
    """A new app on the store `settings.db` names (created and migrated if needed)."""
    service = Service(settings)
    retention = Retention(service, settings.retention_days)
    backfill = Backfill(service)
    forwarder = recording.forwarder(settings, service)

    recorder = None if forwarder is None else forwarder.recorder

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with serving():  # the process's tuning (webapp.tuning), before the worker threads start
            warm(app.state.templates)
            try:
                async with _beside(service, retention, backfill, recorder, settings):
                    yield
                if forwarder is not None:
                    await forwarder.aclose()
                clients = getattr(app.state, "clients", None)
                if clients is not None:  # the lenses' threads end before the store closes
                    await asyncio.to_thread(clients.close, settings.lens_timeout + 5)
            finally:
                service.close()

    app = FastAPI(
        title="streamviz",
        summary="See how a streamed chat-completions tool call is assembled, fragment by fragment.",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.service = service
    app.state.pace = Pace(settings.live_share, settings.stall_ms)
    app.state.retention = retention
    app.state.backfill = backfill
    app.state.uploads = UploadSlots(settings.max_uploads)
    app.state.templates = make_templates()
    app.state.templates.env.globals["retention_days"] = settings.retention_days
    _middleware(app, settings, forwarder, service)
    _routes(app)
    errors.install(app)
    return app


@asynccontextmanager
async def _beside(
    service: Service,
    retention: Retention,
    backfill: Backfill,
    recorder: object,
    settings: Settings,
) -> AsyncIterator[None]:
    """What a worker does beside its requests, for as long as it serves: retention's sweeps,
    the search terms of streams stored before there were any, and the end of the minimise
    jobs and the captures (`recorder`'s, when it is the store's) whose process stopped."""
    sweeping = await retention.start()
    backfill.start()
    await asyncio.to_thread(interrupt_orphans, service)
    watching = None
    if isinstance(recorder, StoreRecorder):  # the captures of a sibling worker that died
        watching = asyncio.ensure_future(recorder.sweeping(settings.capture_sweep_s))
    try:
        yield
    finally:
        if watching is not None:
            watching.cancel()
        await backfill.stop()
        if sweeping is not None:
            sweeping.cancel()


def _middleware(
    app: FastAPI, settings: Settings, forwarder: Forwarder | None, service: Service
) -> None:
    """The layers every request passes, the last added first: security headers, the host
    check, the cross-site check, the request's scope, then the replay and the recording proxy."""
    app.add_middleware(ProxyRoutes, forwarder=forwarder, allow_origins=settings.allow_origins)
    replays = StoredReplays(service)
    app.add_middleware(ReplayRoutes, library=replays, allow_origins=settings.allow_origins)
    app.add_middleware(RequestScope, done=lambda: service.heavy_done)
    app.add_middleware(RefuseCrossSite, allow_origins=settings.allow_origins)
    hosts = AllowedHosts.of(settings.allowed_hosts, settings.public_url)
    app.add_middleware(RefuseUnknownHosts, hosts=hosts)  # before any route, the proxy's too
    app.add_middleware(
        SecurityHeaders,
        docs_path=DOCS_PATH,
        docs_csp=docs_csp(),
        embed_origins=settings.embed_origins,
        hsts=settings.public_url.lower().startswith("https://"),
    )


def _routes(app: FastAPI) -> None:
    """The static files, every router, and the OpenAPI page."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(api.router)
    app.include_router(clients.api_router, prefix="/api")
    app.include_router(play_api.router)
    app.include_router(team_api.router)
    app.include_router(triage.router)
    app.include_router(minimise_routes.router)
    app.include_router(minimise_routes.api_router)
    app.include_router(home.router)
    for mount in (STORED, EXAMPLE):  # one router for a stream's pages, an example's too
        app.include_router(pages.router, prefix=mount)
        app.include_router(clients.router, prefix=mount)
        app.include_router(share.router, prefix=mount)
        app.include_router(embed.router, prefix=EMBEDDED + mount)
    app.include_router(teach.router)
    app.include_router(capture.router)
    app.include_router(diff_routes.router)
    app.include_router(diff_routes.api_router)

    app.add_api_route(DOCS_PATH, _docs, include_in_schema=False)


def _docs(request: Request) -> HTMLResponse:
    return docs_page()


def create_app_from_env() -> FastAPI:
    """A new app configured by `STREAMVIZ_*` environment variables (see `Settings.from_env`)."""
    return create_app(Settings.from_env())


__all__ = ["CSP", "Settings", "create_app", "create_app_from_env"]
