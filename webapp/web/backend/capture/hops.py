"""A captured stream's gateway hops as the pages, the API and the verdict use them.

`hops_of` finds the capture's inner and outer hops (`webapp.storage.hops`) with what each
capture is (its upstream, its title); for a stream whose inner hop is known, `Through` says
which gateway it came through and which quirks the gateway introduced (those of this stream
that the stream it received has not: `webapp.triage.verdict.Gateway`), or why that cannot be
told (the inner stream does not read: the reader's words, never an error page).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from webapp.core.options import Options
from webapp.storage.capture import Capture, Captures
from webapp.storage.hops import HopLinks, Hops
from webapp.triage.verdict import Gateway
from webapp.web.backend.service import NotFound, Service, Unreadable

ADR = Options("adr-0019", "client")
"""The options a hop's quirks are read under (quirks are the same under every policy)."""


@dataclass(frozen=True, slots=True)
class Hop:
    """One linked capture: its id, its upstream's name, its title."""

    stream_id: str
    upstream: str
    title: str


@dataclass(frozen=True, slots=True)
class Through:
    """The gateway a stream came through (its upstream) and what it did, or why not known."""

    gateway: Gateway | None
    """None when the inner stream does not read (`unread` says why)."""
    inner: Hop
    unread: str = ""
    introduced: tuple[str, ...] = ()
    """The gateway's quirk codes, in the order this stream's quirks were found."""


@dataclass(frozen=True, slots=True)
class StreamHops:
    """A capture's hops: the inner (what its upstream, a gateway, received), the outer."""

    hops: Hops
    inner: tuple[Hop, ...]
    outer: tuple[Hop, ...]
    upstream: str
    """This capture's upstream ("" for a stream that was not captured)."""

    @property
    def any(self) -> bool:
        return bool(self.inner or self.outer)


def hops_of(service: Service, stream_id: str) -> StreamHops:
    """The stream's hops, each with what it is (none for a stream that is not a capture)."""
    return hops_around(service, stream_id, Captures(service.storage).get(stream_id))


def hops_around(service: Service, stream_id: str, mine: Capture | None) -> StreamHops:
    """As `hops_of`, for a caller that has read the stream's capture row (`mine`, None when
    it is not a capture: it has no hops, and nothing more is read)."""
    if mine is None:
        return StreamHops(Hops(), (), (), "")
    storage = service.storage
    hops = HopLinks(storage).of(stream_id)
    captures = Captures(storage)

    def hop(found: str) -> Hop:
        capture = captures.get(found)
        info = storage.info(found)
        upstream = "" if capture is None else capture.facts.upstream
        return Hop(found, upstream, "" if info is None else info.title)

    return StreamHops(
        hops,
        tuple(hop(found) for found in hops.inner),
        tuple(hop(found) for found in hops.outer),
        mine.facts.upstream,
    )


def through(service: Service, found: StreamHops, codes: Iterable[str]) -> Through | None:
    """The gateway a stream (whose quirk codes are `codes`, in the order found) came through,
    when its inner hop is known; None when it has none (or the inner stream was deleted
    meanwhile)."""
    if not found.inner:
        return None
    inner = found.inner[0]
    try:
        view = service.view(inner.stream_id, ADR)
    except NotFound:
        return None
    except Unreadable as error:
        return Through(None, inner, str(error))
    contract = view.trace.contract
    if contract is None:
        return Through(None, inner, "its quirks were not read")
    introduced = tuple(dict.fromkeys(code for code in codes if code not in contract.codes))
    gateway = Gateway(found.upstream or "the gateway", frozenset(introduced), inner.stream_id)
    return Through(gateway, inner, introduced=introduced)


def gateway_of(service: Service, stream_id: str, codes: frozenset[str]) -> Gateway | None:
    """The gateway to judge the stream's quirks by (`webapp.triage.verdict.judge`), or None."""
    found = through(service, hops_of(service, stream_id), codes)
    return None if found is None else found.gateway
