"""The one place that decides whether a request wants a partial (htmx) or a full page."""

from __future__ import annotations

from starlette.requests import Request

VARY = "HX-Request, HX-Request-Type, HX-History-Restore-Request"
"""What a page's answer depends on besides its URL; sent on every response."""


def wants_partial(request: Request) -> bool:
    """True for an htmx swap request; False for a browser load and for htmx 4's history restore.

    htmx 4 restores history by fetching the URL again with `HX-History-Restore-Request: true`
    and expects a full page then; `HX-Request-Type: full` asks for a full page too.
    """
    headers = request.headers
    return (
        headers.get("hx-request") == "true"
        and headers.get("hx-history-restore-request") != "true"
        and headers.get("hx-request-type") != "full"
    )


def from_htmx(request: Request) -> bool:
    """True for any request htmx made, a swap that selects from a whole page (`hx-select`:
    `HX-Request-Type: full`) included; False for a browser's own load or a history restore."""
    headers = request.headers
    return (
        headers.get("hx-request") == "true" and headers.get("hx-history-restore-request") != "true"
    )
