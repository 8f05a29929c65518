"""The stream page's gateway hops: the other capture of the same exchange, and what the
gateway did between the two (`webapp.web.backend.capture.hops`)."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.web.backend.capture.hops import Hop, StreamHops, Through
from webapp.web.http.links import Links, diff_url
from webapp.web.http.query import DEFAULTS


@dataclass(frozen=True, slots=True)
class HopLink:
    """The other capture: its title, its page, its upstream, and the hop diff of the two."""

    title: str
    url: str
    upstream: str
    diff_url: str


@dataclass(frozen=True, slots=True)
class HopPanel:
    """What the page says of the stream's hops."""

    upstream: str
    """This capture's upstream (for an outer capture: the gateway)."""
    inner: tuple[HopLink, ...]
    outer: tuple[HopLink, ...]
    introduced: tuple[str, ...]
    """The quirk codes the gateway introduced (for an outer capture whose inner one reads)."""
    unread: str
    """Why the inner capture does not read ("" when it does, or there is none)."""
    known: bool
    """Whether what the gateway introduced is known (the inner capture reads)."""


def panel(stream_id: str, found: StreamHops, through: Through | None) -> HopPanel | None:
    """The panel (None when the stream has no hop)."""
    if not found.any:
        return None
    inner = tuple(_link(hop, diff_url(hop.stream_id, stream_id)) for hop in found.inner)
    outer = tuple(_link(hop, diff_url(stream_id, hop.stream_id)) for hop in found.outer)
    introduced = () if through is None else through.introduced
    unread = "" if through is None else through.unread
    known = through is not None and through.gateway is not None
    return HopPanel(found.upstream, inner, outer, introduced, unread, known)


def _link(hop: Hop, url: str) -> HopLink:
    return HopLink(hop.title or "Untitled capture", Links(hop.stream_id, DEFAULTS).base,
                   hop.upstream, url)  # fmt: skip
