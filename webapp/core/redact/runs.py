"""Where a secret can be in a text: its runs of key characters, found at C speed.

A run is a stretch of letters, digits and `LEAD` characters that holds 16 or more of them from
its first letter or digit, taken from there to the stretch's end: what the regex
`[A-Za-z0-9][A-Za-z0-9._%+/=@~-]{15,}+` finds, which, tried at every character, was most of
the content scan's time. Here the text is read as ASCII bytes (any other character a `?`, so
indexes stay), each byte turned into a 1 (a run's character) or a 0 by `bytes.translate`, and
a run is where `bytes.find` finds sixteen 1s.

A stream repeats its framing once per chunk (`"chat.completion.chunk"`, its id, its model):
a real one holds 4 to 7 runs per chunk that its reader finds clean, one after another. So
`Runs` reads the text in blocks (a few hundred kilobytes: their copies stay in the cache),
and before finding runs in a block blanks the runs its reader said were clean (`Runs.clean`)
often enough in the blocks before, each with the delimiters on either side. A delimiter is
neither a run's character nor a blank or a tab (`Bearer ` before a run changes what it
holds): such a stretch is the same run wherever it occurs, and what the patterns find in it
depends on its own text and the character before it, nothing else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

LEAD = "._%+/=@~-"
"""The characters of a run besides letters and digits (it cannot start with one)."""
LEAST = 16
"""A run's fewest characters."""
_IN_RUN = bytes(
    1 if chr(byte) in LEAD or (chr(byte).isascii() and chr(byte).isalnum()) else 0
    for byte in range(256)
)
"""By byte: 1 for a character a run is made of, 0 for any other."""
_LONG = b"\x01" * LEAST
_BLOCK = 1 << 18
"""Characters read at once, at most (unless one stretch is longer)."""
_OFTEN = 8
"""Times a clean run is seen, whole between delimiters, before later blocks blank it."""
_MOST_BLANKED = 16
"""Clean runs blanked at most (the most frequent): each costs a pass over each block."""
_MOST_COUNTED = 4096
"""Distinct clean runs counted at most (a stream's framing has a handful)."""


class Runs:
    """The runs of a text as `(start, end)` spans, in order; `clean` says which were clean."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._seen: Counter[bytes] = Counter()
        self._counted = False
        """Whether a run was seen `_OFTEN` times since `_blanked` was chosen."""
        self._blanked: list[bytes] = []

    def __iter__(self) -> Iterator[tuple[int, int]]:
        begin, size = 0, len(self._text)
        while begin < size:
            block, cut = self._block(begin)
            yield from self._in_block(block, begin, cut)
            begin += cut

    def _block(self, begin: int) -> tuple[bytes, int]:
        """The text from `begin` as ASCII bytes, and how much of them to read: up to the last
        line break, else the last character no run holds (a stretch is never cut), or to the
        text's end."""
        text, length = self._text, _BLOCK
        while True:
            block = text[begin : begin + length].encode("ascii", "replace")
            if begin + length >= len(text):
                return block, len(block)
            cut = block.rfind(b"\n") + 1 or block.translate(_IN_RUN).rfind(0) + 1
            if cut:
                return block, cut
            length *= 4  # one stretch over the whole block (a long base64 value)

    def _in_block(self, block: bytes, begin: int, cut: int) -> Iterator[tuple[int, int]]:
        """The runs in the block's first `cut` bytes, found once the often clean ones are
        blanked."""
        block = block[:cut]
        for needle in self._blanks():
            block = block.replace(needle, needle[:1] + b"?" * (len(needle) - 2) + needle[-1:])
        flags = block.translate(_IN_RUN)
        text, find = self._text, flags.find
        at = find(_LONG)
        while at >= 0:  # `at` starts a stretch: a 1 before it would have been found first
            stop = find(0, at)
            if stop < 0:
                stop = cut
            start = at
            while start < stop and text[begin + start] in LEAD:
                start += 1
            if stop - start >= LEAST:
                yield begin + start, begin + stop
            at = find(_LONG, stop)

    def _blanks(self) -> list[bytes]:
        """The clean runs, with their delimiters, seen often enough to blank."""
        if self._counted:
            common = self._seen.most_common(_MOST_BLANKED)
            self._blanked = [needle for needle, seen in common if seen >= _OFTEN]
            self._counted = False
        return self._blanked

    def clean(self, start: int, end: int) -> None:
        """The patterns found nothing in the run at `[start, end)`: counted, with its
        delimiters, towards blanking it in later blocks."""
        text = self._text
        if start == 0 or end >= len(text):
            return
        before = text[start - 1]
        if before.isascii() and (_IN_RUN[ord(before)] or before in " \t"):
            return  # its stretch starts earlier, or `Bearer ` may precede it
        needle = text[start - 1 : end + 1].encode("ascii", "replace")
        seen = self._seen
        if needle in seen or len(seen) < _MOST_COUNTED:
            seen[needle] += 1
            self._counted = self._counted or seen[needle] == _OFTEN
