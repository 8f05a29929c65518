"""Headers on every response: a strict Content-Security-Policy, nosniff, no referrer, Vary."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from webapp.web.htmx import VARY

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


class SecurityHeaders:
    """ASGI middleware that adds the same security headers to every response.

    `docs_csp` is the policy for the OpenAPI page alone, which loads Swagger UI from /static
    and runs one inline script (allowed by its hash, not by 'unsafe-inline').
    """

    def __init__(self, app: ASGIApp, docs_path: str | None = None, docs_csp: str = CSP) -> None:
        self.app = app
        self.docs_path = docs_path
        self.docs_csp = docs_csp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.docs_csp if scope.get("path") == self.docs_path else CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = policy
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                headers["X-Frame-Options"] = "DENY"
                headers["Cross-Origin-Opener-Policy"] = "same-origin"
                headers.add_vary_header(VARY)
            await send(message)

        await self.app(scope, receive, send_with_headers)
