"""Two JSON values compared key by key: `arguments.city: "Paris" vs "Lyon"`, never as text.

Objects are compared key by key (the first value's keys in order, then the keys only the second
has), arrays item by item, anything else by type and value: `1` and `1.0` are the same number,
`true` and `1` are not. A key the other value lacks shows as `(absent)`. The walk keeps its own
stack, so a value nested thousands deep is compared without recursion, and it stops after
`limit` lines, saying how many more it found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.jsoncheck import loads
from webapp.core.words import count

LIMIT = 40
"""Differences listed per pair of values; the rest are counted."""
SHOWN = 80
"""A value in a line is clipped to this many characters."""
_ABSENT: Any = object()
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


class NotJson:
    """Argument text that does not parse as JSON (compared as text)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NotJson) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"NotJson({self.text!r})"


def meaning(text: str | None) -> Any:
    """The arguments' value: their JSON, `{}` for blank text, or `NotJson` when they do not
    parse."""
    if text is None or not text.strip():
        return {}
    try:
        return loads(text)
    except (ValueError, RecursionError):
        return NotJson(text)


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where two values part: where, and each value there, shown (`show`)."""

    path: str
    a: str
    b: str
    more: int = 0
    """Not a place but a count: this many more differences were found and not listed."""

    def __str__(self) -> str:
        if self.more:
            return f"{self.path}: and {self.more} more difference{'s' if self.more != 1 else ''}"
        return f"{self.path}: {self.a} vs {self.b}"

    def swapped(self) -> Difference:
        """The same difference seen from the other side."""
        return Difference(self.path, self.b, self.a, self.more)


def differences(path: str, a: Any, b: Any, limit: int = LIMIT) -> list[Difference]:
    """Each place where `b` differs from `a` (`limit` at most, then one that counts the rest)."""
    found: list[Difference] = []
    more = 0
    for difference in _walk(path, a, b):
        if len(found) < limit:
            found.append(difference)
        else:
            more += 1
    if more:
        found.append(Difference(path, "", "", more))
    return found


def differ(path: str, a: Any, b: Any) -> Difference:
    """One difference of two whole values (a name, an id, a count), shown as JSON."""
    return Difference(path, show(a), show(b))


def same(a: Any, b: Any) -> bool:
    """Whether two values are equal as JSON (by type, so `true` is not `1`)."""
    return next(_walk("", a, b), None) is None


def _walk(path: str, a: Any, b: Any) -> Iterator[Difference]:
    stack: list[tuple[str, Any, Any]] = [(path, a, b)]
    while stack:
        where, left, right = stack.pop()
        if isinstance(left, dict) and isinstance(right, dict):
            keys = list(left) + [key for key in right if key not in left]
            for key in reversed(keys):
                stack.append((_key(where, key), left.get(key, _ABSENT), right.get(key, _ABSENT)))
        elif isinstance(left, list) and isinstance(right, list):
            for at in reversed(range(max(len(left), len(right)))):
                stack.append((
                    f"{where}[{at}]",
                    left[at] if at < len(left) else _ABSENT,
                    right[at] if at < len(right) else _ABSENT,
                ))  # fmt: skip
        elif not _equal(left, right):
            yield Difference(where, show(left), show(right))


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or (type(a) is type(b) and a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def _key(path: str, key: str) -> str:
    if _NAME.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def show(value: Any, limit: int = SHOWN) -> str:
    """A value as compact JSON, clipped; `(absent)` for a key that is not there; text that is
    not JSON as `not JSON: ...`."""
    if value is _ABSENT:
        return "(absent)"
    if isinstance(value, NotJson):
        text = "not JSON " + json.dumps(value.text, ensure_ascii=False)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Two lists of calls (the non-stream twin, `webapp.triage.diff.Twin`).


def agreement(want: Sequence[tuple[Any, str]], got: Sequence[tuple[Any, str]]) -> tuple[bool, str]:
    """(same, where they first differ) of two lists of (name, arguments text), the answer's
    first: in order, by name, then by arguments as JSON."""
    return _held(want, got)


def _held(want: Sequence[tuple[Any, str]], got: Sequence[tuple[Any, str]]) -> tuple[bool, str]:
    for number, (expected, found) in enumerate(zip(want, got, strict=False), 1):
        if expected[0] != found[0]:
            names = f"{_name(found[0])}, the answer {_name(expected[0])}"
            return False, f"call {number}, `name` ({names})"
        parted = differences("arguments", meaning(found[1]), meaning(expected[1]), limit=1)
        if parted:
            return False, f"call {number}, `{parted[0].path}`"
    if len(want) == len(got):
        return True, ""
    number = min(len(want), len(got)) + 1
    if len(got) > len(want):
        extra = f"{_name(got[number - 1][0])} is not in the answer"
    else:
        extra = f"it lacks the answer's {_name(want[number - 1][0])}"
    return False, f"call {number}: {extra} ({count(len(got), 'call')}, the answer {len(want)})"


def _name(name: Any) -> str:
    return name if isinstance(name, str) and name else "(no name)"
