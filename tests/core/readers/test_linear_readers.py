"""Every reader costs time linear in its input, on inputs built to make it do the most work.

Each input is read at two sizes, n and 8n: linear time takes about 8 times as long, quadratic
64 times. The best of several runs is kept (the machine is shared); the bound, 20, leaves room
for noise and none for a square.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pytest

from tests.timing import GROWTH, assert_linear
from webapp.core.readers import read
from webapp.core.records import ReaderError

GOOD = '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}'
BROKEN = '{"choices":[{"index":0,"delta":{"content":tru}}]}'
PRETTY_BROKEN = '{\n  "choices": [\n    {"index": 0, "delta": {"content": tru}}\n  ]\n}\n'
TRUNCATED = '{"choices":[{"index":0,"delta":{"content":"cut'
REPR = (
    "ChatCompletionChunk(id='c', choices=[Choice(delta=ChoiceDelta(content='a', "
    "tool_calls=None), finish_reason=None, index=0)], created=1, model='m', "
    "object='chat.completion.chunk')\n"
)
HAR_ENTRY = (
    '{"request": {"method": "POST", "url": "https://x/v1/chat/completions"}, '
    '"response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": '
    '"data: {\\"choices\\": []}\\n\\n"}}}'
)

Build = Callable[[int], str]

INPUTS: dict[str, tuple[Build, str]] = {
    # SSE: events whose data lines are each a chunk (read one per line), events that join
    # into invalid JSON, long comment lines, unknown fields and empty events.
    "sse-grepped-data-lines": (lambda n: f"data: {GOOD}\n" * (4 * n) + "\n", "sse"),
    "sse-joined-invalid": (lambda n: f"data: {GOOD}\ndata: {{oops\n\n" * (2 * n), "sse"),
    "sse-comments-and-fields": (
        lambda n: (": " + "x" * 200 + "\nfoo: bar\nevent: e\n\n" + f"data: {GOOD}\n\n") * n,
        "sse",
    ),
    # HTTP dumps: curl -v with many headers, progress-meter look-alikes in the body.
    "http-verbose-head": (
        lambda n: (
            "* Trying\n"
            + "< x-h: "
            + "v" * 50
            + "\n" * 1
            + "< x-h: v\n" * (4 * n)
            + "< HTTP/1.1 200 OK\n\n"
            + f"data: {GOOD}\n\n" * n
        ),
        "auto",
    ),
    "http-progress-like-body": (
        lambda n: (
            "HTTP/1.1 200 OK\ncontent-type: text/event-stream\n\n"
            + ("1 2 3 4 5 6 7 " + "9" * 100 + " Dload\n" + f"data: {GOOD}\n\n") * n
        ),
        "auto",
    ),
    # JSON: broken values compact on one line, pretty, truncated, with comments, unclosed
    # brackets and strings, and a JSON Lines file with broken lines.
    "json-broken-compact": (lambda n: "[" + f"{GOOD},{BROKEN}," * n + "]", "auto"),
    "json-broken-pretty": (lambda n: f"{GOOD}\n{PRETTY_BROKEN}" * n, "auto"),
    "json-broken-indented-deeper": (lambda n: f"{GOOD}\n      {BROKEN}\n  {GOOD}\n" * n, "json"),
    "json-truncated-records": (lambda n: f"{TRUNCATED}\n{GOOD}\n" * n, "json"),
    "json-unclosed-brackets": (lambda n: "[{" * (10 * n) + "}]" * (5 * n), "json"),
    "json-mismatched-brackets": (lambda n: "[" * (2 * n) + "}" * (2 * n), "json"),
    "json-unclosed-strings": (lambda n: '{"a": "' + ('\\"' * 20 + "\n") * n, "json"),
    "json-comments-trailing-commas": (
        lambda n: f"[\n  // note\n  {GOOD}, /* more */\n  {BROKEN},\n]\n" * n,
        "auto",
    ),
    "jsonl-broken-lines": (lambda n: f"{GOOD}\n{BROKEN}\n{{oops\n" * n, "jsonl"),
    "har-many-entries": (
        lambda n: '{"log": {"entries": [' + ", ".join([HAR_ENTRY] * (2 * n)) + "]}}",
        "auto",
    ),
    "repr-chunks-and-junk": (lambda n: (REPR + "not a repr (\n") * n, "repr"),
    # Detection that tries every reader and gives up.
    "detect-nothing-readable": (
        lambda n: ("   " * 30 + "\n" + "  data: x\n" + "Choice is not a repr\n") * n,
        "auto",
    ),
    "detect-space-lines": (lambda n: (" " * 500 + "\n") * (2 * n) + "x\n", "auto"),
}


def _reading(text: str, fmt: str) -> Callable[[], object]:
    def run() -> None:
        with contextlib.suppress(ReaderError):
            read(text, fmt)

    return run


@pytest.mark.parametrize("name", list(INPUTS))
def test_time_grows_linearly(name: str) -> None:
    build, fmt = INPUTS[name]
    n = 400
    small, large = build(n), build(GROWTH * n)
    assert_linear(name, _reading(small, fmt), _reading(large, fmt))
