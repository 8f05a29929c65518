"""The one kit for test streams: fragments, chunks, records, and writers for every input format."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from webapp.compiled import copy_sources
from webapp.core.records import Record

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = sorted(
    [
        *(ROOT / "tests" / "corpus" / "real").glob("*.sse"),
        *(ROOT / "bench" / "recordings").glob("*.sse"),
    ]
)
"""Every real recording kept here: a provider's own bytes, each with its public origin
(tests/corpus/real/ORIGINS.md, bench/recordings/ORIGINS.md)."""


@cache
def _sources() -> str:
    """A copy of this checkout's package without its compiled modules (as the pure-Python wheel
    installs it), made once per session and removed at exit."""
    folder = tempfile.mkdtemp(prefix="streamviz-sources-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return copy_sources(folder, str(ROOT))


def on_sources(code: str, stdin: str = "") -> str:
    """What `code` prints in an interpreter of its own that runs this checkout's core from its
    sources, interpreted (a copy without the compiled modules first on its path; `-P`: not the
    working directory before it)."""
    done = subprocess.run(
        [sys.executable, "-P", "-c", code],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": _sources()},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


ABSENT: Any = object()
"""A key left out (as opposed to present with the value null): the kit's one marker for it."""


def frag(index: Any = ABSENT, id: Any = ABSENT, name: Any = ABSENT, args: Any = ABSENT) -> dict:
    """One `delta.tool_calls` entry; keys left ABSENT are not in it at all (an id adds a type)."""
    out: dict[str, Any] = {}
    if index is not ABSENT:
        out["index"] = index
    if id is not ABSENT:
        out["id"] = id
        out["type"] = "function"
    function = {
        key: value for key, value in (("name", name), ("arguments", args)) if value is not ABSENT
    }
    if function:
        out["function"] = function
    return out


def chunk(
    *fragments: dict[str, Any],
    content: Any = ABSENT,
    finish: Any = None,
    choice: int = 0,
    model: Any = ABSENT,
    **delta_fields: Any,
) -> dict[str, Any]:
    """A `chat.completion.chunk` with one choice: delta fields, content, then the fragments.

    `finish` is the choice's `finish_reason` (null unless given; ABSENT leaves the key out);
    `model` is left out unless given; any other keyword is a delta field (`reasoning_content`,
    or `tool_calls=[]` for an empty list).
    """
    delta: dict[str, Any] = dict(delta_fields)
    if content is not ABSENT:
        delta["content"] = content
    if fragments:
        delta["tool_calls"] = list(fragments)
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk"}
    if model is not ABSENT:
        body["model"] = model
    picked: dict[str, Any] = {"index": choice, "delta": delta}
    if finish is not ABSENT:
        picked["finish_reason"] = finish
    body["choices"] = [picked]
    return body


def records(values: list[Any], *, done: bool = True) -> list[Record]:
    """Chunk records on the lines an SSE file would put them (1, 3, 5, ...), then `[DONE]`."""
    out = [Record("chunk", 2 * i + 1, value) for i, value in enumerate(values)]
    if done:
        out.append(Record("done", 2 * len(values) + 1, text="[DONE]"))
    return out


def tool_stream(tool_call_chunks: list[list[dict]], finish: Any = "tool_calls") -> list[Record]:
    """One chunk per list of fragments, a finish chunk with an empty delta, then `[DONE]`."""
    values = [chunk(*calls) for calls in tool_call_chunks]
    values.append(chunk(finish=finish))
    return records(values)


# Writers: chunks in, the text of one input format out.


def sse(*events: Any, done: bool = True) -> str:
    """Server-sent events, one `data:` event per chunk (a str goes in as it is), then `[DONE]`."""
    parts = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts)


def json_array(*chunks: Any) -> str:
    """A pretty-printed JSON array of chunks."""
    return json.dumps(list(chunks), indent=2) + "\n"


def jsonl(*chunks: Any) -> str:
    """JSON Lines, one chunk per line."""
    return "".join(json.dumps(c) + "\n" for c in chunks)


def har(*chunks: Any, model: str = "demo-model", tools: list[dict[str, Any]] | None = None) -> str:
    """A HAR file with one chat-completions entry whose response body is the SSE stream."""
    request = {"model": model, "stream": True, "tools": tools or []}
    entry = {
        "request": {
            "method": "POST",
            "url": "https://api.example.com/v1/chat/completions?key=secret",
            "postData": {"mimeType": "application/json", "text": json.dumps(request)},
        },
        "response": {
            "status": 200,
            "content": {"mimeType": "text/event-stream", "text": sse(*chunks)},
        },
    }
    return json.dumps({"log": {"version": "1.2", "entries": [entry]}})


def har_of(*bodies: str) -> str:
    """A HAR file with one chat-completions entry per SSE body, each to a host of its own
    (`https://host1.example/...` for the first)."""
    entries = [
        {
            "request": {"method": "POST", "url": f"https://host{k}.example/v1/chat/completions"},
            "response": {"status": 200, "content": {"mimeType": "text/event-stream", "text": b}},
        }
        for k, b in enumerate(bodies, 1)
    ]
    return json.dumps({"log": {"entries": entries}})


def pyrepr(*chunks: dict[str, Any]) -> str:
    """What printing openai-python's chunk objects shows, one per line (chunks need a model)."""
    return "".join(_chunk_repr(c) + "\n" for c in chunks)


def _chunk_repr(value: dict[str, Any]) -> str:
    choices = ", ".join(_choice_repr(c) for c in value["choices"])
    return (
        f"ChatCompletionChunk(id={value['id']!r}, choices=[{choices}], created=1, "
        f"model={value['model']!r}, object='chat.completion.chunk')"
    )


def _choice_repr(choice: dict[str, Any]) -> str:
    delta = choice["delta"]
    calls = delta.get("tool_calls")
    shown = "None" if calls is None else "[" + ", ".join(map(_call_repr, calls)) + "]"
    return (
        f"Choice(delta=ChoiceDelta(content={delta.get('content')!r}, role=None, "
        f"tool_calls={shown}), finish_reason={choice['finish_reason']!r}, "
        f"index={choice['index']!r})"
    )


def _call_repr(fragment: dict[str, Any]) -> str:
    function = fragment.get("function", {})
    return (
        f"ChoiceDeltaToolCall(index={fragment.get('index')!r}, id={fragment.get('id')!r}, "
        f"function=ChoiceDeltaToolCallFunction(arguments={function.get('arguments')!r}, "
        f"name={function.get('name')!r}), type={fragment.get('type')!r})"
    )


WRITERS = {"sse": sse, "json": json_array, "jsonl": jsonl, "har": har, "repr": pyrepr}
"""Every input format the readers take, by the name `--input-format` gives it."""
