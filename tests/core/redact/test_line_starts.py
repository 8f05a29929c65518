"""The header and comment passes find their lines from the line breaks: the same lines as the
patterns anchored at `^` find, without trying `^` at every character of a long body."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.core.redact import redact
from webapp.core.redact import rules as rules_module
from webapp.core.redact import text as text_module
from webapp.core.redact.rules import COMMENT_LINE, comment_lines

LINES = st.lists(
    st.sampled_from(
        [
            "data: {}",
            "data:{}",
            "data:[DONE]",
            "data:x$ curl -H 'Authorization: Bearer abcdefghijklmnop' x",
            "",
            "\r",
            ": ping",
            ":",
            "> GET /v1 HTTP/1.1",
            "> Authorization: Bearer sk-abcdefghijklmnopqrstuvwx",
            "HTTP/1.1 200 OK",
            "x-api-key: abcdefghijklmnopqrstu",
            "$ curl -H 'api-key: abcdefghijklmnop' https://a",
            "* [HTTP/2] [1] [authorization: Bearer abcdefghijklmnop]",
            "POST /v1/chat HTTP/1.1",
            " folded",
            "<",
            "event: x",
        ]
    ),
    max_size=14,
)


@given(LINES, st.sampled_from(["\n", "\r\n"]))
def test_next_opener_is_the_search_from_every_position(lines: list[str], end: str) -> None:
    text = end.join(lines)
    for pos in range(len(text) + 1):
        want = text_module._OPENER.search(text, pos)
        got = text_module._next_opener(text, pos)
        assert (got and got.span()) == (want and want.span()), (text, pos)


@given(LINES, st.sampled_from(["\n", "\r\n"]))
def test_comment_lines_are_the_patterns(lines: list[str], end: str) -> None:
    text = end.join(lines)
    assert list(comment_lines(text)) == [m.span() for m in COMMENT_LINE.finditer(text)]


class _Searched:
    """A pattern that says so when it is searched (or iterated) from position to position."""

    def __init__(self, pattern: Any, searched: list[str]) -> None:
        self.pattern = pattern
        self.searched = searched

    def search(self, *args: Any) -> Any:
        self.searched.append("search")
        return self.pattern.search(*args)

    def finditer(self, *args: Any) -> Any:
        self.searched.append("finditer")
        return self.pattern.finditer(*args)

    def match(self, *args: Any) -> Any:
        return self.pattern.match(*args)


def test_a_long_body_is_never_searched_character_by_character(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plain stream's body is its data lines and blank lines: the header pass looks at the
    lines that may open a block (here the one comment line and the HTTP lines), not at every
    character, and still removes what they hold."""
    searched: list[str] = []
    monkeypatch.setattr(text_module, "_OPENER", _Searched(text_module._OPENER, searched))
    monkeypatch.setattr(rules_module, "COMMENT_LINE", _Searched(COMMENT_LINE, searched))
    body = 'data: {"choices":[{"delta":{"content":"x"}}]}\n\n' * 2000
    secret = "abcdefghijklmnopqrstuvwx"
    text = (
        f"{body}: api_key={secret}\n\n{body}> GET /v1 HTTP/1.1\n"
        f"> Authorization: Bearer {secret}\n{body}"
    )
    done = redact(text)
    assert secret not in done.text
    assert len(done.removed) == 2
    assert searched == []
