"""Who owns what: a stream's delete token, and the cookies that let a browser delete what it
stored, find what it opened, and edit the notes it left.

A stream's delete token is given once, to whoever stored it; the store keeps only its SHA-256.
A browser that stored streams keeps their ids and tokens in one cookie (`OWNER_COOKIE`,
HttpOnly, SameSite=Lax, Secure when the server is reached over https), bounded to the last
`OWNED_AT_MOST`; that cookie is how the page knows to offer "Delete". The streams it opened,
noted or renamed are in another (`SEEN_COOKIE`, ids only, the last `SEEN_AT_MOST`): with the
first, what its library holds. Its notes it may edit and delete with its author token
(`AUTHOR_COOKIE`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response

OWNER_COOKIE = "streamviz_own"
OWNED_AT_MOST = 40
"""Streams one browser's cookie remembers (about 60 bytes each: under the 4 KiB a cookie has)."""
SEEN_COOKIE = "streamviz_seen"
SEEN_AT_MOST = 100
"""Streams opened, noted or renamed that the library cookie remembers (about 30 bytes each)."""
SEEN_HOW = {"o": "opened", "n": "noted", "r": "renamed"}
AUTHOR_COOKIE = "streamviz_author"
"""The token that may edit or delete the notes this browser left (one for all of them)."""
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Forbidden(PermissionError):
    """No token, or not this stream's token (a 403; 401 when none was sent)."""


def new_token() -> str:
    """A delete token: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def token_hash(token: str) -> str:
    """What the store keeps of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_matches(token: str, stored: str | None) -> bool:
    """Whether `token` is the one whose hash is `stored` (never for a stream without one)."""
    return bool(stored) and hmac.compare_digest(token_hash(token), stored or "")


def bearer(request: Request) -> str | None:
    """The token of an `Authorization: Bearer ...` header, or None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


# The owner cookie: "id:token.id:token...", newest last.


def owned(request: Request) -> dict[str, str]:
    """The streams this browser stored: id -> delete token, oldest first."""
    found: dict[str, str] = {}
    for pair in request.cookies.get(OWNER_COOKIE, "").split("."):
        stream_id, _, token = pair.partition(":")
        if _ID.fullmatch(stream_id) and _ID.fullmatch(token):
            found[stream_id] = token
    return dict(list(found.items())[-OWNED_AT_MOST:])


def secure(request: Request) -> bool:
    """Whether cookies are Secure: the public URL is https, or this request came over TLS."""
    public: str = request.app.state.settings.public_url
    return public.lower().startswith("https://") or request.url.scheme == "https"


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    """One of the team's cookies (HttpOnly, SameSite=Lax, Secure over https, 400 days);
    dropped when empty."""
    tls = secure(request)
    if not value:
        response.delete_cookie(name, path="/", httponly=True, samesite="lax", secure=tls)
        return
    response.set_cookie(
        name,
        value,
        max_age=400 * 24 * 3600,
        path="/",
        httponly=True,
        samesite="lax",
        secure=tls,
    )


def _set_owned(request: Request, response: Response, streams: Mapping[str, str]) -> None:
    kept = list(streams.items())[-OWNED_AT_MOST:]
    _set_cookie(request, response, OWNER_COOKIE, ".".join(f"{sid}:{token}" for sid, token in kept))


def remember(request: Request, response: Response, stream_id: str, token: str) -> None:
    """Add a stream this browser stored to its cookie."""
    streams = owned(request)
    streams.pop(stream_id, None)
    streams[stream_id] = token
    _set_owned(request, response, streams)


def hand_over(request: Request, response: Response, old_id: str, new_id: str) -> None:
    """Move a token in the browser's cookie from one id to another (a minimise job's, to the
    stream it made); with no `new_id`, drop it."""
    streams = owned(request)
    token = streams.pop(old_id, None)
    if token is None:
        return
    if new_id:
        streams[new_id] = token
    _set_owned(request, response, streams)


def forget(request: Request, response: Response, stream_id: str) -> None:
    """Take a deleted stream out of the browser's cookies."""
    streams = owned(request)
    if streams.pop(stream_id, None) is not None:
        _set_owned(request, response, streams)
    visited = seen(request)
    if visited.pop(stream_id, None) is not None:
        _set_seen(request, response, visited)


# The library cookie: the streams this browser opened, noted or renamed, "id:onr.id:o...",
# the most recent last; each with what it did (`SEEN_HOW`'s letters).


def seen(request: Request) -> dict[str, str]:
    """The stored streams this browser opened, noted or renamed: id -> letters, oldest first."""
    found: dict[str, str] = {}
    for pair in request.cookies.get(SEEN_COOKIE, "").split("."):
        stream_id, _, how = pair.partition(":")
        letters = "".join(letter for letter in SEEN_HOW if letter in how)
        if _ID.fullmatch(stream_id) and letters:
            found[stream_id] = letters
    return dict(list(found.items())[-SEEN_AT_MOST:])


def _set_seen(request: Request, response: Response, streams: Mapping[str, str]) -> None:
    kept = list(streams.items())[-SEEN_AT_MOST:]
    _set_cookie(request, response, SEEN_COOKIE, ".".join(f"{sid}:{how}" for sid, how in kept))


def saw(request: Request, response: Response, stream_id: str, how: str) -> None:
    """Remember in the browser that it opened ("o"), noted ("n") or renamed ("r") a stored
    stream, so that its library holds it; sends the cookie only when that is news."""
    if not _ID.fullmatch(stream_id) or how not in SEEN_HOW:
        return  # a built-in example is in no library
    visited = seen(request)
    letters = visited.get(stream_id, "")
    if how in letters and list(visited)[-1:] == [stream_id]:
        return  # the newest already, and for this: nothing to say
    visited.pop(stream_id, None)
    visited[stream_id] = "".join(letter for letter in SEEN_HOW if letter in letters + how)
    _set_seen(request, response, visited)


def here_because(request: Request, stream_id: str) -> tuple[str, ...]:
    """Why a stream is in this browser's library, in words: stored, opened, noted, renamed."""
    how = seen(request).get(stream_id, "")
    stored = ("stored",) if stream_id in owned(request) else ()
    return (*stored, *(SEEN_HOW[letter] for letter in SEEN_HOW if letter in how))


# Note authors: a browser that leaves a note gets one author token (`AUTHOR_COOKIE`); each of
# its notes keeps the token's hash, and only that token may edit or delete the note (and the
# stream's delete token may delete any note of its stream). Notes left before have no author
# token: only the stream's owner may delete them, no one may edit them.


def author_token(request: Request) -> str | None:
    """This browser's author token, or None when it left no note yet."""
    token = request.cookies.get(AUTHOR_COOKIE, "")
    return token if _ID.fullmatch(token) else None


def keep_author(request: Request, response: Response, token: str) -> None:
    """Give the browser its author token."""
    _set_cookie(request, response, AUTHOR_COOKIE, token)


def may_edit_note(token: str | None, author_hash: str | None) -> bool:
    """Whether `token` is the author token of the note whose hash is `author_hash`."""
    return token is not None and token_matches(token, author_hash)


def may_delete_note(
    token: str | None, author_hash: str | None, owner: str | None, delete_hash: str | None
) -> bool:
    """Whether the note's author (`token`) or the stream's owner (`owner`, its delete token)
    is asking."""
    return may_edit_note(token, author_hash) or (
        owner is not None and token_matches(owner, delete_hash)
    )
