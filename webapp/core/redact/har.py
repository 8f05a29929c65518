"""Redaction of a HAR file in place: exact spans of secret strings, every other byte kept.

The JSON tokens are walked to find, for each object, its place (HAR entry, container) and
the spans of its string members; `_decide` says which of them are secrets. The spans are
replaced by "[redacted]", copies of the secret values elsewhere too, and the result is walked
again (and re-parsed) to check nothing is left; if that check fails, the parsed HAR is
redacted and re-serialised. A place is derived from its parent's in constant time, so deep
nesting costs no more than its length.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson

from webapp.core.redact.copies import Copies, splice
from webapp.core.redact.rules import (
    LONG_ENOUGH,
    REDACTED,
    redact_comments,
    redact_json_members,
    redact_query,
    redact_userinfo,
    secret_header,
    secret_param,
    secrets_in,
)

_JSON_TOKEN = re.compile(
    r'[ \t\r\n]*(?:(?P<string>"(?:[^"\\]++|\\.)*+")|(?P<punct>[{}\[\]:,])'
    r'|[^ \t\r\n{}\[\]:,"]+)',
    re.DOTALL,
)
_Key = str | int
_Edit = tuple[str, str, str, list[str]]
"""(key in the object, its new value, what was removed in words, the secret values)."""


@dataclass(frozen=True, slots=True)
class _Place:
    """Where a JSON value sits, as far as the decisions need it (never its whole path)."""

    key: _Key | None
    """Its key in its parent (None for the root, "" when unknown)."""
    parent_key: _Key | None
    entry: int | None
    """The number of the HAR entry it is in (from 1), if any."""
    side: str
    """The entry's member it is in ("request", "response"), or ""."""
    depth: int
    """How far below the entry it is (0: the entry itself)."""

    def child(self, key: _Key | None) -> _Place:
        """The place of a member of this value, in constant time."""
        key = "" if key is None else key
        if self.entry is not None:
            side = (key if isinstance(key, str) else "") if self.depth == 0 else self.side
            return _Place(key, self.key, self.entry, side, self.depth + 1)
        if self.key == "entries" and isinstance(key, int):
            return _Place(key, self.key, key + 1, "", 0)
        return _Place(key, self.key, None, "", -1)


_ROOT = _Place(None, None, None, "", -1)


class _Frame:
    """An open JSON container while walking tokens."""

    __slots__ = ("current", "index", "is_object", "place", "strings")

    def __init__(self, place: _Place, is_object: bool) -> None:
        self.place = place
        self.is_object = is_object
        self.index = 0
        self.current: str | None = None
        self.strings: dict[str, tuple[int, int]] = {}


def _decode(raw: str) -> str | None:
    if "\\" not in raw:
        return raw[1:-1]
    try:
        value = json.loads(raw, strict=False)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _objects(text: str) -> Iterator[tuple[_Place, dict[str, tuple[int, int]]]]:
    """Every JSON object's place and the spans of its string members, as each closes."""
    stack: list[_Frame] = []
    pos = 0
    while (match := _JSON_TOKEN.match(text, pos)) is not None and match.end() > pos:
        pos = match.end()
        top = stack[-1] if stack else None
        if match.group("string") is not None:
            if top is not None and top.is_object:
                if top.current is None:
                    top.current = _decode(match.group("string")) or ""
                else:
                    top.strings[top.current] = match.span("string")
            continue
        punct = match.group("punct")
        if punct in ("{", "["):
            if top is None:
                place = _ROOT
            else:
                place = top.place.child(top.current if top.is_object else top.index)
            stack.append(_Frame(place, punct == "{"))
        elif punct in ("}", "]") and stack:
            frame = stack.pop()
            if frame.is_object:
                yield frame.place, frame.strings
        elif punct == "," and top is not None:
            top.current = None
            top.index += 1
    while stack:
        frame = stack.pop()
        if frame.is_object:
            yield frame.place, frame.strings


def encoded_bodies(text: str) -> list[tuple[int, int]]:
    """The spans (quotes included) of the `text` strings of HAR bodies exported as base64
    (`"encoding": "base64"`, as browsers save binary or compressed bodies), in order: what the
    reader decodes, so what content masking must leave alone."""
    spans = []
    for _place, strings in _objects(text):
        encoding, body = strings.get("encoding"), strings.get("text")
        said = None if encoding is None else _decode(text[encoding[0] : encoding[1]])
        if body is not None and said == "base64":
            spans.append(body)
    return sorted(spans)


def _where(place: _Place) -> str:
    if place.entry is None:
        return "HAR"
    return f"HAR entry {place.entry} {place.side}".rstrip()


