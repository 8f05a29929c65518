"""How streamviz quotes an excerpt: a JSON string literal, the same on every path."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from webapp.core.words import quote


@given(text=st.text(alphabet=st.characters(codec=None)), limit=st.integers(0, 80))
def test_a_quote_is_the_json_literal_of_its_head(text: str, limit: int) -> None:
    # text JSON writes as it is takes a shortcut past json.dumps: the result is the same
    head = json.dumps(text[:limit], ensure_ascii=False)
    expected = "".join(f"\\x{ord(c):02x}" if 0x7F <= ord(c) < 0xA0 else c for c in head)
    assert quote(text, limit) == expected + ("..." if len(text) > limit else "")


def test_quotes_and_backslashes_are_escaped_on_the_short_path_too() -> None:
    assert quote('say "hi"\\') == '"say \\"hi\\"\\\\"'
    assert quote("plain ~ text", 5) == '"plain"...'
