"""The library's search: what a stream is found by besides its title, kept when it is stored.

A stream's terms are lowercased strings of a few kinds (its model, the tools it calls or
declares, its call ids, its anomaly and quirk codes, and the values in its calls' arguments,
each word of them apart), each also kept from every `_`, `-`, `.`, `:` or `/` on (so "weather"
finds get_weather). A search is words; a stream matches when each word is in its title or
starts one of its terms. A term prefix is a range over an index
(`term >= 'get' AND term < 'geu'`), the same SQL on SQLite and PostgreSQL (whose column is
collated by code point, as SQLite's BINARY is).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from webapp.storage.store import LIVE, Storage

TERMS_VERSION = 3
"""Streams whose terms are of an older version (0: stored before there were terms, 1: before
the arguments' values, 2: before a paste that stops short was judged without its end, whose
terms named the anomalies and quirks of that end) are indexed again, their library numbers
too, by `webapp.web.backend.library.indexing.Backfill`."""
KINDS = ("model", "tool", "call", "anomaly", "quirk", "value")
MAX_TERM = 120
"""A longer name or id is kept cut to this many characters (a search word is a prefix)."""
MAX_PER_KIND = 64
"""At most this many values of one kind per stream (a stream of 90,000 phantom calls keeps its
first 64 ids)."""
MAX_VALUE_WORDS = 256
"""At most this many words of the arguments' values per stream (the first calls' first)."""
VALUE_CHARS = 200
"""Of a longer value only the words in its first this many characters are kept."""
MAX_WORDS = 8
"""A search's words past this many are ignored."""
_SPLIT = re.compile(r"[_\-.:/]+")
_EDGES = " \t,;\"'()[]{}<>"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""What no text column keeps: NUL (PostgreSQL) and lone surrogates (UTF-8)."""


def _suffixes(term: str) -> Iterable[str]:
    """The term, and what follows each separator in it: get_current_weather, current_weather,
    weather."""
    yield term
    for match in _SPLIT.finditer(term):
        rest = term[match.end() :]
        if len(rest) >= 2:
            yield rest


def _value_words(values: Iterable[object]) -> Iterable[str]:
    """Each word of each value (a value in an argument: `"Edinburgh, Scotland"` is found by
    either word), cut the way a search's words are."""
    for value in values:
        if isinstance(value, str):
            yield from words(value[:VALUE_CHARS], None)


def terms_of(found: Mapping[str, Iterable[object]]) -> set[tuple[str, str]]:
    """(kind, term) pairs from the values found per kind; non-strings and empties are left out."""
    pairs: set[tuple[str, str]] = set()
    for kind in KINDS:
        seen: set[str] = set()
        given = found.get(kind, ())
        most = MAX_VALUE_WORDS if kind == "value" else MAX_PER_KIND
        for value in _value_words(given) if kind == "value" else given:
            if not isinstance(value, str):
                continue
            term = _UNSTORABLE.sub("\ufffd", " ".join(value.lower().split()))[:MAX_TERM]
            if not term or term in seen:
                continue
            seen.add(term)
            if len(seen) > most:
                break
            pairs.update((kind, part[:MAX_TERM]) for part in _suffixes(term))
    return pairs


def words(search: str, most: int | None = MAX_WORDS) -> list[str]:
    """The words of a search (the first `most`, None: all), lowercased, punctuation around
    them dropped."""
    found = [word.strip(_EDGES) for word in _UNSTORABLE.sub("\ufffd", search.lower()).split()]
    return [word for word in found if word][:most]


def after_prefix(word: str) -> str | None:
    """The least string greater than every string that starts with `word` (None: no bound)."""
    for at in range(len(word) - 1, -1, -1):
        code = ord(word[at]) + 1
        if code == 0xD800:  # surrogates are no characters of UTF-8 text
            code = 0xE000
        if code <= 0x10FFFF:
            return word[:at] + chr(code)
    return None


def like(text: str) -> str:
    """A LIKE pattern that finds `text` anywhere, its `%`, `_` and `\\` taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def matching(search: str) -> tuple[list[str], list[Any]]:
    """SQL conditions on `streams` (one per word, all to hold) and their parameters."""
    where: list[str] = []
    params: list[Any] = []
    for word in words(search):
        bound = after_prefix(word)
        terms = "term >= ?" + (" AND term < ?" if bound is not None else "")
        where.append(
            "(LOWER(title) LIKE ? ESCAPE '\\' OR id IN "
            f"(SELECT stream_id FROM stream_terms WHERE {terms}))"
        )
        params += [like(word), word, *([bound] if bound is not None else [])]
    return where, params


class Search:
    """The terms of every stream (removed with their stream)."""

    def __init__(self, storage: Storage) -> None:
        self._backend = storage.backend

    def index(self, stream_id: str, found: Mapping[str, Iterable[object]]) -> bool:
        """Replace the stream's terms with those of `found`; False when there is no stream."""
        pairs = sorted(terms_of(found))
        with self._backend.transaction() as run:
            rows = run(
                "UPDATE streams SET terms_version = ? WHERE id = ? RETURNING id",
                (TERMS_VERSION, stream_id),
            )
            if not rows:
                return False
            run("DELETE FROM stream_terms WHERE stream_id = ?", (stream_id,))
            for start in range(0, len(pairs), 100):
                batch = pairs[start : start + 100]
                values = ", ".join("(?, ?, ?)" for _ in batch)
                params = [item for kind, term in batch for item in (stream_id, kind, term)]
                run(
                    f"INSERT INTO stream_terms (stream_id, kind, term) VALUES {values} "
                    "ON CONFLICT DO NOTHING",  # another worker indexing it at the same time
                    params,
                )
        return True

    def terms(self, stream_id: str) -> dict[str, list[str]]:
        """The stream's terms by kind, sorted."""
        rows = self._backend.run(
            "SELECT kind, term FROM stream_terms WHERE stream_id = ? ORDER BY kind, term",
            (stream_id,),
        )
        found: dict[str, list[str]] = {}
        for kind, term in rows:
            found.setdefault(str(kind), []).append(str(term))
        return found

    def unindexed(self, limit: int) -> list[str]:
        """Up to `limit` streams, newest first, whose terms are missing or out of date (a live
        capture's come when it ends)."""
        rows = self._backend.run(
            "SELECT id FROM streams WHERE terms_version < ? AND id NOT IN "
            "(SELECT stream_id FROM captures WHERE state = ?) "
            "ORDER BY created DESC, id DESC LIMIT ?",
            (TERMS_VERSION, LIVE, limit),
        )
        return [str(row[0]) for row in rows]
