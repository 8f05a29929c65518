"""The proxy's upstream pool never closes a connection it has given to a request that has not
started on it yet (httpcore 1.0.9's pool does: httpcore issue 1110, a 502 now and then)."""

from __future__ import annotations

import asyncio
import time

import httpcore
import pytest
from httpcore._async.connection_pool import AsyncPoolRequest

from tests.capture.fake import Fake, corpus_pieces, serving
from webapp.proxy.pool import PromiseKeepingPool


async def _promised_then_expired(pool: httpcore.AsyncConnectionPool, url: str) -> bool:
    """Whether the pool's next pass closes a connection it gave a waiting request, once the
    connection's idle time has run out (as it may, between the giving and the request's start)."""
    async with pool:
        await pool.request("POST", url, content=b"{}")  # one idle connection now
        (connection,) = pool.connections
        waiting = AsyncPoolRequest(httpcore.Request("POST", url))
        pool._requests.append(waiting)
        assert pool._assign_requests_to_connections() == []
        assert waiting.connection is connection  # given to the request, still idle
        connection._connection._expire_at = time.monotonic() - 1  # type: ignore[attr-defined]
        closing = pool._assign_requests_to_connections()  # another request came, or went
        pool._requests.remove(waiting)
        await pool._close_connections(closing)
        return connection in closing


@pytest.mark.parametrize(
    ("pool_class", "closes"), [(httpcore.AsyncConnectionPool, True), (PromiseKeepingPool, False)]
)
def test_a_connection_given_to_a_request_is_not_closed_under_it(
    pool_class: type[httpcore.AsyncConnectionPool], closes: bool
) -> None:
    with serving(Fake(script=corpus_pieces("clean-single-call.sse"))) as upstream:
        pool = pool_class(keepalive_expiry=60.0)
        assert (
            asyncio.run(_promised_then_expired(pool, f"{upstream}/v1/chat/completions")) is closes
        )
