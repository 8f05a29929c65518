"""What upstream's client hands the tool: its own parse of a call's final arguments text.

pi-ai parses the finished text once (`parseToolCallArguments`): blank text gives `{}`; text
that `JSON.parse` refuses is tried again after a repair that escapes raw control characters
inside strings and doubles backslashes that start no valid escape; anything that still fails,
or parses to something other than an object, gives `{}` and an error message. A user sees
"get_weather would be called with {}" when that is what would happen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from webapp.core.jsoncheck import loads

_VALID_ESCAPES = frozenset('"\\/bfnrt')
_HEX = frozenset("0123456789abcdefABCDEF")
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JS_WHITESPACE = " \t\n\r\v\f\u00a0\ufeff\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
_JS_WHITESPACE += "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_SAFE_INTEGER = 2**53
_REPAIRED = re.compile(r"[\x00-\x1f\\]")


@dataclass(frozen=True, slots=True)
class Delivery:
    """The arguments value the tool would receive, and upstream's complaint if it had one."""

    arguments: Any
    error: str | None = None


def deliver(text: str) -> Delivery:
    """What upstream's client makes of a finished call's arguments text."""
    if not text.strip(_JS_WHITESPACE):
        return Delivery({})
    try:
        value = _parse_with_repair(text)
    except (ValueError, RecursionError) as error:
        return Delivery({}, f"the arguments are not valid JSON ({error})")
    if not isinstance(value, dict):
        return Delivery({}, "Tool arguments must be a JSON object")
    return Delivery(_as_javascript(value))


def _parse_with_repair(text: str) -> Any:
    try:
        return loads(text)
    except (ValueError, RecursionError):
        repaired = repair(text)
        if repaired == text:
            raise
        return loads(repaired)


def repair(text: str) -> str:
    """Escape raw control characters inside strings; double backslashes that escape nothing."""
    if _REPAIRED.search(text) is None:
        return text  # only control characters and backslashes are ever changed
    out: list[str] = []
    in_string = False
    position, end = 0, len(text)
    while position < end:
        char = text[position]
        if not in_string:
            out.append(char)
            in_string = char == '"'
        elif char == '"':
            out.append(char)
            in_string = False
        elif char == "\\":
            following = text[position + 1] if position + 1 < end else ""
            if following == "u" and _is_hex4(text[position + 2 : position + 6]):
                out.append(text[position : position + 6])
                position += 5
            elif following and following in _VALID_ESCAPES:
                out.append("\\" + following)
                position += 1
            else:
                out.append("\\\\")
        elif ord(char) < 0x20:
            out.append(_CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}"))
        else:
            out.append(char)
        position += 1
    return "".join(out)


def _is_hex4(text: str) -> bool:
    return len(text) == 4 and all(char in _HEX for char in text)


def _as_javascript(value: Any) -> Any:
    """Integers beyond 2**53 as the doubles `JSON.parse` makes of them."""
    if isinstance(value, dict):
        return {key: _as_javascript(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_javascript(item) for item in value]
    if type(value) is int and abs(value) > _SAFE_INTEGER:
        try:
            return float(value)
        except OverflowError:
            return None  # JSON.parse gives Infinity, which JSON.stringify writes as null
    return value
