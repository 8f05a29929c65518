"""Chunk shapes: the text of a usual chunk around its argument text, to skip parsing the next.

A long stream is mostly chunks that are byte for byte the same but for the arguments they
carry: the same id, model and timestamp, one choice, one fragment with the same keys. Once a
chunk of that kind has been parsed and resolved, its *shape* is its payload's text before the
argument string's first character (the prefix) and from its closing quote on (the suffix).
Any payload made of a known prefix, a valid JSON string body, and the same suffix parses,
token for token, as the chunk it was learnt from with that body as its arguments: JSON strings
end at their first unescaped quote, and nothing else in the text changed. So its fragment's
keys are known without parsing it, and its text is the body itself when that holds no quote,
backslash or unprintable character, else the body decoded alone (a parse of a few bytes).

A shape is only learnt after checking that claim on the chunk itself: its text with an odd
string put in the place found must parse as the same chunk with that string as its arguments.
A place that is not the arguments (the same text elsewhere in the chunk, a duplicate key)
fails the check and teaches nothing. The assembler still applies the rules to every fragment
(`ToolCalls.plain_keys`); a shape only saves the parse and the walk to the fragment.
"""

from __future__ import annotations

from typing import Any

import orjson

Keys = tuple[Any, Any, Any]
"""A fragment's raw index, id and name."""

_PROBE = "streamviz shape probe \u2603"
_ATTEMPTS = 3
"""Places tried for the argument text within one chunk, from the end."""
WASTE = 1024
"""Learning that taught nothing new, allowed before any shape has been used (four more for
each use): probes that failed, shapes replaced by another one of the same prefix."""
SHAPES = 16384
"""At most this many shapes are known at once (say, for as many parallel calls)."""
LENGTHS = 4
"""Prefix lengths tried for a chunk of a shape other than the latest whose text has a quote."""


def usable(text: str) -> bool:
    """Whether `text` is written in JSON as itself between two quotes (and so can be found in
    the payload, and read back from it, as it is): no quote, no backslash, nothing unprintable.

    Shapes are learnt from chunks whose argument text is usable, and a hole's value must be.
    Once a shape is known, other argument texts are decoded alone. Unprintable is wider than
    JSON's control characters (it takes in, say, U+2028): those texts are decoded too.
    """
    return '"' not in text and "\\" not in text and text.isprintable()


