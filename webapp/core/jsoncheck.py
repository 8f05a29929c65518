"""Does argument text parse: strictly, as a prefix, or not at all.

Two needs, two tools. The server-tools path must know after every fragment whether a
candidate's arguments just became one complete JSON value; `Completion` answers that in time
linear in the text by tracking bracket depth and strings piece by piece, and parses strictly
only when the root value closes. The pages ask `classify` about the few blocks on screen.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import jiter
import orjson

_WHITESPACE = " \t\n\r"
_OUTSIDE_STRING = re.compile(r'["{}\[\]]')
_INSIDE_STRING = re.compile(r'["\\]')


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(text: str | bytes) -> Any:
    """Parse strictly as JavaScript's `JSON.parse` would (big integers allowed, NaN refused)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # orjson refuses integers beyond 64 bits and lone surrogates, which JavaScript accepts.
        return json.loads(text, parse_constant=_reject_constant)


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Serialize to UTF-8 JSON; lone surrogates (which `JSON.parse` accepts) become escapes."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError:
        # orjson refuses lone surrogates; ASCII-only JSON writes them as \uXXXX escapes.
        return json.dumps(value, indent=2 if indent else None).encode("ascii")


class Completion:
    """Told each appended piece, says whether the whole text is now one complete JSON value."""

    __slots__ = ("_dead", "_depth", "_escape", "_in_string", "_pieces", "_root", "complete")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._root: Literal["container", "string", "scalar"] | None = None
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._dead = False
        self.complete = False
        """Whether the text so far parses strictly as exactly one JSON value."""

    def feed(self, piece: str) -> bool:
        """Append a piece; returns `complete`."""
        if not piece or self._dead:
            return self.complete
        self._pieces.append(piece)
        if self.complete and self._root != "scalar":
            # After a closed root value only whitespace keeps the text valid.
            if piece.strip(_WHITESPACE):
                self.complete, self._dead = False, True
            return self.complete
        closed = self._scan(piece)
        if self._root == "scalar":
            self.complete = self._check_scalar()
        elif closed:
            self.complete = parses("".join(self._pieces))
            self._dead = not self.complete  # a closed, invalid root value cannot be mended
        return self.complete

    def _check_scalar(self) -> bool:
        text = "".join(self._pieces).strip(_WHITESPACE)
        if parses(text):
            return True
        if not cut_short(text):
            self._dead = True
        return False

    def _scan(self, piece: str) -> bool:
        """Track strings and brackets through `piece`; True when the root value closed in it."""
        position = 0
        if self._root is None:
            stripped = piece.lstrip(_WHITESPACE)
            if not stripped:
                return False
            position = len(piece) - len(stripped)
            first = stripped[0]
            if first in "{[":
                self._root = "container"
            elif first == '"':
                self._root = "string"
            else:
                self._root = "scalar"
                return False
        if self._root == "scalar":
            return False
        closed = False
        end = len(piece)
        while position < end:
            if self._escape:
                self._escape = False
                position += 1
                continue
            if self._in_string:
                found = _INSIDE_STRING.search(piece, position)
                if found is None:
                    break
                position = found.end()
                if found.group() == "\\":
                    self._escape = True
                else:
                    self._in_string = False
                    closed = closed or self._depth == 0
                continue
            found = _OUTSIDE_STRING.search(piece, position)
            if found is None:
                break
            position = found.end()
            char = found.group()
            if char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                closed = closed or self._depth <= 0
        return closed


_STDLIB_ONLY = re.compile(r"\\u[dD][89a-fA-F]|[eE][+-]?[0-9]{3}|[0-9]{300}")
"""What only the standard library's parser takes: a lone surrogate's escape, a number beyond
a double (orjson refuses both). Text without any is judged by orjson alone."""


_BOTH_REFUSE = (
    "unexpected content after document",
    "unexpected character",
    "unexpected end of data",
    "unexpected control character",
    "trailing comma",
    "invalid escaped sequence",
    "number with leading zero",
    "Input is a zero-length",
    "input data is empty",
)
"""How orjson words the errors the standard library refuses too: plain syntax, met first. What
only the standard library takes (`_STDLIB_ONLY`) orjson refuses as soon as it meets it, in
other words ("no low surrogate", "number is infinity")."""


def _only_stdlib_may_take(text: str, error: orjson.JSONDecodeError) -> bool:
    """Whether the standard library might take a text orjson refused. Not when orjson's first
    error is plain syntax (`_BOTH_REFUSE`: the standard library reads the same up to there
    and refuses it too; a long stream's broken or restated arguments, say, whose scan for
    `_STDLIB_ONLY` would cost milliseconds a megabyte, once per parse); else when the text
    holds what only the standard library takes. Should orjson word an error otherwise, the
    scan runs."""
    if str(error).startswith(_BOTH_REFUSE):
        return False
    return _STDLIB_ONLY.search(text) is not None


def parses(text: str) -> bool:
    """Whether the text parses strictly as one JSON value."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as error:
        if not _only_stdlib_may_take(text, error):
            return False
    else:
        return True
    try:
        loads(text)
    except (ValueError, RecursionError):
        return False
    return True


ParseState = Literal["empty", "complete", "partial", "invalid"]


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a text is as JSON, and its value when it has one."""

    state: ParseState
    value: Any = None
    error: str | None = None


def classify(text: str) -> Parsed:
    """Complete JSON, a valid prefix of JSON (with its partial value), or neither."""
    if not text.strip(_WHITESPACE):
        return Parsed("empty")
    try:
        return Parsed("complete", orjson.loads(text))
    except orjson.JSONDecodeError as error:
        message = str(error)
        stdlib_may_take = _only_stdlib_may_take(text, error)
    if stdlib_may_take:  # else the standard library refuses it too
        try:
            return Parsed("complete", json.loads(text, parse_constant=_reject_constant))
        except (ValueError, RecursionError) as error:
            message = str(error)
    if not cut_short(text):
        return Parsed("invalid", error=message)
    try:
        data = text.encode("utf-8", "surrogatepass")
        value = jiter.from_json(data, partial_mode="trailing-strings")
    except ValueError:
        value = None
    return Parsed("partial", value, message)


def cut_short(text: str) -> bool:
    """Whether text that does not parse is the start of a valid JSON text: more could mend it.

    The one answer to "was this JSON cut short?" for the readers and the assembler. jiter's
    strict parser says "EOF while parsing" exactly when the text ran out before an error, so
    `[1 2]`, `{"a": NaN}` and `{} {` are not cut short while `1e`, `{"a":` and `"ab` are.
    Text that is empty or only whitespace is not: nothing was started.
    """
    if not text.strip(_WHITESPACE):
        return False
    try:
        jiter.from_json(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False)
    except ValueError as error:
        return str(error).startswith("EOF while parsing")
    return False  # it parses: complete, not cut short
