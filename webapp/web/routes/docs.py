"""The API's /docs page: Swagger UI from the package's own static files, so it works offline.

Swagger UI 5.35.0 (`swagger-ui-dist` on npm, Apache-2.0; its LICENSE and NOTICE are beside it
in `static/`) is vendored like htmx, with its version in the file names.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

DOCS_PATH = "/docs"
SWAGGER_JS = "/static/swagger-ui-bundle-5.35.0.js"
SWAGGER_CSS = "/static/swagger-ui-5.35.0.css"
FAVICON = "/static/favicon.svg"


def docs_page() -> HTMLResponse:
    """Swagger UI on /openapi.json, every asset from /static."""
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title="streamviz API",
        swagger_js_url=SWAGGER_JS,
        swagger_css_url=SWAGGER_CSS,
        swagger_favicon_url=FAVICON,
    )


def docs_csp() -> str:
    """The docs page's policy: scripts from this server, plus its one inline script by hash.

    Styles may be inline because Swagger UI sets style attributes; nothing comes from elsewhere.
    """
    html = bytes(docs_page().body).decode("utf-8")
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    ]
    return (
        f"default-src 'self'; script-src 'self' {' '.join(hashes)}; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
        "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
