"""Secrets out of what the web app stores: HAR files, HTTP dumps and pasted curl commands.

A HAR is redacted in place, span by span (`webapp.core.redact.har`); any other text only in its
header, curl command and comment lines (`webapp.core.redact.text`). Secrets are the values of
credential headers (Authorization, Cookie, Set-Cookie, api-key and the like, anything named like
a token, secret or API key), of HAR cookies, of credential query parameters (`key`, `api_key`,
`token`, `access_token`, ...), and of JSON members and form pairs so named in a posted body or
an SSE comment line. Every other byte stays as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from webapp.core.redact.har import redact_har
from webapp.core.redact.rules import REDACTED
from webapp.core.redact.text import redact_text

__all__ = ["REDACTED", "Redaction", "is_har", "redact"]


@dataclass(frozen=True, slots=True)
class Redaction:
    """The text with secrets replaced, and what was removed, in words."""

    text: str
    removed: tuple[str, ...] = ()


_HAR_START = re.compile(r'\s*\{\s*"log"\s*:')


def is_har(text: str) -> bool:
    """Whether the text is redacted as a HAR file (a JSON object with `log` and `entries`)."""
    stripped = text.lstrip("\ufeff \t\r\n")
    return _HAR_START.match(stripped) is not None or (
        stripped.startswith("{") and '"log"' in text and '"entries"' in text
    )


def redact(text: str) -> Redaction:
    """Replace the secrets in a HAR file, HTTP dump or curl command by "[redacted]"."""
    if is_har(text):
        redacted, removed = redact_har(text)
    else:
        redacted, removed = redact_text(text)
    if not removed:
        return Redaction(text)
    return Redaction(redacted, tuple(removed))
