"""`/proxy/NAME/...`: the recording proxy mounted in front of an app (the web's, or
`streamviz record`'s 404 for every other path).

It is ASGI middleware, not a FastAPI route, so that a request's body and its response stream
through untouched (no form parsing, no error pages). Without `--upstream` every `/proxy/` URL
answers 404 and nothing is forwarded. A page of another site (an `Origin` or `Sec-Fetch-Site`
that says so, as `RefuseCrossSite` judges posts) is refused for every method: API clients send
neither header and pass.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from webapp.proxy.forward import (
    Forwarder,
    Limits,
    Recorder,
    answer,
    hide_queries_in_logs,
    parse_upstreams,
)
from webapp.proxy.guard import RefuseCrossSite
from webapp.proxy.twin import Twins
from webapp.settings import Settings

PREFIX = "/proxy/"


def split_path(scope: Scope) -> tuple[str, str] | None:
    """(upstream name, the rest of the path, percent-encoded as sent), or None off the prefix."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else str(scope.get("path", ""))
    path = path.split("?", 1)[0]
    if not path.startswith(PREFIX):
        return None
    name, slash, rest = path[len(PREFIX) :].partition("/")
    return name, slash + rest


def limits(settings: Settings) -> Limits:
    """The proxy's bounds from the settings."""
    return Limits(
        connect_timeout=settings.proxy_connect_timeout,
        read_timeout=settings.proxy_timeout,
        queue_chunks=settings.proxy_queue_chunks,
        batch_bytes=settings.capture_batch_bytes,
        batch_ms=settings.capture_batch_ms,
        drain_s=settings.proxy_drain_s,
        stored_bytes=settings.max_bytes,
        keep_requests=settings.keep_requests,
    )


def forwarder(settings: Settings, recorder: Callable[[], Recorder]) -> Forwarder | None:
    """The forwarder of `settings.upstreams`, recording with what `recorder()` makes; None
    without any upstream (and then no recorder is made)."""
    if not settings.upstreams:
        return None
    hide_queries_in_logs()
    upstreams = parse_upstreams(settings.upstreams)
    made = Forwarder(upstreams, recorder(), limits(settings))
    if settings.twin and made.recorder is not None:
        made.twins = Twins(made.recorder, made.limits, made.writers)
    return made


class ProxyRoutes:
    """Sends `/proxy/NAME/...` to the forwarder (or answers 404 without one), the rest on."""

    def __init__(
        self, app: ASGIApp, forwarder: Forwarder | None, allow_origins: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.forwarder = forwarder
        self.origins = RefuseCrossSite(app, allow_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        where = split_path(scope) if scope["type"] == "http" else None
        if where is None:
            await self.app(scope, receive, send)
            return
        if self.forwarder is None:
            message = "this server forwards nothing: start it with `streamviz serve --upstream URL`"
            await answer(send, 404, message, "no_upstream")
            return
        refusal = self.origins.refusal(Headers(scope=scope))
        if refusal is not None:
            message = f"Forbidden: {refusal}; --allow-origins lets a site use the proxy"
            await answer(send, 403, message, "cross_site")
            return
        await self.forwarder.handle(*where, scope, receive, send)
