"""What a repro may keep of a call's argument text: whole pieces, never rewritten ones.

The minimiser (`webapp.triage.minimise`) drops chunks and fragments whole; that alone can still
make text a reader would not recognise when a provider streams tokens (`{"` `city` `":` ...:
without the `city` chunk, `{"":`). So a candidate is kept only if each of its calls is one of
the input's, in order and by name, with argument text that is `recognisable`:

- the same text; or
- the input's text is one JSON value: the candidate's is one too, and a `pruning` of it: the
  same value with some members of its objects and some items of its arrays left out, whole
  and in order, one at least of each object or array that had any (`{"city": "Paris",
  "unit": "C"}` may become `{"city": "Paris"}`, never `{}` nor `{"city": "C"}`);
- else (broken, cut short): the candidate's pieces (the strings its fragments appended) are
  some of that call's, in order, and so are its JSON tokens (a whole string, number, literal or
  punctuation mark): a piece that went to another call in the input does not count, nor does a
  string a dropped piece has cut in two.

`tree` gives a JSON text's objects and arrays with the places of their members and items, and
`cut` what is left of each piece of the text without some of them, for the pass that cuts
whole members and items out of the fragments that carry them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import eq
from typing import Any, TypeVar

from webapp.core.blocks import Block

T = TypeVar("T")
DEEPEST = 64
"""Objects and arrays nested deeper than this: the text is taken as not JSON (no pruning)."""
_SPACE = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"?|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[^ \t\n\r]', re.DOTALL
)
"""A JSON token, leniently: a string (its closing quote may be cut off), a number, a literal,
or any other character but whitespace on its own."""
_DECODER = json.JSONDecoder()
_CLOSE = {"{": "}", "[": "]"}


@dataclass(frozen=True, slots=True)
class Node:
    """A JSON value in a text, where it is; an object's or array's members or items."""

    start: int
    end: int
    items: tuple[Item, ...] = ()


@dataclass(frozen=True, slots=True)
class Item:
    """A member of an object (from its key on) or an item of an array, and its value."""

    start: int
    value: Node


class _NotJSON(Exception):
    pass


def tree(text: str) -> Node | None:
    """The JSON value `text` holds (whitespace around it aside), or None when it holds none."""
    try:
        node, at = _value(text, _skip(text, 0), 0)
    except (_NotJSON, ValueError, RecursionError):
        return None
    return node if _skip(text, at) == len(text) else None


def _value(text: str, at: int, depth: int) -> tuple[Node, int]:
    opening, start = text[at : at + 1], at
    if opening not in _CLOSE:
        end = _DECODER.raw_decode(text, at)[1]
        return Node(start, end), end
    if depth >= DEEPEST:
        raise _NotJSON
    items: list[Item] = []
    at = _skip(text, at + 1)
    while text[at : at + 1] != _CLOSE[opening]:
        if items:
            at = _expect(text, at, ",")
        first = at
        if opening == "{":
            if text[at : at + 1] != '"':
                raise _NotJSON
            at = _expect(text, _skip(text, _DECODER.raw_decode(text, at)[1]), ":")
        value, at = _value(text, at, depth + 1)
        items.append(Item(first, value))
        at = _skip(text, at)
    return Node(start, at + 1, tuple(items)), at + 1


def _expect(text: str, at: int, mark: str) -> int:
    if text[at : at + 1] != mark:
        raise _NotJSON
    return _skip(text, at + 1)


def _skip(text: str, at: int) -> int:
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def cut(
    text: str, root: Node, kept: Mapping[int, Sequence[int]], lengths: Sequence[int]
) -> list[str]:
    """What is left of each piece of `text` (the pieces' `lengths`; `root` its `tree`) when each
    object or array `kept` names (by its start) keeps only those of its members or items (by
    position, in order, one at least); the separator after a kept one stays when another kept
    one follows."""
    ranges = [(0, root.start)]
    _keep(root, kept, ranges)
    ranges.append((root.end, len(text)))
    out: list[str] = []
    start, at = 0, 0
    for length in lengths:
        end = start + length
        parts: list[str] = []
        while at < len(ranges) and ranges[at][0] < end:
            first, stop = ranges[at]
            parts.append(text[max(first, start) : min(stop, end)])
            if stop > end:
                break
            at += 1
        out.append("".join(parts))
        start = end
    return out


def _keep(node: Node, kept: Mapping[int, Sequence[int]], ranges: list[tuple[int, int]]) -> None:
    """Append the parts of `node`'s text that stay to `ranges`."""
    items = node.items
    if not items:
        ranges.append((node.start, node.end))
        return
    chosen = kept.get(node.start, range(len(items)))
    ranges.append((node.start, items[0].start))
    for at, position in enumerate(chosen):
        item = items[position]
        ranges.append((item.start, item.value.start))  # a member's key and colon
        _keep(item.value, kept, ranges)
        if at + 1 < len(chosen):
            ranges.append((item.value.end, items[position + 1].start))
    ranges.append((items[-1].value.end, node.end))


def tokens(text: str) -> list[str]:
    """The JSON tokens of `text`, leniently (see `_TOKEN`)."""
    return _TOKEN.findall(text)


def embeds(some: Sequence[T], of: Sequence[T], fits: Callable[[T, T], bool] = eq) -> bool:
    """Each item of `some` fits (equals) one of `of`, in order; taking the first that fits is
    always safe, so one walk answers."""
    found = iter(of)
    return all(any(fits(item, other) for other in found) for item in some)


class _Object(tuple[tuple[str, Any], ...]):
    """An object's members in order, as parsed (a key may repeat)."""


_NOT_JSON = object()


def _parsed(text: str) -> Any:
    """The JSON value of `text`, objects as `_Object`s; `_NOT_JSON` when it is not one."""
    try:
        return json.loads(text, object_pairs_hook=_Object)
    except (ValueError, RecursionError):
        return _NOT_JSON


def pruning(value: Any, of: Any) -> bool:
    """`value` is `of` with some members and items left out (see the module docstring)."""
    if isinstance(of, _Object):
        return (
            isinstance(value, _Object)
            and (bool(value) or not of)
            and embeds(value, of, lambda a, b: a[0] == b[0] and pruning(a[1], b[1]))
        )
    if isinstance(of, list):
        return isinstance(value, list) and (bool(value) or not of) and embeds(value, of, pruning)
    return not isinstance(value, (_Object, list)) and json.dumps(value) == json.dumps(of)


def recognisable(original: Block, block: Block) -> bool:
    """The text of `block` is that of `original` with whole pieces left out (see the module
    docstring)."""
    text = block.text
    if text == original.text:
        return True
    before = original.derived("parsed", _parsed_text)  # worked out once for the input's calls
    if before is _NOT_JSON:
        tokens_before = original.derived("tokens", _tokens_of)
        return embeds(block.pieces, original.pieces) and embeds(tokens(text), tokens_before)
    after = _parsed(text)
    return after is not _NOT_JSON and pruning(after, before)


def _parsed_text(block: Block) -> Any:
    return _parsed(block.text)


def _tokens_of(block: Block) -> list[str]:
    return tokens(block.text)


def same_calls(original: Sequence[Block], blocks: Sequence[Block]) -> bool:
    """Each call of `blocks` is a call of `original`, in order, by the same name, with text
    `recognisable` from that call's."""
    return embeds(blocks, original, _kept_from)


def _kept_from(block: Block, source: Block) -> bool:
    return _name(block) == _name(source) and recognisable(source, block)


def _name(block: Block) -> Any:
    return block.name if isinstance(block.name, str) else json.dumps(block.name, default=str)
