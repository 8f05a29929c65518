"""A request body the recording proxy keeps (`--keep-requests`): its keys masked as an upload's."""

from __future__ import annotations

from webapp.core.redact.content import scrub
from webapp.core.redact.text import redact_posted


def mask_request(body: bytes) -> tuple[bytes, tuple[str, ...]]:
    """The body with the values of its members and pairs named like credentials, then what
    `scrub` finds, masked, as an upload's are; the bytes and what was masked, in words. A body
    with nothing masked is returned as it was; bytes that are not UTF-8 are kept as they were."""
    text = body.decode("utf-8", "surrogateescape")
    posted, removed = redact_posted(text)
    masked, more = scrub(posted)
    if not removed and not more:
        return body, ()
    return masked.encode("utf-8", "surrogateescape"), (*removed, *more)
