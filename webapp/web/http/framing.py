"""Who frames an embed: a refusal the framing page can see, instead of the browser's blank one.

An embed (`/embed/...`) may be framed only by the origins of `--embed-origins` (CSP
`frame-ancestors`). A browser that frames it from another origin shows its own "refused to
connect" error, with nothing to say what would allow it. So when a request is a frame's load
(`Sec-Fetch-Dest: iframe`) and its parent's origin (the `Referer` browsers send by default,
`strict-origin-when-cross-origin`) is one that is not allowed, or no origin is allowed at all,
the embed routes answer a short page that says so and names the flag, framable by anyone: it
shows nothing of the stream, only the refusal and a link that opens the stream in a new tab.
When the parent cannot be told (no Referer) and some origins are allowed, the embed is served
and the browser decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ORIGIN_SHOWN = 100
"""The most characters of a parent's origin a refusal repeats."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A frame's load the CSP would refuse, and from where (None: the parent is unknown)."""

    origin: str | None
    allowed: tuple[str, ...] = ()
    """The origins allowed now."""

    @property
    def origins(self) -> str:
        """The origins that would allow it: those allowed now and the parent's."""
        return " ".join((*self.allowed, self.origin or "https://your-site.example"))

    @property
    def flag(self) -> str:
        """The option that would allow it."""
        return f"--embed-origins '{self.origins}'"


def origin_of(url: str | None) -> str | None:
    """`scheme://host[:port]` of a URL as browsers write an origin (lower case, no default
    port); None when it has none."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = parts.hostname if port in (None, default) else f"{parts.hostname}:{port}"
    shown = f"{parts.scheme}://{host}".lower()
    return shown[:ORIGIN_SHOWN]


def _matches(source: str, origin: str) -> bool | None:
    """Whether a `frame-ancestors` source allows `origin`; None when this cannot be told here
    (a form this module does not read: the browser is left to decide)."""
    source = source.lower().rstrip("/")
    scheme, _, rest = origin.partition("://")
    if source == origin:
        return True
    if source.endswith(":") and "/" not in source:  # a scheme source: `https:`
        return source == f"{scheme}:"
    if "://" not in source:
        return None  # a host without its scheme: matched against the embed's own scheme
    wanted_scheme, _, wanted = source.partition("://")
    if wanted_scheme != scheme:
        return False
    if wanted.startswith("*."):
        host = rest.split(":", 1)[0]
        return host.endswith(wanted[1:].split(":", 1)[0]) if ":" not in wanted else None
    if "*" in wanted or "/" in wanted:
        return None
    return wanted == rest


def refusal(headers: Mapping[str, str], allowed: tuple[str, ...]) -> Refusal | None:
    """The refusal a frame's load gets, or None (not a frame, or a parent that may frame)."""
    if headers.get("sec-fetch-dest", "").lower() != "iframe":
        return None
    parent = origin_of(headers.get("referer"))
    if parent is None:
        return Refusal(None, allowed) if not allowed else None
    verdicts = [_matches(source, parent) for source in allowed]
    if any(verdict is not False for verdict in verdicts):
        return None  # allowed, or a source this module cannot judge
    return Refusal(parent, allowed)
