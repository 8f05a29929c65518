"""A stream for each quirk code of the table, written here, with what it means.

Each is as small as the quirk allows and ends as a healthy stream ends (a `tool_calls` finish,
`[DONE]`) unless the quirk is about the end. `MEANS` is each stream's intended reading (None:
the stream admits more than one), `ALSO` the other codes the stream shows by construction.
"""

from __future__ import annotations

from typing import Any

from tests.streamkit import chunk, frag, sse

WEATHER = '{"city": "Paris"}'
TIME = '{"tz": "CET"}'


def _finish(reason: str = "tool_calls") -> dict[str, Any]:
    return chunk(finish=reason)


def _header(index: Any = 0, id: Any = "call_1", name: str = "get_weather") -> dict[str, Any]:
    return frag(index, id, name, "")


QUIRK_STREAMS: dict[str, str] = {
    "missing-index": sse(
        chunk(
            frag(id="call_1", name="get_weather", args=WEATHER),
            frag(id="call_2", name="get_time", args=TIME),
            role="assistant",
        ),
        _finish(),
    ),
    "bare-continuation": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(args='{"city":')),
        chunk(frag(args=' "Paris"}')),
        _finish(),
    ),
    "headerless-entry": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
        chunk(frag(1, args=TIME)),
        _finish(),
    ),
    "shared-index": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, args=WEATHER)),
        chunk(frag(0, "call_2", "get_time", "")),
        chunk(frag(0, args=TIME)),
        _finish(),
    ),
    "empty-id": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, "", args='{"city":')),
        chunk(frag(0, "", args=' "Paris"}')),
        _finish(),
    ),
    "empty-name": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, name="", args='{"city":')),
        chunk(frag(0, name="", args=' "Paris"}')),
        _finish(),
    ),
    "repeated-id": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, "call_1", args='{"city":')),
        chunk(frag(0, "call_1", args=' "Paris"}')),
        _finish(),
    ),
    "repeated-name": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, name="get_weather", args='{"city":')),
        chunk(frag(0, name="get_weather", args=' "Paris"}')),
        _finish(),
    ),
    "cumulative-arguments": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, args='{"city"')),
        chunk(frag(0, args='{"city": "Par')),
        chunk(frag(0, args=WEATHER)),
        _finish(),
    ),
    "arguments-resent": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, args='{"city":')),
        chunk(frag(0, args=' "Paris"}')),
        chunk(frag(0, "call_1", "get_weather", '{"city":"Paris"}')),
        _finish(),
    ),
    "after-complete": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, args=WEATHER)),
        chunk(frag(0, args='{"city": "Lyon"}')),
        _finish(),
    ),
    "call-after-finish": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
        _finish(),
        chunk(frag(1, "call_2", "get_time", TIME)),
    ),
    "repeated-finish": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
        _finish(),
        _finish(),
    ),
    "no-finish": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
    ),
    "stop-with-calls": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
        _finish("stop"),
    ),
    "index-not-from-zero": sse(
        chunk(frag(1, "call_1", "get_weather", ""), role="assistant"),
        chunk(frag(1, args=WEATHER)),
        _finish(),
    ),
    "no-choices-chunk": sse(
        chunk(frag(0, "call_1", "get_weather", WEATHER), role="assistant"),
        _finish(),
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "usage": {"total_tokens": 14}},
    ),
    "non-string-arguments": sse(
        chunk(frag(0, "call_1", "get_weather", {"city": "Paris"}), role="assistant"),
        _finish(),
    ),
    "missing-name": sse(
        chunk(frag(0, "call_1", args=WEATHER), role="assistant"),
        _finish(),
    ),
    "arguments-not-json": sse(
        chunk(_header(), role="assistant"),
        chunk(frag(0, args='{"city": "Par')),
        _finish(),
    ),
}
"""Quirk code -> the SSE text of a stream that shows it."""

_WEATHER = {"id": "call_1", "name": "get_weather", "arguments": WEATHER}
_TIME = {"id": "call_2", "name": "get_time", "arguments": TIME}

MEANS: dict[str, list[dict[str, Any]] | None] = {
    "missing-index": [_WEATHER, _TIME],
    "bare-continuation": [_WEATHER],
    "headerless-entry": None,
    "shared-index": [_WEATHER, _TIME],
    "empty-id": [_WEATHER],
    "empty-name": [_WEATHER],
    "repeated-id": [_WEATHER],
    "repeated-name": [_WEATHER],
    "cumulative-arguments": [_WEATHER],
    "arguments-resent": [_WEATHER],
    "after-complete": None,
    "call-after-finish": [_WEATHER, _TIME],
    "repeated-finish": [_WEATHER],
    "no-finish": [_WEATHER],
    "stop-with-calls": [_WEATHER],
    "index-not-from-zero": [_WEATHER],
    "no-choices-chunk": [_WEATHER],
    "non-string-arguments": [{**_WEATHER, "arguments": '{"city":"Paris"}'}],
    "missing-name": [{**_WEATHER, "name": None}],
    "arguments-not-json": [{**_WEATHER, "arguments": '{"city": "Par'}],
}
"""Each stream's intended calls (arguments compared as JSON where they parse)."""

ALSO: dict[str, set[str]] = {
    "bare-continuation": {"missing-index"},
    "headerless-entry": {"after-complete"},  # adr-0019 put its piece on the closed call
    "arguments-resent": {"repeated-id", "repeated-name"},  # the resend comes with id and name
    "missing-index": set(),
}
"""Other codes a stream shows by construction (a stream not named here shows only its own)."""
