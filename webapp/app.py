"""The app factory: `create_app(settings)` wires the store, the caches, the routes and headers."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from webapp.settings import Settings
from webapp.web import api, errors, pages
from webapp.web.security import CSP, RefuseCrossSite, SecurityHeaders
from webapp.web.service import Service
from webapp.web.templating import STATIC, make_templates

DOCS_PATH = "/docs"
_CDN = "https://cdn.jsdelivr.net"


def _docs_page() -> HTMLResponse:
    return get_swagger_ui_html(openapi_url="/openapi.json", title="streamviz API")


def _docs_csp() -> str:
    """The docs page's policy: Swagger UI from its CDN, its one inline script by hash."""
    html = bytes(_docs_page().body).decode("utf-8")
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    ]
    return (
        f"default-src 'self'; script-src 'self' {_CDN} {' '.join(hashes)}; "
        f"style-src 'self' {_CDN} 'unsafe-inline'; img-src 'self' data: {_CDN} "
        "https://fastapi.tiangolo.com; connect-src 'self'; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'"
    )


def create_app(settings: Settings) -> FastAPI:
    """A new app on the database at `settings.db_path` (created if missing)."""
    service = Service(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
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
    app.state.templates = make_templates()
    app.add_middleware(RefuseCrossSite, allow_origins=settings.allow_origins)
    app.add_middleware(SecurityHeaders, docs_path=DOCS_PATH, docs_csp=_docs_csp())
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(api.router)
    app.include_router(pages.router)

    @app.get(DOCS_PATH, include_in_schema=False)
    def docs(request: Request) -> HTMLResponse:
        return _docs_page()

    errors.install(app)
    return app


__all__ = ["CSP", "Settings", "create_app"]
