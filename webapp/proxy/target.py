"""Where a proxied request goes: the client's path under `/proxy/NAME`, dot segments removed,
kept under the upstream URL's own path (its base, `/openai/v1` in `https://host/openai/v1`).

The path is forwarded with its dot segments removed (RFC 3986 5.2.4), `.` and `..` spelt with
`%2e` too: a server decodes them before it resolves them, so `%2e%2e` is a `..` to it. A path
whose `..` would climb above `/proxy/NAME/` is refused, not clamped: `/proxy/up/../../secret` is
no request for the upstream's `/secret`. Some servers also take an encoded slash or backslash
(`%2f`, `%5c`, `\\`) for a separator, `..;x` for `..` (Tomcat's path parameters) or decode
twice (`%252e`): such a path is forwarded as it was sent (`a%2fb` may be an id) but must stay
under the base however it is read, so the climb is checked in that reading as well (the
classic `..%2f` bypass).
"""

from __future__ import annotations

import re

_DOT = re.compile(r"%2e", re.IGNORECASE)
_LOOSE_DOT = re.compile(r"%(?:25)*2e", re.IGNORECASE)
_LOOSE_SEPARATOR = re.compile(r"%(?:25)*(?:2f|5c)|\\", re.IGNORECASE)
_PARAMETERS = re.compile(r";[^/]*")


class OutsideBase(ValueError):
    """A path whose dot segments would leave the upstream's base path."""


def _resolved(segments: list[str], dot: re.Pattern[str]) -> list[str] | None:
    """The segments with each `.` dropped and each `..` taking the one before it with it (a
    last dot segment leaves an empty one: `a/b/..` is `a/`); None when a `..` has none."""
    out: list[str] = []
    for segment in segments:
        dots = dot.sub(".", segment)
        if dots in (".", ".."):
            if dots == ".." and not out:
                return None
            if dots == "..":
                out.pop()
        else:
            out.append(segment)
    if segments and dot.sub(".", segments[-1]) in (".", ".."):
        out.append("")
    return out


def forwarded_path(rest: str) -> str:
    """The path under `/proxy/NAME` (percent-encoded as sent, "" or starting with "/") without
    its dot segments; OutsideBase when it would leave the upstream's base path, read as sent
    or as a server that decodes more would read it."""
    loose = _LOOSE_SEPARATOR.sub("/", _PARAMETERS.sub("", rest))
    if _resolved(loose.split("/")[1:], _LOOSE_DOT) is None:
        raise OutsideBase(rest)
    segments = _resolved(rest.split("/")[1:], _DOT)
    if segments is None:
        raise OutsideBase(rest)
    return "/" + "/".join(segments) if rest else ""
