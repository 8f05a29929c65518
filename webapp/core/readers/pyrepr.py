"""openai-python object reprs, read safely: parsed with `ast`, converted node by node, never run.

A record starts at a line that begins with `ChatCompletionChunk(`, `Choice(`, `ChoiceDelta(`
or `ChoiceDeltaToolCall(` (or `[` and one of them) and runs over the following lines that are
indented or start with a closing bracket (pprint spreads one repr over several that way). Any
other line at column 0 starts a record of its own, reported as invalid if it does not parse.
A call's keyword arguments become an object's keys; constants, lists, tuples and dicts with
string keys are allowed, nothing else.

So are the chunks' dicts as Python prints them (`print(chunk.model_dump())`,
`pprint(chunk.to_dict())`): single-quoted keys, `None`, `True`; as JSON they did not parse. A
text is read so when a line starts with such a dict (`{'`, or `[{'`) and it names a chunk's
key (`'choices'`, `'delta'` or `'tool_calls'`).
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from webapp.core.readers.parse import split_lines
from webapp.core.readers.shape import as_chunk, members
from webapp.core.records import ReadResult, Record

_NAMES = r"(?:ChatCompletionChunk|ChoiceDeltaToolCall|ChoiceDelta|Choice)\("
_ANY_START = re.compile(r"(?:^|[\r\n])\[?" + _NAMES)
_DICT_START = re.compile(r"(?:^|[\r\n])\[?\{'")
_CHUNK_KEYS = ("'choices'", "'delta'", "'tool_calls'")
MAX_RECORD = 1_000_000
"""Characters in one repr record beyond which it is not parsed (`ast` is memory-hungry)."""


class ReprError(ValueError):
    """A repr holds something other than calls with keywords, constants and containers."""


def has_repr_line(text: str) -> bool:
    """Whether some line starts like an openai-python streaming object's repr, or a chunk's
    dict as Python prints it."""
    if ("ChatCompletionChunk(" in text or "Choice" in text) and _ANY_START.search(text):
        return True  # substring tests are far cheaper than the regex on a large input
    head = text[:200_000]
    return (
        "{'" in head
        and any(key in head for key in _CHUNK_KEYS)
        and _DICT_START.search(head) is not None
    )


def _constant(node: ast.Constant) -> Any:
    value = node.value
    if value is None or isinstance(value, str | int | float):
        return value
    raise ReprError(f"{type(value).__name__} constant on line {node.lineno}")


def _number(node: ast.UnaryOp) -> Any:
    operand = node.operand
    if (
        isinstance(operand, ast.Constant)
        and isinstance(operand.value, int | float)
        and not isinstance(operand.value, bool)
    ):
        return -operand.value if isinstance(node.op, ast.USub) else +operand.value
    raise ReprError(f"an operator on line {node.lineno}")


def _call(node: ast.Call) -> dict[str, Any]:
    if node.args:
        raise ReprError(f"positional arguments on line {node.lineno}")
    result: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ReprError(f"** arguments on line {node.lineno}")
        result[keyword.arg] = convert(keyword.value)
    return result


def _dict(node: ast.Dict) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            raise ReprError(f"a dict key that is not a string on line {node.lineno}")
        result[key.value] = convert(value)
    return result


def _dotted_name(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def convert(node: ast.AST) -> Any:
    """The JSON value a repr's expression node stands for; ReprError for anything else."""
    if isinstance(node, ast.Constant):
        return _constant(node)
    if isinstance(node, ast.Call) and _dotted_name(node.func):
        return _call(node)
    if isinstance(node, ast.List | ast.Tuple):
        return [convert(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return _dict(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _number(node)
    raise ReprError(f"{type(node).__name__} on line {getattr(node, 'lineno', '?')}")


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    start: int | None = None
    for index, line in enumerate(lines):
        if not line.strip():
            if start is not None:
                blocks.append((start, index))
            start = None
        elif start is None or not line.startswith((" ", "\t", ")", "]", "}")):
            if start is not None:
                blocks.append((start, index))
            start = index
    if start is not None:
        blocks.append((start, len(lines)))
    return blocks


def _parse(block: str) -> ast.expr:
    if len(block) > MAX_RECORD:
        raise ReprError(f"longer than {MAX_RECORD} characters")
    try:
        with warnings.catch_warnings():
            # "invalid escape sequence" in a pasted string literal is the paste's business,
            # not a warning for the terminal or the server log.
            warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
            return ast.parse(block.strip(), mode="eval").body
    except SyntaxError as error:
        raise ReprError(
            f"{error.msg} (line {error.lineno}, column {error.offset} of this record)"
        ) from None
    except (ValueError, MemoryError, RecursionError):
        raise ReprError("too deeply nested or too large to parse") from None


def _records(block: str, line: int) -> list[Record]:
    try:
        root = _parse(block)
        value = convert(root)
    except ReprError as error:
        message = f"not an openai-python repr: {error}"
        return [Record(kind="invalid", line=line, text=block, error=message)]
    except RecursionError:
        message = "not an openai-python repr: too deeply nested"
        return [Record(kind="invalid", line=line, text=block, error=message)]
    parts = members(value)
    if parts is None:
        return [_chunk(value, line, block)]
    assert isinstance(root, ast.List | ast.Tuple)
    return [
        _chunk(part, line + node.lineno - 1, block)
        for part, node in zip(parts, root.elts, strict=True)
    ]


def _chunk(value: Any, line: int, text: str) -> Record:
    chunk, wrapped = as_chunk(value)
    return Record(kind="chunk", line=line, value=chunk, text=text, wrapped=wrapped)


def read_repr(text: str, first_line: int = 1) -> ReadResult:
    """Read openai-python reprs of chunks, choices, deltas and tool-call fragments."""
    lines = split_lines(text)
    records: list[Record] = []
    for start, end in _blocks(lines):
        records.extend(_records("\n".join(lines[start:end]), first_line + start))
    return ReadResult(format="repr", records=tuple(records))
