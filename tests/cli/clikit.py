"""The CLI tests' fixture types and their small streams (built with tests.streamkit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from click.testing import Result

from tests.streamkit import chunk, frag

Invoke = Callable[..., Result]
"""The `invoke` fixture: run `streamviz ARGS...` in-process (conftest.py)."""
Write = Callable[..., str]
"""The `write` fixture: put text in a file under tmp_path, return its path."""

MODEL = "demo-model"
"""The model every CLI stream's chunks name (the repr writer needs one)."""

CONTINUATION = [
    chunk(content="Let me check.", model=MODEL),
    chunk(frag(0, "call_1", "get_weather", ""), model=MODEL),
    chunk(frag(0, args='{"city":'), model=MODEL),
    chunk(frag(args='"Paris"}'), model=MODEL),
    chunk(finish="tool_calls", model=MODEL),
]
"""A header, an index-0 fragment, then a bare continuation: a phantom under exact-key."""

CLEAN = [
    chunk(frag(0, "call_1", "get_weather", '{"city":'), model=MODEL),
    chunk(frag(0, args='"Oslo"}'), model=MODEL),
    chunk(finish="tool_calls", model=MODEL),
]
"""Nothing to report under either policy."""

SERVER = [
    chunk(frag(0, "call_s", "web_search", '{"q":"weather"}'), model=MODEL),
    chunk(frag(1, "call_c", "get_weather", '{"city":"Rome"}'), model=MODEL),
    chunk(finish="tool_calls", model=MODEL),
]
"""A server-tool call (web_search) then a client call (get_weather)."""


def two_choices() -> list[dict[str, Any]]:
    """An n=2 stream: choice 0 calls get_weather, choice 1 calls get_time."""
    calls = chunk(frag(0, "call_a", "get_weather", '{"city":"Oslo"}'), model=MODEL)
    calls["choices"] += chunk(frag(0, "call_b", "get_time", "{}"), choice=1)["choices"]
    stop = chunk(finish="tool_calls", model=MODEL)
    stop["choices"] += chunk(finish="tool_calls", choice=1)["choices"]
    return [calls, stop]
