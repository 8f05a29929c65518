"""The library of streams (`/streams`, `GET /api/streams`): live captures first, then newest
first, searched by title.

Every stream is listed only on a server started with `--list-streams` (a team instance behind
its own access control): otherwise an id is the only key to a stream, and a list of them would
hand every stream to anyone. Without it the library lists the streams this browser stored and,
on a server that records (`--upstream`), every stream its proxy captured: a proxy is its
user's own instance, and what went through it is theirs (`--unlisted-captures` leaves them
out: each is then found by the `streamviz-stream-id` its response carried).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from webapp.settings import Settings
from webapp.storage.team import Library, Listed
from webapp.web.backend.library.holdings import current
from webapp.web.backend.library.indexing import filled_stats
from webapp.web.backend.service import Service
from webapp.web.backend.team.notes import clean_line
from webapp.web.backend.team.owners import OWNED_AT_MOST, SEEN_AT_MOST, here_because, owned, seen
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS, parse_int

PER_PAGE = 20
MAX_SEARCH = 200


@dataclass(frozen=True, slots=True)
class Row:
    """One stream in the library, with its numbers."""

    listed: Listed
    stats: dict[str, Any]
    """chunks, calls, errors, warnings; empty while the stream is a live capture."""
    url: str
    here: tuple[str, ...] = ()
    """Why this browser's library holds it: stored, opened, noted, renamed."""

    @property
    def title(self) -> str:
        """The title, or "Untitled stream"."""
        return self.listed.title or "Untitled stream"

    def to_json(self) -> dict[str, Any]:
        """The row as `GET /api/streams` answers it."""
        listed = self.listed
        return {
            "id": listed.id,
            "title": listed.title,
            "created": listed.created,
            "input_format": listed.input_format,
            "format": listed.format,
            "notes": listed.notes,
            "url": self.url,
            "live": listed.live,
            "capture": listed.capture or None,
            **self.stats,
            "here": list(self.here),
        }


@dataclass(frozen=True, slots=True)
class Shelf:
    """One page of the library, the search, and why it lists what it lists."""

    rows: tuple[Row, ...]
    total: int
    page: int
    pages: int
    search: str
    everything: bool
    why: str

    def url(self, page: int) -> str:
        """The library page `page` under the same search."""
        query = {"q": self.search} if self.search else {}
        if page > 1:
            query["page"] = str(page)
        return "/streams" + (f"?{urlencode(query)}" if query else "")

    def to_json(self) -> dict[str, Any]:
        """The page as `GET /api/streams` answers it."""
        return {
            "streams": [row.to_json() for row in self.rows],
            "total": self.total,
            "page": self.page,
            "pages": self.pages,
            "scope": "all" if self.everything else "this-browser",
            "why": self.why,
        }


def lists_captures(settings: Settings) -> bool:
    """Whether the library lists every captured stream: on a server that records, unless
    `--unlisted-captures` (with `--list-streams` every stream is listed anyway)."""
    return bool(settings.upstreams) and settings.list_captures


def _kept(listed: Listed) -> dict[str, Any] | None:
    """The row's kept numbers, if this version made them (else they are made again)."""
    return listed.stats if current(listed.stats) else None


def _page(stream_id: str) -> str:
    return Links(stream_id, DEFAULTS).base


def shelf(request: Request, service: Service, settings: Settings) -> Shelf:
    """The library page the request asks for (`q`: search in titles, `page`: from 1)."""
    query = request.query_params
    search = clean_line(query.get("q", ""), "q", MAX_SEARCH, required=False)
    page = max(1, parse_int(query.get("page"), "page", 1, 1_000_000))
    mine = [*reversed(owned(request)), *reversed(seen(request))]
    ids = None if settings.list_streams else list(dict.fromkeys(mine))
    captures = lists_captures(settings)
    found = Library(service.storage).page(
        search=search, ids=ids, captures=captures, limit=PER_PAGE, offset=(page - 1) * PER_PAGE
    )
    rows = tuple(
        Row(
            listed,
            {} if listed.live else _kept(listed) or filled_stats(service, listed.id),
            Links(listed.id, DEFAULTS).base,
            here_because(request, listed.id),
        )
        for listed in found.rows
    )
    if settings.list_streams:
        why = "This server lists every stream it keeps (it runs with --list-streams)."
    elif captures:
        why = (
            "This server records: it lists every stream its proxy captured, live ones first, "
            "and the streams this browser stored (remembered in a cookie, the last 40 at "
            "most). Any other stream's link is the only key to it."
        )
    else:
        why = (
            "This server does not list streams: a stream's link is the only key to it. "
            "These are the streams this browser stored, opened, noted or renamed (remembered "
            f"in cookies: the last {OWNED_AT_MOST} stored, the last {SEEN_AT_MOST} others)."
        )
    pages = max(1, -(-found.total // PER_PAGE))
    return Shelf(rows, found.total, page, pages, search, settings.list_streams, why)
