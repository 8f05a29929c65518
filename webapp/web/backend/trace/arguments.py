"""A long block's text as of any step without joining it all: cumulative offsets of its pieces,
and its parse state from where that state changes, found once.

As pieces are appended, `jsoncheck.classify` of the text so far goes: empty, then partial
(a valid prefix), then complete once an object, array or string root closes (appending only
whitespace keeps it so), and invalid from the first piece that no JSON text could follow
(whatever comes after stays invalid). So three piece counts, each found by bisecting the
counts (about 20 parses of the text at most), give the state at every step. A number root
does not go that way (`1` is complete, `1.` is not): its state is classified each time.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import accumulate
from typing import Any, TypeVar, cast

import jiter

from webapp.core.jsoncheck import ParseState, classify, cut_short, loads, parses

T = TypeVar("T")
_WHITESPACE = " \t\n\r"
LONG = 64 * 1024
"""From this many characters on, the state panel shows a block's text from its offsets."""


class LongText:
    """A block's pieces, where each ends in the joined text, and its parse-state marks."""

    __slots__ = ("_lock", "_marks", "_once", "ends", "pieces")

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self.ends = array("q", accumulate(map(len, pieces)))
        self._lock = threading.Lock()
        self._marks: tuple[int, int, int] | None = None
        self._once: dict[str, object] = {}

    def over(self, pieces: list[str]) -> LongText:
        """What was found of this text (its offsets, parse marks and values) over `pieces`, an
        equal list (another copy of the block; `[]` until there is one): a new object, which
        does not hold this one's pieces."""
        made = LongText([])
        made.pieces, made.ends = pieces, self.ends
        with self._lock:
            made._marks, made._once = self._marks, dict(self._once)
        return made

    def length(self, count: int) -> int:
        """How many characters the first `count` pieces hold."""
        return self.ends[count - 1] if count > 0 else 0

    def text(self, count: int) -> str:
        """The first `count` pieces, joined."""
        return "".join(self.pieces[:count])

    def tail(self, count: int, chars: int) -> str:
        """The last `chars` characters (at most) of the first `count` pieces."""
        total = self.length(count)
        first = bisect_right(self.ends, total - chars) if total > chars else 0
        joined = "".join(self.pieces[first:count])
        return joined[-chars:] if len(joined) > chars else joined

    def head(self, count: int, chars: int) -> str:
        """The first `chars` characters (at most) of the first `count` pieces."""
        last = min(count, bisect_left(self.ends, chars) + 1)
        return "".join(self.pieces[:last])[:chars]

    def marks(self) -> tuple[int, int, int] | None:
        """The piece counts from which the text is not empty, is complete and is invalid
        (`len(pieces) + 1` for never); None for a number root, whose state goes back and forth."""
        with self._lock:
            if self._marks is None:
                self._marks = self._find_marks()
            return None if self._marks[0] < 0 else self._marks

    def _find_marks(self) -> tuple[int, int, int]:
        pieces, never = self.pieces, len(self.pieces) + 1
        begun = next((n for n, piece in enumerate(pieces) if piece.strip(_WHITESPACE)), None)
        if begun is None:
            return never, never, never
        if pieces[begun].lstrip(_WHITESPACE)[0] not in '{["':
            return -1, -1, -1
        nonempty = begun + 1
        invalid = _first(nonempty, len(pieces), lambda n: _invalid(self.text(n)))
        complete = _first(nonempty, invalid - 1, lambda n: parses(self.text(n)))
        return nonempty, min(complete, invalid), invalid

    def state(self, count: int) -> ParseState:
        """`classify(text so far).state` for the first `count` pieces."""
        marks = self.marks()
        if marks is None:
            return classify(self.text(count)).state
        nonempty, complete, invalid = marks
        if count < nonempty:
            return "empty"
        if count >= invalid:
            return "invalid"
        return "complete" if count >= complete else "partial"

    def value(self, count: int) -> Any:
        """The value of the text so far (strict: it must be complete)."""
        return loads(self.text(count))

    def once(self, key: str, make: Callable[[], T]) -> T:
        """`make()`, computed on the first call for `key` only: for what the steps in one parse
        state share (a complete text's value, since only whitespace may follow it; an invalid
        text's error, as found at the first step asked)."""
        with self._lock:
            if key not in self._once:
                self._once[key] = make()
            return cast(T, self._once[key])


def _invalid(text: str) -> bool:
    return not parses(text) and not cut_short(text)


def _first(low: int, high: int, holds: Callable[[int], bool]) -> int:
    """The least n in [low, high] for which `holds` (monotone) is true; high + 1 if none.

    Searched from the end first (high - 1, high - 2, high - 4, ...), then bisected: a text is
    complete from about its last piece on (only whitespace may follow), so this takes 2-3
    probes there instead of 20, each a parse of the whole text (0.5 s at 10 MB)."""
    if high < low or not holds(high):
        return high + 1
    step = 1
    while high - step >= low and holds(high - step):
        high -= step
        step *= 2
    low = max(low, high - step + 1)
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle + 1
    return low


def partial_head(text: str) -> Any:
    """The partial value of a JSON text's head (jiter, trailing strings kept); None if none."""
    try:
        return jiter.from_json(
            text.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings"
        )
    except ValueError:
        return None
