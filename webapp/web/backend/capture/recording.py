"""The proxy wing's store recorder as `streamviz serve` runs it: a stream that has ended is
forgotten from this worker's cache (its views were made of the bytes it had while live; other
workers' caches are keyed by the stream's size, so theirs is not taken for the whole stream
either) and indexed for the library's search, in the background and from its trace alone
(`webapp.web.backend.library.indexing.index_ended`)."""

from __future__ import annotations

import logging
from collections.abc import Hashable

from webapp.proxy.forward import Forwarder
from webapp.proxy.mount import forwarder as mounted
from webapp.proxy.store import StoreRecorder
from webapp.settings import Settings
from webapp.web.backend.library.indexing import index_ended
from webapp.web.backend.service import Service

log = logging.getLogger(__name__)


def forget(service: Service, stream_id: str) -> None:
    """Drop what this worker cached of the stream (made from the bytes it had then)."""

    def of_stream(key: Hashable) -> bool:
        return isinstance(key, tuple) and key[1:2] == (stream_id,)

    service.cache.discard(of_stream)


def recorder(service: Service) -> StoreRecorder:
    """A recorder into the service's store that, as each stream ends, forgets and indexes it."""

    def ended(stream_id: str) -> None:
        forget(service, stream_id)
        # In the background thread, not the writer's (other captures' batches wait behind
        # it), and from the trace alone; a failure costs the library its terms until the
        # next start (`Backfill`), nothing else.
        # Its reading and trace are freed in no request's scope: the keeper trims the heap
        # once no other work waits.
        service.later(lambda: index_ended(service, stream_id), f"stream {stream_id}: its index")

    return StoreRecorder(service.storage, ended)


def forwarder(settings: Settings, service: Service) -> Forwarder | None:
    """The forwarder of `settings.upstreams`, recording into the store; None without any."""
    return mounted(settings, lambda: recorder(service))
