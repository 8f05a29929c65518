"""What is wrong with a final block, and where a block's arguments stopped being JSON.

A text stops being the start of any valid JSON text at one piece, and never becomes one again,
so the breaking piece is found by bisecting the block's pieces: a few strict parses of
prefixes, only for the blocks whose final text is broken. The parser's message is translated
into what it usually means for streamed tool calls, and kept as the detail.

The verdicts on final blocks (`final_verdicts`: phantom calls, arguments that are empty, not
an object, never finished or broken) are worded from the block alone when first read
(`final_words`), so a stored trace keeps none of their text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import jiter

from webapp.core.blocks import Block
from webapp.core.chunks import type_name
from webapp.core.delivery import Delivery
from webapp.core.jsoncheck import classify, cut_short, dumps, parses
from webapp.core.jsvalue import truthy
from webapp.core.words import excerpt, number

_WHITESPACE = " \t\n\r"
_WHERE = re.compile(r" at line (\d+) column (\d+)$")


def is_prefix(text: str) -> bool:
    """Whether some text (maybe none) could follow `text` to make one valid JSON value."""
    return not text.strip(_WHITESPACE) or parses(text) or cut_short(text)


def first_break(pieces: list[str], *, broken: bool = False) -> int | None:
    """The index of the piece after which the joined text is no longer a JSON prefix, if any.

    `broken`: the caller knows the joined text is no prefix (it is not checked again).
    """
    if not broken and is_prefix("".join(pieces)):
        return None
    low, high = 0, len(pieces) - 1  # the prefix through `high` is broken
    while low < high:
        middle = (low + high) // 2
        if is_prefix("".join(pieces[: middle + 1])):
            low = middle + 1
        else:
            high = middle
    return low


@dataclass(frozen=True, slots=True)
class Break:
    """Where a text breaks (a character offset), what that means, and the parser's words."""

    position: int
    meaning: str
    detail: str

    def around(self, text: str, width: int = 24) -> str:
        """The text on both sides of the break: `'..."Paris"}' | '{"date": ...'`."""
        before = text[max(0, self.position - width) : self.position]
        after = text[self.position : self.position + width]
        return f"{excerpt(before, width + 3)} | {excerpt(after, width + 3)}"


def explain(text: str) -> Break:
    """Why `text` is not the start of valid JSON, in words about tool calls."""
    try:
        jiter.from_json(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False)
    except ValueError as error:
        detail = str(error)
    else:
        return Break(len(text), "the text is valid JSON", "")
    position = _offset(text, detail)
    return Break(position, _meaning(text, detail, position), detail)


def _meaning(text: str, detail: str, position: int) -> str:
    start = text.lstrip(_WHITESPACE)[:1]
    if detail.startswith("trailing characters"):
        if start == '"':
            return (
                "a string value followed by more text: these arguments start mid-string, "
                "probably the tail of another call's arguments"
            )
        return (
            "a second value starts here after a complete one: two values glued together, "
            "probably two calls' arguments merged"
        )
    if detail.startswith("control character"):
        return (
            "a raw control character (a line break?) inside a string; upstream's client "
            "escapes it before parsing"
        )
    if detail.startswith("invalid escape"):
        return (
            "a backslash that starts no valid escape; upstream's client doubles it before parsing"
        )
    if detail.startswith("trailing comma"):
        return "a trailing comma before a closing bracket"
    if text[position : position + 3] in ("NaN", "Inf") or text[position : position + 4] == "-Inf":
        return "NaN and Infinity are not JSON"
    if position <= len(text) - len(text.lstrip(_WHITESPACE)):
        return (
            "the arguments do not start with a JSON value: probably the tail of another "
            "call's arguments"
        )
    if detail.startswith(("expected `,`", "expected `:`", "key must be a string")):
        return (
            "the structure breaks here (a missing comma or colon): pieces of two calls' "
            "arguments interleaved?"
        )
    return "the text stops being JSON here"


def _offset(text: str, detail: str) -> int:
    """The character offset jiter's `line L column C` (1-based, in bytes) points at."""
    found = _WHERE.search(detail)
    if found is None:
        return 0
    line, column = int(found.group(1)), int(found.group(2))
    data = text.encode("utf-8", "surrogatepass")
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
    target = max(start + column - 1, start)
    return len(data[:target].decode("utf-8", "ignore"))


