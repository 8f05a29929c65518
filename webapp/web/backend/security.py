"""Headers on every response (a strict Content-Security-Policy, nosniff, no referrer, Vary),
and no cross-site form posts."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapp.web.htmx import VARY
from webapp.web.links import EMBEDDED

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


EMBED_PREFIX = EMBEDDED + "/"
"""The framable view's paths; every other page refuses to be framed."""


REFUSAL_CSP = CSP.replace("frame-ancestors 'none'", "frame-ancestors *")
"""The policy of an embed's refusal (`webapp.web.framing`): framable by anyone, since it
shows only that the embed is refused and why, so the framing page shows that instead of the
browser's blank error."""


def embed_csp(origins: tuple[str, ...]) -> str:
    """The policy of the embedded view: framable by `origins` alone ('none' when empty)."""
    for origin in origins:
        if not origin or any(c in origin for c in ";,'\"") or any(c.isspace() for c in origin):
            raise ValueError(f"not an origin for frame-ancestors: {origin[:100]!r}")
    ancestors = " ".join(origins) if origins else "'none'"
    return CSP.replace("frame-ancestors 'none'", f"frame-ancestors {ancestors}")


class SecurityHeaders:
    """ASGI middleware that adds the same security headers to every response.

    `docs_csp` is the policy for the OpenAPI page alone, which loads Swagger UI from /static
    and runs one inline script (allowed by its hash, not by 'unsafe-inline'). Pages under
    `/embed/` may be framed by `embed_origins` (none by default) and have no X-Frame-Options;
    an embed's refusal answers with `REFUSAL_CSP`, which it sets itself and is kept.
    """

    def __init__(
        self,
        app: ASGIApp,
        docs_path: str | None = None,
        docs_csp: str = CSP,
        embed_origins: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.docs_path = docs_path
        self.docs_csp = docs_csp
        self.embed_csp = embed_csp(embed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        embedded = path.startswith(EMBED_PREFIX)
        policy = self.docs_csp if path == self.docs_path else CSP
        if embedded:
            policy = self.embed_csp

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                refused = embedded and headers.get("content-security-policy") == REFUSAL_CSP
                headers["Content-Security-Policy"] = REFUSAL_CSP if refused else policy
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                if not embedded:
                    headers["X-Frame-Options"] = "DENY"
                headers["Cross-Origin-Opener-Policy"] = "same-origin"
                headers.add_vary_header(VARY)
            await send(message)

        await self.app(scope, receive, send_with_headers)


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
