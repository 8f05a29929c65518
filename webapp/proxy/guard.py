"""Who may use a server of streamviz: no Host it is not known by (DNS rebinding), no request
from another site's page where one is refused. `streamviz record` serves the proxy alone behind
the Host check; `streamviz serve` puts both checks in front of every route, the proxy's too.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _host(url: str) -> str | None:
    """An origin's host and port (no port when it is the scheme's default), or None."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if port is None or str(port) == _DEFAULT_PORTS[parts.scheme.lower()]:
        return parts.hostname
    return f"{parts.hostname}:{port}"


def normalise_origin(origin: str) -> str:
    """An origin as browsers send it: lower case, no trailing slash."""
    return origin.strip().lower().rstrip("/")


class RefuseCrossSite:
    """ASGI middleware that refuses POST/PUT/PATCH/DELETE sent by another site's page.

    `Sec-Fetch-Site: same-origin` (or `none`, the user's own doing) passes: browsers set it
    and pages cannot. Otherwise the `Origin` must be this server's (its `Host`) or one of
    `allow_origins`; `Origin: null` (what our no-referrer policy makes a browser send when it
    has no Sec-Fetch-Site) and `Sec-Fetch-Site: cross-site`/`same-site` are refused. Requests
    with neither header (curl, scripts) pass: browsers always send one on a post.
    """

    def __init__(self, app: ASGIApp, allow_origins: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = frozenset(normalise_origin(origin) for origin in allow_origins)

    def refusal(self, headers: Headers) -> str | None:
        """Why a request with these headers is refused, or None."""
        origin = headers.get("origin")
        site = headers.get("sec-fetch-site", "").strip().lower()
        if origin is not None and normalise_origin(origin) in self.allowed:
            return None
        if site in ("same-origin", "none"):
            return None
        if origin is not None:
            host = headers.get("host", "")
            own = {_host(f"{scheme}://{host}") for scheme in _DEFAULT_PORTS} - {None}
            if _host(origin) in own:
                return None
            return f"this request comes from the page of another site ({origin[:100]})"
        if site in ("cross-site", "same-site"):
            return "this request comes from the page of another site"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") in UNSAFE_METHODS:
            reason = self.refusal(Headers(scope=scope))
            if reason is not None:
                message = (
                    f"Forbidden: {reason}. streamviz refuses posts from other sites; "
                    "start it with --allow-origins to accept one.\n"
                )
                await PlainTextResponse(message, status_code=403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


LOOPBACK_NAMES = ("localhost", "*.localhost")
"""Names that always reach this machine (RFC 6761), which no other site can own; with any
loopback address (127.0.0.0/8, ::1) they are the Hosts a server answers by default."""
ALWAYS_ALLOWED: tuple[str, ...] = LOOPBACK_NAMES
"""The names allowed whatever the settings (the tests add Starlette's `testserver` here, as
Django's test runner adds it to ALLOWED_HOSTS)."""
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::(?P<port>[0-9]{1,5}))?")


def public_host(public_url: str) -> str | None:
    """The host name of a public URL (`https://streamviz.example/` -> streamviz.example)."""
    try:
        return urlsplit(public_url.strip()).hostname or None
    except ValueError:
        return None


def host_name(header: str | None) -> str | None:
    """The name a `Host` header gives (lower case, brackets and trailing dot off), or None."""
    match = _HOST.fullmatch((header or "").strip())
    if match is None:
        return None
    return match.group("name").strip("[]").rstrip(".").lower() or None


class AllowedHosts:
    """The `Host` names a server answers to: exact names, `*.example.com` (subdomains),
    `.example.com` (the name and its subdomains), `*` (every name: the check off), and always
    the loopback names and addresses."""

    def __init__(self, names: tuple[str, ...]) -> None:
        patterns = {name.strip().lower().rstrip(".") for name in names if name.strip()}
        self.any = "*" in patterns
        self.exact = {p.strip("[]") for p in patterns if not p.startswith(("*.", "."))}
        self.suffixes = tuple(p[1:] if p.startswith("*.") else p for p in patterns
                              if p.startswith(("*.", ".")))  # fmt: skip
        self.apexes = {p[1:] for p in patterns if p.startswith(".")}

    @classmethod
    def of(cls, allowed: tuple[str, ...], public_url: str = "") -> AllowedHosts:
        """The loopback names, the public URL's host and `allowed`."""
        public = public_host(public_url)
        return cls((*ALWAYS_ALLOWED, *((public,) if public else ()), *allowed))

    def allows(self, header: str | None) -> bool:
        """Whether a request with this `Host` header is answered."""
        if self.any:
            return True
        name = host_name(header)
        if name is None:
            return False
        if name in self.exact or name in self.apexes or name.endswith(self.suffixes):
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False


class RefuseUnknownHosts:
    """ASGI middleware that answers 400 to a request whose `Host` the server is not known by.

    A page of another site can rename itself to this server's address (DNS rebinding) and
    then post to it as its own origin, which `RefuseCrossSite` cannot tell from ours; the
    one thing it cannot change is the Host its browser sends. So only the loopback names
    and addresses, the public URL's host and `--allowed-hosts` are answered (as Django's
    ALLOWED_HOSTS and Starlette's TrustedHostMiddleware do), every path and method, the
    recording proxy's too.
    """

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Headers(scope=scope).get("host")
            if not self.hosts.allows(header):
                named = f"the name {header.strip()[:100]!r}" if header else "no name (no Host)"
                message = (
                    f"Bad Request: this server is not known by {named}. A page of another "
                    "site can reach a local server by renaming itself to it (DNS rebinding), "
                    "so streamviz answers only localhost, its loopback addresses and the "
                    "names it was given (--public-url, --allowed-hosts); start it with "
                    "--allowed-hosts NAME to answer another.\n"
                )
                response = PlainTextResponse(message, status_code=400)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
