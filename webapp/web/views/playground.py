"""The playground's stream: chunks of tool-call fragments, edited in a form, kept in a URL.

A state is a list of chunks; a chunk is its fragments plus an optional `finish_reason`; a
fragment maps each key it carries (`index`, `id`, `name`, `arguments`) to a value, and a key
it lacks is absent from the stream. The state travels as compact JSON, zlib-compressed and
base64url-encoded (`encode`/`decode`), so a link holds a prepared variant. `to_records` makes it
a chat-completions stream's chunks, the one the policies run on.
Everything here comes from a user (a form, a link), so everything is bounded and checked:
places are ASCII digits (`c¹` is no chunk), a link unpacks to at most `MAX_JSON` bytes, a value
nests at most `MAX_DEPTH` deep, and a lone surrogate (valid in JSON) travels in the link as
its WTF-8 bytes; anything else is `BadPlay`, a 400 in words.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from webapp.core.records import Record

KEYS = ("index", "id", "name", "arguments")
MAX_CHUNKS = 300
"""The most chunks the editor shows; a longer stream opens read-only."""
MAX_FRAGMENTS = 8
"""The most fragments one chunk of the editor holds."""
MAX_TOKEN = 50_000
MAX_JSON = 1_000_000
MAX_TEXT = 20_000
MAX_DEPTH = 32
"""How deep a fragment's value may nest (an index of 20,000 `[` is refused, not a 500)."""
_MOST_DIGITS = 9
"""Digits read of a place (`c12`); more name a place beyond every bound anyway."""


class BadPlay(ValueError):
    """The playground's input is not a state it can run; the message says why."""