def _decide(place: _Place, get: Callable[[str], str | None]) -> list[_Edit]:
    """What to replace in one HAR object, by its place and its name/value/url members."""
    where = _where(place)
    container = place.parent_key if isinstance(place.key, int) else None
    name, value = get("name"), get("value")
    edits: list[_Edit] = []
    if name is not None and value and value != REDACTED:
        what = None
        if container == "headers" and secret_header(name):
            what = f"{name} header"
        elif container == "cookies":
            what = f"cookie {name!r}"
        elif container in ("queryString", "params") and secret_param(name):
            what = f"{'query' if container == 'queryString' else 'form'} parameter {name!r}"
        if what:
            edits.append(("value", REDACTED, f"{what} ({where})", secrets_in(value)))
    keys = ["url", "redirectURL"] + (["value"] if container == "headers" and not edits else [])
    for key in keys:
        text = get(key)
        if not text:
            continue
        new, names, values = redact_query(text)
        new, passwords = redact_userinfo(new)
        said = [f"query parameter {param!r} in a URL ({where})" for param in names]
        said += [f"password in a URL ({where})" for _ in passwords]
        edits += _each(key, new, said, values + passwords)
    posted = get("text") if place.key == "postData" else None
    if posted and (get("mimeType") or "").startswith("application/x-www-form-urlencoded"):
        new, names, values = redact_query("&" + posted)
        said = [f"form parameter {param!r} in the posted text ({where})" for param in names]
        edits += _each("text", new[1:], said, values)
    elif posted and ("json" in (get("mimeType") or "") or posted.lstrip().startswith("{")):
        new, names, values = redact_json_members(posted)
        said = [f"member {member!r} of the posted JSON ({where})" for member in names]
        edits += _each("text", new, said, values)
    body = get("text") if place.key == "content" and get("encoding") != "base64" else None
    if body and ":" in body:
        new, said, values = redact_comments(body)
        edits += _each("text", new, [f"{words} ({where} body)" for words in said], values)
    return edits


def _each(key: str, new: str, said: list[str], values: list[str]) -> list[_Edit]:
    """One edit of a member per thing it removed; the values ride on the first alone (so that
    a member holding k secrets costs k, not k * k)."""
    return [(key, new, words, values if i == 0 else []) for i, words in enumerate(said)]


def _find(text: str) -> tuple[list[tuple[int, int, str]], list[str], set[str]]:
    """The spans to replace (start, end, new JSON text), what they remove, the secret values."""
    spans: dict[int, tuple[int, int, str]] = {}
    removed: list[str] = []
    secrets: set[str] = set()
    for place, strings in _objects(text):

        def get(key: str, strings: dict[str, tuple[int, int]] = strings) -> str | None:
            span = strings.get(key)
            return None if span is None else _decode(text[span[0] : span[1]])

        for key, new, said, found in _decide(place, get):
            start, end = strings[key]
            if start not in spans:  # one per member (its edits all carry the same new value)
                spans[start] = (start, end, json.dumps(new, ensure_ascii=False))
            removed.append(said)
            secrets.update(found)
    return sorted(spans.values()), removed, secrets


def _copies(secrets: set[str]) -> Copies:
    long = [s for s in secrets if len(s) >= LONG_ENOUGH and s != REDACTED]
    return Copies(json.dumps(s, ensure_ascii=a)[1:-1] for s in long for a in (True, False))


def _parse(text: str) -> tuple[object, bool]:
    try:
        return orjson.loads(text), True
    except orjson.JSONDecodeError:
        try:
            return json.loads(text), True
        except (ValueError, RecursionError):
            return None, False


def _clean(text: str, secrets: set[str], must_parse: bool) -> bool:
    if must_parse and not _parse(text)[1]:
        return False
    if _find(text)[0]:
        return False
    return not _copies(secrets).found_in(text)


def redact_har(text: str) -> tuple[str, list[str]]:
    """Redact a HAR in place (see the module docstring); fall back to re-serialising it."""
    spans, removed, secrets = _find(text)
    out, copies = _copies(secrets).replace(splice(text, spans), REDACTED)
    if copies:
        removed.append(f"{copies} more copies of those values elsewhere in the HAR")
    value, parses = _parse(text)
    if not removed or _clean(out, secrets, parses):
        return out, removed
    if not parses:
        return out, [*removed, "(the HAR is not valid JSON: redacted as far as it could be read)"]
    removed = _redact_tree(value, secrets)
    out = json.dumps(value, indent=2, ensure_ascii=False)
    return out, [*removed, "(the HAR had to be re-serialised, so its layout changed)"]


def _redact_tree(root: object, secrets: set[str]) -> list[str]:
    """Redact the parsed HAR in place: the secret members, then copies of their values."""
    removed: list[str] = []
    forms = {s for s in secrets if len(s) >= LONG_ENOUGH}
    strings: list[tuple[dict[str, object] | list[object], _Key, str]] = []
    stack: list[tuple[_Place, object]] = [(_ROOT, root)]
    while stack:
        place, node = stack.pop()
        if isinstance(node, dict):
            members = {k: v for k, v in node.items() if isinstance(v, str)}
            for member, new, said, found in _decide(place, members.get):
                node[member] = new
                removed.append(said)
                forms.update(s for s in found if len(s) >= LONG_ENOUGH)
            items: list[tuple[_Key, object]] = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        for key, child in items:
            if isinstance(child, dict | list):
                stack.append((place.child(key), child))
            elif isinstance(child, str):
                strings.append((node, key, child))
    copies = Copies(forms)
    for node, key, child in strings:
        new, count = copies.replace(child, REDACTED)
        if count:
            _set(node, key, new)
    return removed


def _set(node: dict[str, object] | list[object], key: _Key, value: object) -> None:
    if isinstance(node, dict):
        node[str(key)] = value
    else:
        node[int(key)] = value