def final_verdicts(blocks: Iterable[Block], end: int) -> Iterator[tuple[str, int, Block]]:
    """Judged on the final blocks: phantoms, and arguments that are not a JSON object, as
    (code, step, block), worded later by `final_words`.

    Broken arguments are reported at the step that broke them (spec section 7), found by
    bisecting the block's pieces; the other verdicts belong to the `end` step.
    """
    for block in blocks:
        if block.is_phantom:
            yield "phantom-call", block.opened_step, block
        verdict = argument_verdict(block)
        if verdict is not None:
            code, step = verdict
            yield code, end if step is None else step, block


def argument_verdict(block: Block) -> tuple[str, int | None] | None:
    """What is wrong with a final block's arguments: the anomaly's code and its step (None: the
    `end` step), or None when nothing is."""
    if block.custom_input is not None:
        return None  # freeform input is free text: the tool gets {"input": ...} whatever it is
    text = block.text
    if not text.strip(_WHITESPACE):
        return ("empty-arguments", None) if truthy(block.name) else None
    parsed = classify(text)
    if parsed.state == "complete":
        return None if isinstance(parsed.value, dict) else ("non-object-arguments", None)
    if parsed.state == "partial":
        return "incomplete-arguments", None
    piece = _breaking_piece(block)
    if piece is None:  # the whole text is a prefix after all: cannot happen once invalid
        return None
    return "invalid-arguments", block.piece_steps[piece]


def _breaking_piece(block: Block) -> int | None:
    """`first_break` of a block whose text is no JSON prefix (asked by its verdict and its
    words: bisecting 100,000 pieces takes a while)."""
    return block.derived("first_break", lambda block: first_break(block.pieces, broken=True))


def final_words(code: str, block: Block) -> str:
    """The message of a verdict on a final block (one of `FINAL_CODES`)."""
    return _WORDINGS[code](block)


def _phantom_words(block: Block) -> str:
    text = block.text
    held = f" holding {excerpt(text)}" if text else ""
    return f"block #{block.number} ends with no name: a phantom call{held}"


def _empty_words(block: Block) -> str:
    text = block.text
    what = "no arguments" if not text else "arguments that are only whitespace"
    name = block.label
    return f"block #{block.number} {name} ended with {what}: {name} would be called with {{}}"


def _non_object_words(block: Block) -> str:
    name = block.label
    return (
        f"block #{block.number} {name}'s arguments parse to {type_name(classify(block.text).value)}"
        f", not an object: {name} would be called with {{}}"
    )


def _incomplete_words(block: Block) -> str:
    text = block.text
    return (
        f"block #{block.number} {block.label}'s arguments never finished: "
        f"{excerpt(text[-40:], 40)} is the start of a JSON value, not a whole one; "
        f"{_delivered_words(block)}"
    )


def _invalid_words(block: Block) -> str:
    piece = _breaking_piece(block)
    assert piece is not None  # worded only for a block that `argument_verdict` found broken
    broken = "".join(block.pieces[: piece + 1])
    cause = explain(broken)
    return (
        f"block #{block.number} {block.label}'s arguments stopped being JSON at step "
        f"{number(block.piece_steps[piece])}: {cause.meaning}. "
        f"Around the break: {cause.around(broken)}; {_delivered_words(block)}. "
        f"Parser: {cause.detail}"
    )


_WORDINGS: dict[str, Callable[[Block], str]] = {
    "phantom-call": _phantom_words,
    "empty-arguments": _empty_words,
    "non-object-arguments": _non_object_words,
    "incomplete-arguments": _incomplete_words,
    "invalid-arguments": _invalid_words,
}
FINAL_CODES = frozenset(_WORDINGS)
"""The verdicts on final blocks: worded from the block alone, so a stored trace keeps no text."""


def _delivered_words(block: Block) -> str:
    delivered = block.delivered
    name = block.label
    if delivered.error is not None:
        return f"upstream's client would call {name} with {{}}"
    return f"upstream's client repairs it and would call {name} with {_json_excerpt(delivered)}"


def _json_excerpt(delivered: Delivery) -> str:
    return excerpt(dumps(delivered.arguments).decode("utf-8", "replace"), 60)