@dataclass(frozen=True, slots=True)
class Fragment:
    """One `delta.tool_calls` entry: the keys it carries, by name."""

    keys: dict[str, Any] = field(default_factory=dict)

    def shown(self, key: str) -> str:
        """The key's value as the editor shows it (JSON for anything but a string)."""
        if key not in self.keys:
            return ""
        value = self.keys[key]
        return value if isinstance(value, str) and key != "index" else json.dumps(value)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk: its fragments and its finish reason (None: not set)."""

    fragments: tuple[Fragment, ...] = ()
    finish: str | None = None


def _place(text: str) -> int | None:
    """A chunk's or fragment's place written in ASCII digits, or None (`¹` is a digit to
    `str.isdigit`, not to `int`); a very long number is a place beyond every bound."""
    if not (text.isascii() and text.isdigit()):
        return None
    return int(text) if len(text) <= _MOST_DIGITS else 10**_MOST_DIGITS


def _nesting(value: Any) -> int:
    """How deep lists and objects nest in a JSON value (0 for a scalar), counted without
    recursion; stops counting past MAX_DEPTH."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_DEPTH:
                break
            stack.extend(
                (child, depth) for child in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


_TOO_DEEP = object()
"""Stands for a value too deep for the parser itself."""


def _shallow(value: Any, what: str) -> Any:
    if value is _TOO_DEEP or _nesting(value) > MAX_DEPTH:
        raise BadPlay(f"{what} may nest at most {MAX_DEPTH} levels of brackets in the playground")
    return value


def _check(chunks: list[Chunk]) -> tuple[Chunk, ...]:
    if len(chunks) > MAX_CHUNKS:
        raise BadPlay(f"the playground holds at most {MAX_CHUNKS} chunks")
    for chunk in chunks:
        if len(chunk.fragments) > MAX_FRAGMENTS:
            raise BadPlay(f"a chunk holds at most {MAX_FRAGMENTS} fragments in the playground")
    return tuple(chunks)


def to_json(chunks: Iterable[Chunk]) -> list[dict[str, Any]]:
    """The state as plain JSON values."""
    out: list[dict[str, Any]] = []
    for chunk in chunks:
        item: dict[str, Any] = {"f": [dict(fragment.keys) for fragment in chunk.fragments]}
        if chunk.finish:
            item["finish"] = chunk.finish
        out.append(item)
    return out


def from_json(value: Any) -> tuple[Chunk, ...]:
    """A state from JSON values, checked (BadPlay when it is not one)."""
    if not isinstance(value, list):
        raise BadPlay("the state must be a list of chunks")
    chunks: list[Chunk] = []
    for item in value:
        if not isinstance(item, dict) or not isinstance(item.get("f", []), list):
            raise BadPlay("each chunk must be an object with a list of fragments")
        fragments = []
        for keys in item.get("f", []):
            if not isinstance(keys, dict) or not set(keys) <= set(KEYS):
                raise BadPlay(f"a fragment may carry only {', '.join(KEYS)}")
            fragments.append(
                Fragment({k: _shallow(v, f"a fragment's {k}") for k, v in keys.items()})
            )
        finish = item.get("finish")
        if finish is not None and not isinstance(finish, str):
            raise BadPlay("finish must be a string")
        chunks.append(Chunk(tuple(fragments), finish or None))
    return _check(chunks)


def encode(chunks: Iterable[Chunk]) -> str:
    """The state as a URL-safe token (zlib + base64url of compact JSON, no padding)."""
    text = json.dumps(to_json(chunks), separators=(",", ":"), ensure_ascii=False)
    packed = zlib.compress(text.encode("utf-8", "surrogatepass"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode(token: str) -> tuple[Chunk, ...]:
    """The state a token holds; BadPlay when it is not one (or too large)."""
    if len(token) > MAX_TOKEN:
        raise BadPlay("that playground link is too long")
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        unpacker = zlib.decompressobj()
        text = unpacker.decompress(packed, MAX_JSON)
        if unpacker.unconsumed_tail:
            raise BadPlay("that playground link holds too much")
        value = json.loads(text.decode("utf-8", "surrogatepass"))
    except RecursionError:
        raise BadPlay(f"that playground link nests deeper than {MAX_DEPTH} levels") from None
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError) as error:
        if isinstance(error, BadPlay):
            raise
        raise BadPlay("that playground link is damaged (it does not decode)") from error
    return from_json(value)


def _value(key: str, text: str) -> Any:
    """What the editor's text means: an index is read as JSON when it can be, else a string."""
    if len(text) > MAX_TEXT:
        raise BadPlay(f"a value is longer than {MAX_TEXT:,} characters")
    if key == "index":
        try:
            value = json.loads(text)
        except ValueError:
            return text
        except RecursionError:
            value = _TOO_DEEP
        return _shallow(value, "an index")
    return text


def from_form(form: Mapping[str, str]) -> tuple[Chunk, ...]:
    """The state the editor's fields name: `cI.fJ.KEY` (text) and `cI.fJ.KEY.on` (present)."""
    shape: dict[int, set[int]] = {}
    for name in form:
        parts = name.split(".")
        chunk = _place(parts[0][1:]) if parts[0][:1] == "c" else None
        if len(parts) >= 2 and chunk is not None:
            if chunk >= MAX_CHUNKS:
                raise BadPlay(f"the playground holds at most {MAX_CHUNKS} chunks")
            frags = shape.setdefault(chunk, set())
            frag = _place(parts[1][1:]) if parts[1][:1] == "f" else None
            if frag is not None:
                if frag >= MAX_FRAGMENTS:
                    raise BadPlay(f"a chunk holds at most {MAX_FRAGMENTS} fragments here")
                frags.add(frag)
    chunks: list[Chunk] = []
    for c in sorted(shape):
        fragments = []
        for f in sorted(shape[c]):
            prefix = f"c{c}.f{f}."
            keys = {
                key: _value(key, form.get(prefix + key, ""))
                for key in KEYS
                if form.get(prefix + key + ".on")
            }
            fragments.append(Fragment(keys))
        chunks.append(Chunk(tuple(fragments), form.get(f"c{c}.finish") or None))
    return _check(chunks)


def edited(chunks: tuple[Chunk, ...], op: str) -> tuple[Chunk, ...]:
    """The state after one structural edit: `add:I`, `del:I`, `up:I`, `down:I`, `frag:I`,
    `unfrag:I.J` (I a chunk's place, J a fragment's); anything else changes nothing."""
    verb, _, where = op.partition(":")
    at, _, sub = where.partition(".")
    i, j = _place(at), _place(sub)
    if i is None:
        return chunks
    items = list(chunks)
    if verb == "add":
        items.insert(min(i + 1, len(items)), Chunk((Fragment({"arguments": ""}),)))
    elif verb == "del" and i < len(items):
        del items[i]
    elif verb == "up" and 0 < i < len(items):
        items[i - 1], items[i] = items[i], items[i - 1]
    elif verb == "down" and i + 1 < len(items):
        items[i], items[i + 1] = items[i + 1], items[i]
    elif verb == "frag" and i < len(items):
        chunk = items[i]
        items[i] = Chunk((*chunk.fragments, Fragment({"arguments": ""})), chunk.finish)
    elif verb == "unfrag" and i < len(items) and j is not None:
        chunk = items[i]
        kept = tuple(frag for n, frag in enumerate(chunk.fragments) if n != j)
        items[i] = Chunk(kept, chunk.finish)
    return _check(items)


def _fragment_json(fragment: Fragment) -> dict[str, Any]:
    keys = fragment.keys
    out: dict[str, Any] = {}
    if "index" in keys:
        out["index"] = keys["index"]
    if "id" in keys:
        out["id"] = keys["id"]
        out["type"] = "function"
    function = {key: keys[key] for key in ("name", "arguments") if key in keys}
    if function:
        out["function"] = function
    return out


def to_records(chunks: Iterable[Chunk]) -> tuple[Record, ...]:
    """The state as a chat-completions stream's chunks (`webapp.web.http.text.as_sse` writes
    them)."""
    records = []
    for chunk in chunks:
        delta: dict[str, Any] = {}
        if chunk.fragments:
            delta["tool_calls"] = [_fragment_json(fragment) for fragment in chunk.fragments]
        choice = {"index": 0, "delta": delta, "finish_reason": chunk.finish}
        body = {"id": "play", "object": "chat.completion.chunk", "choices": [choice]}
        records.append(Record("chunk", None, body))
    return tuple(records)


def from_records(records: Iterable[Record], choice: int = 0) -> tuple[Chunk, ...] | None:
    """The tool-call fragments of a read stream's chunks, or None when it has too many chunks."""
    chunks: list[Chunk] = []
    for record in records:
        if record.kind != "chunk" or not isinstance(record.value, dict):
            continue
        if len(chunks) >= MAX_CHUNKS:
            return None
        chunks.append(_chunk_of(record.value, choice))
    return tuple(chunks)


def _chunk_of(value: dict[str, Any], choice: int) -> Chunk:
    choices = value.get("choices")
    picked = (
        next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == choice), None)
        if isinstance(choices, list)
        else None
    )
    if picked is None:
        return Chunk()
    delta = picked.get("delta") if isinstance(picked.get("delta"), dict) else {}
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    fragments = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        keys: dict[str, Any] = {k: call[k] for k in ("index", "id") if k in call}
        function = call.get("function")
        if isinstance(function, dict):
            keys.update({k: function[k] for k in ("name", "arguments") if k in function})
        fragments.append(Fragment(keys))
    finish = picked.get("finish_reason")
    return Chunk(tuple(fragments[:MAX_FRAGMENTS]), finish if isinstance(finish, str) else None)
