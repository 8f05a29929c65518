"""Headers on every response: a strict Content-Security-Policy, nosniff, no referrer, Vary,
HSTS behind TLS (the Host and cross-site checks are the proxy wing's, `webapp.proxy.guard`)."""

from __future__ import annotations

import re

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapp.web.http.htmx import VARY
from webapp.web.http.links import EMBEDDED

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


HSTS = "max-age=31536000"
"""Sent when the public URL is https: browsers then reach the server over TLS alone for a year
(not its subdomains, which may be other people's servers)."""

EMBED_PREFIX = EMBEDDED + "/"
"""The framable view's paths; every other page refuses to be framed."""


_ANY_SITE = re.compile(r"\*|[a-z][a-z0-9+.-]*:(?://\*?)?/?", re.IGNORECASE)
"""`*`, `https:`, `https://*`: sources that let every site (of a scheme) frame the view."""
REFUSAL_CSP = CSP.replace("frame-ancestors 'none'", "frame-ancestors *")
"""The policy of an embed's refusal (`webapp.web.http.framing`): framable by anyone, since it
shows only that the embed is refused and why, so the framing page shows that instead of the
browser's blank error."""


def embed_csp(origins: tuple[str, ...]) -> str:
    """The policy of the embedded view: framable by `origins` alone ('none' when empty)."""
    for origin in origins:
        if not origin or any(c in origin for c in ";,'\"") or any(c.isspace() for c in origin):
            raise ValueError(f"not an origin for frame-ancestors: {origin[:100]!r}")
        if _ANY_SITE.fullmatch(origin):
            raise ValueError(
                f"{origin!r} would let every site frame the embedded view (and put its page "
                "under theirs); name the sites that may, e.g. https://wiki.example.com"
            )
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
        hsts: bool = False,
    ) -> None:
        self.app = app
        self.docs_path = docs_path
        self.docs_csp = docs_csp
        self.embed_csp = embed_csp(embed_origins)
        self.hsts = hsts

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
                if self.hsts:
                    headers["Strict-Transport-Security"] = HSTS
                headers.add_vary_header(VARY)
            await send(message)

        await self.app(scope, receive, send_with_headers)
