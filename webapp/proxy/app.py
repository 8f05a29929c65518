"""The recording proxy as an app of its own, as `streamviz record` serves it: no pages.

`/proxy/NAME/...` is forwarded (`webapp.proxy.mount`), any other path answered 404, and a
`Host` the server is not known by 400, as `streamviz serve` answers it (`webapp.proxy.guard`).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from webapp.proxy.forward import Forwarder, answer, lifespan
from webapp.proxy.guard import AllowedHosts, RefuseUnknownHosts
from webapp.proxy.mount import ProxyRoutes


def recording_app(forwarder: Forwarder, hosts: AllowedHosts) -> ASGIApp:
    """An ASGI app of the proxy alone: `/proxy/NAME/...` forwarded, anything else a 404, and
    a Host not among `hosts` (`AllowedHosts`) a 400, as `serve` answers it."""

    async def elsewhere(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send, forwarder.aclose)
        elif scope["type"] == "http":
            await answer(send, 404, "streamviz record serves only /proxy/NAME/...", "not_found")

    return RefuseUnknownHosts(ProxyRoutes(elsewhere, forwarder), hosts)
