"""What a cassette holds counts against the input's size limit: its YAML aliases written out,
its bodies inflated (each use of one), so that a small upload cannot make gigabytes (issue 31:
a 37 KB POST whose aliases all pointed at one gzip body took the server to 1,074 MB)."""

from __future__ import annotations

import base64
import gzip
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from webapp.core.readers import read
from webapp.core.readers.cassette import decoded_cassette
from webapp.core.readers.codings import OverLimit
from webapp.settings import DEFAULT_MAX_BYTES

CHUNK = (
    'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,'
    '"delta":{"content":"hello world "},"finish_reason":null}]}\n\n'
)
MB = 1 << 20


def bomb(body_bytes: int, aliases: int, coding: str = "gzip") -> str:
    """A cassette whose one interaction, anchored, holds a gzip body of `body_bytes` bytes of
    stream, followed by `aliases` aliases to it."""
    body = (CHUNK * (body_bytes // len(CHUNK) + 1))[:body_bytes].encode()
    packed = gzip.compress(body, 9) if coding == "gzip" else zlib.compress(body, 9)
    lines = "".join(
        "        " + line + "\n" for line in base64.encodebytes(packed).decode().split()
    )
    head = (
        "interactions:\n- &a\n  request:\n    method: POST\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        f"  response:\n    body:\n      string: !!binary |\n{lines}"
        f"    headers:\n      Content-Encoding:\n      - {coding}\n"
        "      Content-Type:\n      - text/event-stream\n    status:\n      code: 200\n"
    )
    return head + "- *a\n" * aliases + "version: 1\n"


def peak(work: Callable[[], Any]) -> int:
    """The most memory Python held at once (above what it held before) while `work` ran."""
    tracemalloc.start()
    try:
        work()
    except OverLimit:
        pass
    finally:
        _, most = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return most


def test_the_37_kb_bomb_of_the_issue_is_refused_in_little_memory() -> None:
    text = bomb(MB, 6100)
    assert 35_000 < len(text) < 40_000
    for work in (lambda: read(text), lambda: decoded_cassette(text)):
        with pytest.raises(OverLimit, match="the cassette's bodies, inflated, pass the size limit"):
            work()
        # every use counts: 64 uses of the one body pass the 64 MiB limit, without 64 copies
        assert peak(work) < 12 * MB


def test_aliases_count_against_the_limit_before_anything_is_inflated() -> None:
    text = bomb(MB, 6100)
    with pytest.raises(OverLimit, match=r"with its aliases written out, passes the size limit of "
                       r"50,000 bytes"):  # fmt: skip
        read(text, limit=50_000)
    with pytest.raises(OverLimit, match="aliases written out"):
        decoded_cassette(text, 50_000)


def test_a_body_that_inflates_past_the_limit_stops_at_the_limit() -> None:
    text = bomb(16 * MB, 0)
    assert len(text) < 100_000
    with pytest.raises(OverLimit, match=r"pass the size limit of 1,048,576 bytes at interaction 1"):
        read(text, limit=MB)
    assert peak(lambda: read(text, limit=MB)) < 4 * MB  # one limit and a piece, not 16 MB
    with pytest.raises(OverLimit, match="pass the size limit"):
        read(bomb(16 * MB, 0, "deflate"), limit=MB)


def test_under_the_limit_every_use_of_a_body_is_read() -> None:
    text = bomb(100_000, 3)
    found = read(text, limit=500_000)
    assert [entry.number for entry in found.entries] == [1, 2, 3, 4]
    with pytest.raises(OverLimit, match="at interaction 4"):
        read(text, limit=350_000)
    assert DEFAULT_MAX_BYTES == 64 * MB  # the command line's limit, as the server's default


def test_an_alias_inside_what_it_names_is_refused() -> None:
    with pytest.raises(OverLimit, match="would never end"):
        read("interactions: &a [*a]\n")


def test_merge_keys_of_merge_keys_are_counted_before_they_are_built() -> None:
    """`<<: [*a, *a, ...]` copies what it merges when the mapping is built: measured first."""
    keys = "".join(f"  k{n}: v\n" for n in range(20))
    levels = [f"l0: &l0\n{keys}"]
    for level in range(1, 8):
        merged = ", ".join(f"*l{level - 1}" for _ in range(20))
        levels.append(f"l{level}: &l{level}\n  <<: [{merged}]\n  own{level}: v\n")
    text = "".join(levels) + "interactions: []\n"
    with pytest.raises(OverLimit, match="aliases written out"):
        read(text, limit=DEFAULT_MAX_BYTES)
    assert peak(lambda: read(text, limit=DEFAULT_MAX_BYTES)) < 4 * MB
