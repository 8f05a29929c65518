"""The lens tests' streams, each written for one known outcome, and the golden files' format.

`python -m tests.lenses.regen` runs every lens on these streams and rewrites the golden files;
review the diff before committing it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.streamkit import chunk, frag, sse
from webapp.lenses.pins import PINS
from webapp.lenses.results import LensResult

GOLDEN = Path(__file__).parent / "golden"
CORPUS = Path(__file__).parent.parent / "corpus"

STREAMS: dict[str, str] = {
    "clean": sse(
        chunk(frag(0, "call_1", "get_weather", ""), role="assistant"),
        chunk(frag(0, args='{"city":')),
        chunk(frag(0, args=' "Paris"}')),
        chunk(finish="tool_calls"),
    ),
    "continuation-without-index": sse(
        chunk(frag(0, "call_1", "get_weather", ""), role="assistant"),
        chunk(frag(args='{"city":')),
        chunk(frag(args=' "Paris"}')),
        chunk(finish="tool_calls"),
    ),
    "parallel-on-index-0": sse(
        chunk(frag(0, "call_a", "get_weather", ""), role="assistant"),
        chunk(frag(0, args='{"city": "Paris"}')),
        chunk(frag(0, "call_b", "get_time", "")),
        chunk(frag(0, args='{"tz": "CET"}')),
        chunk(finish="tool_calls"),
    ),
    "empty-ids": sse(
        chunk(frag(0, "", "get_weather", ""), role="assistant"),
        chunk(frag(0, "", args='{"city":')),
        chunk(frag(0, "", args=' "Paris"}')),
        chunk(finish="tool_calls"),
    ),
    "nameless-header-with-id": sse(
        chunk(frag(0, "call_1", args=""), role="assistant"),
        chunk(frag(0, name="get_weather", args='{"city":')),
        chunk(frag(0, args=' "Paris"}')),
        chunk(finish="tool_calls"),
    ),
    "arguments-never-close": sse(
        chunk(frag(0, "call_1", "get_weather", ""), role="assistant"),
        chunk(frag(0, args='{"city": "Par')),
        chunk(finish="tool_calls"),
    ),
    "record-example": (CORPUS / "no-index.sse").read_text(encoding="utf-8"),
}
"""Name -> SSE text. `record-example` is decision 0019's own case: argument chunks with no
index, no id and no name after a header."""

_GENERATED = "<generated>"


GENERATES_IDS = ("vercel-ai",)
"""Clients that make up an id (different every run) for a call the stream gave none."""


def normal(result: LensResult, sse_text: str) -> dict[str, Any]:
    """A result as a golden file holds it: ids that Vercel made up become `<generated>`."""
    calls = []
    for call in result.calls:
        out = call.to_json()
        made_up = out["id"] and json.dumps(out["id"]) not in sse_text
        if result.client in GENERATES_IDS and made_up:
            out["id"] = _GENERATED
        calls.append(out)
    return {"status": result.status, "calls": calls, "error": result.error}


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def load_golden(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(golden_path(name).read_text(encoding="utf-8"))
    return value


def pinned_versions() -> dict[str, str]:
    return {pin.client: pin.version for pin in PINS}