class Shapes:
    """The shapes learnt from one stream, by prefix, with a budget for learning them.

    Learning one costs about a parse and a half. A new shape costs that once (up to `SHAPES`
    of them: a stream of 10,000 parallel calls has as many, each used only 10,000 chunks later).
    Learning that teaches nothing new (a probe that fails, a shape replaced by another for the
    same prefix, as in a stream where two fields change in every chunk) would be paid again
    and again, so only `WASTE` of it is allowed before any shape has been used, and four more
    for each use.

    A shape may have a *hole*: one top-level string field after the fragment whose value
    changes from chunk to chunk and that the assembler never reads, such as the random
    `obfuscation` field OpenAI adds to every chunk. It is learnt from two chunks with the same
    prefix whose suffixes differ only inside one string value; its suffix is then two parts,
    the text before that value (`middle`) and from its closing quote on (`tail`).
    """

    __slots__ = ("keys", "known", "lengths", "middle", "prefix", "tail", "wasted")

    def __init__(self) -> None:
        self.known: dict[str, Shape] = {}
        """Prefix -> the shape's tail, its middle (None without a hole) and fragment keys."""
        self.prefix = ""
        """The latest shape's prefix (most streams have one shape at a time): a payload that
        starts with it is sliced there, whatever its argument string holds."""
        self.tail: str | None = None
        """The latest shape's tail; None while none is known."""
        self.middle: str | None = None
        """The latest shape's middle, if it has a hole."""
        self.keys: Keys = (None, None, None)
        """The latest shape's fragment keys."""
        self.lengths: list[int] = []
        """The lengths of the known prefixes, latest first, at most `LENGTHS` of them: where
        another shape's prefix may end when the argument string holds a quote (interleaved
        calls whose index has one, two or three digits)."""
        self.wasted = 0

    def read(self, payload: str) -> tuple[str, Keys] | None:
        """The argument text and fragment keys of `payload` if it is a chunk of a known shape
        whose argument string is one valid JSON string; else None (parse it)."""
        tail = self.tail
        if tail is None or not payload.endswith(tail):
            return None
        end = len(payload) - len(tail)  # the argument string's closing quote
        middle = self.middle
        if middle is not None:  # the hole's value, then the middle before it
            hole = payload.rfind('"', 0, end) + 1
            gap = payload[hole:end]
            end = hole - len(middle)
            if end <= 0 or "\\" in gap or not gap.isprintable():
                return None
            if not payload.startswith(middle, end):
                return None
        prefix = self.prefix
        if len(prefix) <= end and payload.startswith(prefix):  # the latest shape
            text, keys = payload[len(prefix) : end], self.keys
        else:  # another: its prefix ends at the string's opening quote, unless that holds one
            known = self.known
            start = payload.rfind('"', 0, end) + 1
            shape = known.get(payload[:start])
            if shape is None:
                for start in self.lengths:
                    if start <= end and (shape := known.get(payload[:start])):
                        break
            if shape is None or shape[0] != tail or shape[1] != middle:
                return None
            text, keys = payload[start:end], shape[2]
        if '"' in text or "\\" in text or not text.isprintable():
            try:  # escapes: the body decoded alone (or not one string's body at all)
                text = orjson.loads(f'"{text}"')
            except orjson.JSONDecodeError:
                return None
        return text, keys

    def learn(self, payload: str, chunk: Any, uses: int) -> None:
        """Learn the shape of `payload`, a chunk whose one fragment was resolved as an argument
        piece, unless its argument text is not `usable`, its place in the text cannot be told
        for sure, or the budget is spent (`uses`: how often shapes were used so far)."""
        fragment = chunk["choices"][0]["delta"]["tool_calls"][0]
        function = fragment["function"]
        arguments = function.get("arguments")
        if type(arguments) is not str or not usable(arguments):
            return
        if self.wasted >= WASTE + 4 * uses or len(self.known) >= SHAPES:
            return
        token = f'"{arguments}"'
        at = len(payload)
        for _ in range(_ATTEMPTS):
            at = payload.rfind(token, 0, at)
            if at < 0:
                return
            prefix, suffix = payload[: at + 1], payload[at + 1 + len(arguments) :]
            if _same_chunk(prefix + _PROBE + suffix, chunk, arguments):
                keys = (fragment.get("index"), fragment.get("id"), function.get("name"))
                if not self._keep(prefix, arguments, suffix, chunk, keys):
                    self.wasted += 1
                return
            self.wasted += 1
            at += len(token) - 1  # the next place tried ends before this one's last character

    def _keep(self, prefix: str, arguments: str, suffix: str, chunk: Any, keys: Keys) -> bool:
        """Keep the shape (prefix, suffix), or the one with a hole that it and the shape
        already known for that prefix have in common; False if that teaches nothing new."""
        known = self.known.get(prefix)
        shape: Shape = (suffix, None, keys)
        if known is not None and known[2] == keys:
            tail, middle, _ = known
            if middle is not None and _fits(suffix, middle, tail):
                return False  # a chunk of this shape that was not sliced (an odd hole)
            hole = _hole(tail, suffix) if middle is None else None
            if hole is not None:
                middle, tail = hole
                if _one_field_differs(prefix + arguments + middle + _PROBE + tail, chunk):
                    shape = (tail, middle, keys)
        self.known[prefix] = shape
        if len(prefix) not in self.lengths:
            self.lengths.insert(0, len(prefix))
            del self.lengths[LENGTHS:]
        self.prefix, (self.tail, self.middle, self.keys) = prefix, shape
        return known is None or shape[1] is not None


Shape = tuple[str, "str | None", Keys]
"""A shape's tail, middle (None without a hole) and fragment keys."""
_ASSEMBLED = frozenset(("choices", "error", "model"))
"""Top-level fields that something reads from a chunk: never a hole."""


def _hole(old: str, new: str) -> tuple[str, str] | None:
    """Where two suffixes differ only inside one string value (no quote, no backslash):
    the text before that value and from its closing quote on; None if they do not."""
    same = next(
        (at for at, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    opening = new.rfind('"', 0, same)
    closing = new.find('"', same)
    if opening < 0 or closing < 0:
        return None
    middle, tail = new[: opening + 1], new[closing:]
    if not _fits(old, middle, tail) or not usable(new[opening + 1 : closing]):
        return None
    return middle, tail


def _fits(suffix: str, middle: str, tail: str) -> bool:
    """Whether `suffix` is `middle`, a `usable` string value, then `tail`."""
    return (
        len(suffix) >= len(middle) + len(tail)
        and suffix.startswith(middle)
        and suffix.endswith(tail)
        and usable(suffix[len(middle) : len(suffix) - len(tail)])
    )


def _one_field_differs(probed: str, chunk: Any) -> bool:
    """Whether `probed` parses as `chunk` with the probe as the value of one top-level string
    field that nothing reads."""
    try:
        value = orjson.loads(probed)
    except orjson.JSONDecodeError:
        return False
    if type(value) is not dict or type(chunk) is not dict or value.keys() != chunk.keys():
        return False
    changed = [key for key in value if value[key] != chunk[key]]
    return (
        len(changed) == 1
        and changed[0] not in _ASSEMBLED
        and value[changed[0]] == _PROBE
        and type(chunk[changed[0]]) is str
    )


def _same_chunk(probed: str, chunk: Any, arguments: str) -> bool:
    """Whether `probed` parses as `chunk` with the probe as its arguments."""
    try:
        value = orjson.loads(probed)
        function = value["choices"][0]["delta"]["tool_calls"][0]["function"]
        if function["arguments"] != _PROBE:
            return False
        function["arguments"] = arguments
    except (orjson.JSONDecodeError, LookupError, TypeError):
        return False
    return bool(value == chunk)
