"""Every copy of a set of secret strings in a text, found in one pass however many there are.

A few strings are replaced one after the other with `str.replace` (fast, and the cost is a
small multiple of the text's length). Many strings would make that cost the text's length
times their number, so then one Aho-Corasick automaton reads the text once: at each position
it knows the longest string ending there, and the union of those spans is replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

FEW = 32
"""Up to this many strings, `str.replace` each; beyond, the automaton."""


class Copies:
    """Find and replace copies of some strings (longest first where they overlap)."""

    def __init__(self, strings: Iterable[str]) -> None:
        self.strings = sorted({s for s in strings if s}, key=len, reverse=True)
        self._automaton = _Automaton(self.strings) if len(self.strings) > FEW else None

    def found_in(self, text: str) -> bool:
        """Whether any of the strings occurs in the text."""
        if self._automaton is None:
            return any(s in text for s in self.strings)
        return any(True for _ in self._automaton.ends(text))

    def replace(self, text: str, new: str) -> tuple[str, int]:
        """The text with every copy replaced by `new`, and how many replacements were made."""
        if self._automaton is None:
            count = 0
            for string in self.strings:
                found = text.count(string)
                if found:
                    count += found
                    text = text.replace(string, new)
            return text, count
        spans = self._automaton.spans(text)
        pieces, last = [], 0
        for start, end in spans:
            pieces += [text[last:start], new]
            last = end
        pieces.append(text[last:])
        return "".join(pieces), len(spans)


class _Automaton:
    """Aho-Corasick over the strings; each state knows the longest string that ends in it."""

    def __init__(self, strings: list[str]) -> None:
        self.goto: list[dict[str, int]] = [{}]
        self.longest: list[int] = [0]
        for string in strings:
            state = 0
            for char in string:
                following = self.goto[state].get(char)
                if following is None:
                    following = len(self.goto)
                    self.goto[state][char] = following
                    self.goto.append({})
                    self.longest.append(0)
                state = following
            self.longest[state] = len(string)
        self.fail = [0] * len(self.goto)
        queue = list(self.goto[0].values())
        for state in queue:  # breadth first: a state's fail link is set before its children's
            for char, child in self.goto[state].items():
                queue.append(child)
                back = self.fail[state]
                while back and char not in self.goto[back]:
                    back = self.fail[back]
                self.fail[child] = self.goto[back].get(char, 0)
                if not self.longest[child]:
                    self.longest[child] = self.longest[self.fail[child]]

    def ends(self, text: str) -> Iterator[tuple[int, int]]:
        """(end, length of the longest string ending there) at each position where one ends."""
        goto, fail, longest = self.goto, self.fail, self.longest
        state = 0
        for index, char in enumerate(text):
            while state and char not in goto[state]:
                state = fail[state]
            state = goto[state].get(char, 0)
            if longest[state]:
                yield index + 1, longest[state]

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The union of every copy's span, as sorted disjoint (start, end) pairs."""
        spans: list[tuple[int, int]] = []
        for end, length in self.ends(text):
            start = end - length
            while spans and spans[-1][1] > start:  # overlaps: merge (each pair popped once)
                start = min(start, spans.pop()[0])
            spans.append((start, end))
        return spans


def splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    """The text with each (start, end) span, in order and apart, replaced by its new text."""
    pieces, last = [], 0
    for start, end, new in spans:
        pieces += [text[last:start], new]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)
