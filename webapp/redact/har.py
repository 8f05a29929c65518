"""Redaction of a HAR file in place: exact spans of secret strings, every other byte kept.

The JSON tokens are walked to find, for each object, its path and the spans of its string
members; `_decide` says which of them are secrets. The spans are replaced by "[redacted]",
copies of the secret values elsewhere too, and the result is walked again (and re-parsed)
to check nothing is left; if that check fails, the parsed HAR is redacted and re-serialised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import orjson

from webapp.redact.rules import (
    LONG_ENOUGH,
    REDACTED,
    redact_query,
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
_Path = tuple[_Key, ...]
_Edit = tuple[str, str, str, list[str]]
"""(key in the object, its new value, what was removed in words, the secret values)."""


class _Frame:
    """An open JSON container while walking tokens."""

    __slots__ = ("current", "index", "is_object", "key", "strings")

    def __init__(self, key: _Key | None, is_object: bool) -> None:
        self.key = key
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


def _objects(text: str) -> Iterator[tuple[_Path, dict[str, tuple[int, int]]]]:
    """Every JSON object's path and the spans of its string members, as each closes."""
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
            key = None if top is None else (top.current if top.is_object else top.index)
            stack.append(_Frame(key, punct == "{"))
        elif punct in ("}", "]") and stack:
            frame = stack.pop()
            if frame.is_object:
                yield _path(stack, frame), frame.strings
        elif punct == "," and top is not None:
            top.current = None
            top.index += 1
    while stack:
        frame = stack.pop()
        if frame.is_object:
            yield _path(stack, frame), frame.strings


def _path(stack: list[_Frame], frame: _Frame) -> _Path:
    if not stack:
        return ()
    keys = [f.key for f in stack[1:]] + [frame.key]
    return tuple(k if k is not None else "" for k in keys)


def _where(path: _Path) -> str:
    for i, key in enumerate(path[:-1]):
        if key == "entries" and isinstance(path[i + 1], int):
            entry = int(path[i + 1]) + 1
            side = path[i + 2] if len(path) > i + 2 and isinstance(path[i + 2], str) else ""
            return f"HAR entry {entry} {side}".rstrip()
    return "HAR"


def _decide(path: _Path, get: Callable[[str], str | None]) -> list[_Edit]:
    """What to replace in one HAR object, by its place and its name/value/url members."""
    where = _where(path)
    container = path[-2] if len(path) >= 2 and isinstance(path[-1], int) else None
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
        new, names, values = redact_query(text) if text else ("", [], [])
        for param in names:
            edits.append((key, new, f"query parameter {param!r} in a URL ({where})", values))
    return edits


def _find(text: str) -> tuple[list[tuple[int, int, str]], list[str], set[str]]:
    """The spans to replace (start, end, new JSON text), what they remove, the secret values."""
    spans: dict[int, tuple[int, int, str]] = {}
    removed: list[str] = []
    secrets: set[str] = set()
    for path, strings in _objects(text):

        def get(key: str, strings: dict[str, tuple[int, int]] = strings) -> str | None:
            span = strings.get(key)
            return None if span is None else _decode(text[span[0] : span[1]])

        for key, new, said, found in _decide(path, get):
            start, end = strings[key]
            spans[start] = (start, end, json.dumps(new, ensure_ascii=False))  # one per member
            removed.append(said)
            secrets.update(found)
    return sorted(spans.values()), removed, secrets


def _splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    pieces, last = [], 0
    for start, end, new in spans:
        pieces += [text[last:start], new]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _forms(secrets: set[str]) -> set[str]:
    long = [s for s in secrets if len(s) >= LONG_ENOUGH and s != REDACTED]
    return {json.dumps(s, ensure_ascii=a)[1:-1] for s in long for a in (True, False)}


def _scrub(text: str, secrets: set[str]) -> tuple[str, int]:
    copies = 0
    for form in sorted(_forms(secrets), key=len, reverse=True):
        copies += text.count(form)
        text = text.replace(form, REDACTED)
    return text, copies


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
    return not any(form in text for form in _forms(secrets))


def redact_har(text: str) -> tuple[str, list[str]]:
    """Redact a HAR in place (see the module docstring); fall back to re-serialising it."""
    spans, removed, secrets = _find(text)
    out, copies = _scrub(_splice(text, spans), secrets)
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
    removed: list[str] = []
    stack: list[tuple[_Path, object]] = [((), root)]
    forms = [s for s in secrets if len(s) >= LONG_ENOUGH]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            strings = {k: v for k, v in node.items() if isinstance(v, str)}
            for member, new, said, found in _decide(path, strings.get):
                node[member] = new
                removed.append(said)
                forms.extend(s for s in found if len(s) >= LONG_ENOUGH)
            items: list[tuple[_Key, object]] = list(node.items())
        elif isinstance(node, list):
            items = [(i, child) for i, child in enumerate(node)]
        else:
            continue
        for key, child in items:
            if isinstance(child, dict | list):
                stack.append(((*path, key), child))
            elif isinstance(child, str) and any(f in child for f in forms):
                for form in forms:
                    child = child.replace(form, REDACTED)
                _set(node, key, child)
    return removed


def _set(node: dict[str, object] | list[object], key: _Key, value: object) -> None:
    if isinstance(node, dict):
        node[str(key)] = value
    else:
        node[int(key)] = value
