"""`parses` and `classify` answer as `loads` does, though they ask the standard library only
when it may differ."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from webapp.core.jsoncheck import classify, loads, parses


def _loads_takes(text: str) -> bool:
    try:
        loads(text)
    except (ValueError, RecursionError):
        return False
    return True


json_ish = st.text(alphabet='{}[]":,.-+eE0123456789 \\udcDCabfn\ttrule', max_size=40)


@settings(max_examples=500, deadline=None)
@given(json_ish)
@example('"\\ud800"')
@example('"\\uDC00"')
@example("1" * 400)
@example("-1E+999")
@example("[1e400]")
@example("NaN")
@example('{} "\\ud800"')  # a whole value, then what only the standard library reads
@example("[1] 1e400")
@example('"\\ud800" x')
@example('x "\\ud800"')  # plain syntax first: neither takes it, whatever comes after
@example("[1,] [1e400]")
@example('{"a" 1, "b": "\\udc00"}')
@example('"\x01\\ud800"')
@example("01 [1e400]")
def test_parses_agrees_with_loads(text: str) -> None:
    assert parses(text) is _loads_takes(text)
    complete = classify(text).state == "complete"
    assert complete is (_loads_takes(text) and bool(text.strip(" \t\n\r")))
