"""The proxy's connections to its upstreams: httpx's transport on httpcore's pool, kept from
closing a connection it has promised to a request.

httpcore 1.0.9's pool (`AsyncConnectionPool._assign_requests_to_connections`), at each pass,
closes the idle connections that have expired and, when it holds more connections than it
keeps, idle ones; it then gives idle connections to waiting requests. A connection it gave
to a request stays idle until that request starts on it, so a later pass (another request
coming or going) may pick it to close; the close is awaited outside the pool's lock, and if
the request has started meanwhile, its socket is closed under it: the request fails with a
ReadError that says nothing, and the proxy's client gets a 502 (httpcore issue 1110; the load
bench met it in 1 to 3 of every 100 streams with 50 at once). `PromiseKeepingPool` hides the
connections promised to requests from each pass, so no pass closes or gives them again.
"""

from __future__ import annotations

from typing import Any

import httpcore
import httpx


class PromiseKeepingPool(httpcore.AsyncConnectionPool):
    """httpcore's pool, whose passes leave alone the connections given to requests."""

    def _assign_requests_to_connections(self) -> list[Any]:
        promised = {id(r.connection) for r in self._requests if r.connection is not None}
        every = self._connections
        self._connections = [c for c in every if id(c) not in promised]
        try:
            closing: list[Any] = super()._assign_requests_to_connections()
        finally:
            after = self._connections
            staying = {id(c) for c in after} | promised
            before = {id(c) for c in every}
            added = [c for c in after if id(c) not in before]
            self._connections = [c for c in every if id(c) in staying] + added
        return closing


class UpstreamTransport(httpx.AsyncHTTPTransport):
    """httpx's transport (no settings from the environment) on a `PromiseKeepingPool`."""

    def __init__(self, limits: httpx.Limits) -> None:
        super().__init__(trust_env=False, limits=limits)
        self._pool = PromiseKeepingPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )
