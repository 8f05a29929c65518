"""The lens tests' streams, each written for one known outcome, and the golden files' format.

`python -m tests.lenses.regen` runs every lens on these streams and rewrites the golden files;
review the diff before committing it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.contract.streams import QUIRK_STREAMS
from tests.streamkit import chunk, frag, sse
from webapp.core.contract import read_contract
from webapp.core.readers import read
from webapp.lenses.matrix import build
from webapp.lenses.pins import PINS
from webapp.lenses.results import LensResult, result_from_json
from webapp.lenses.runner import Lens, run_lens
from webapp.triage.verdict import BUILD, Verdict, judge

GOLDEN = Path(__file__).parent / "golden"
GRADES = GOLDEN / "grades"
CORPUS = Path(__file__).parent.parent / "corpus"
REAL = CORPUS / "real"

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
    "two-calls-open": (CORPUS / "two-calls-open-continuations.sse").read_text(encoding="utf-8"),
    **{f"quirk-{code}": text for code, text in QUIRK_STREAMS.items()},
    **{
        f"real-{path.stem}": path.read_text(encoding="utf-8") for path in sorted(REAL.glob("*.sse"))
    },
}
"""Name -> SSE text. `record-example` is decision 0019's own case: argument chunks with no
index, no id and no name after a header; `two-calls-open` the case it has to guess; then a
stream for each quirk code (tests/contract/streams.py) and the real recordings
(tests/corpus/real/ORIGINS.md)."""

_GENERATED = "<generated>"


GENERATES_IDS = ("vercel-ai",)
"""Clients that make up an id (different every run) for a call the stream gave none."""


def normal(result: LensResult, sse_text: str) -> dict[str, Any]:
    """A result as a golden file holds it: ids that Vercel made up become `<generated>`, and
    memory addresses in a message (`<built-in method index of str object at 0x7f...>`) `0x?`."""
    calls = []
    for call in result.calls:
        out = call.to_json()
        made_up = out["id"] and json.dumps(out["id"]) not in sse_text
        if result.client in GENERATES_IDS and made_up:
            out["id"] = _GENERATED
        if out.get("invalid") is not None:
            out["invalid"] = _ADDRESS.sub("0x?", out["invalid"])
        calls.append(out)
    error = None if result.error is None else _ADDRESS.sub("0x?", result.error)
    return {"status": result.status, "calls": calls, "error": error}


_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def load_golden(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(golden_path(name).read_text(encoding="utf-8"))
    return value


def pinned_versions() -> dict[str, str]:
    return {pin.client: pin.version for pin in PINS}


def golden_verdict(name: str, golden: dict[str, Any]) -> Verdict:
    """The verdict on a stream from its golden lens results, the columns lined up on what the
    stream means: what the grade goldens hold."""
    versions = golden["versions"]
    columns = [result_from_json(client, versions[client], found)
               for client, found in golden["results"].items()]  # fmt: skip
    columns += [result_from_json(policy, BUILD, found)
                for policy, found in golden["policies"].items()]  # fmt: skip
    source = read(STREAMS[name], "sse")
    contract = read_contract(source.records)
    matrix = build(columns, contract.intended)
    return judge(contract, columns, model=source.model, matrix=matrix)


def grade_document(name: str, golden: dict[str, Any]) -> dict[str, Any]:
    """A grade golden: the stream's quirks and intended reading, every grade, the headline,
    what to file with whom, and the comparison against what the stream means."""
    verdict = golden_verdict(name, golden)
    contract = verdict.contract
    return {
        "stream": name,
        "versions": golden["versions"],
        "quirks": [found.code for found in contract.quirks],
        "intended": None if contract.intended is None else contract.intended.to_json(),
        "why": contract.why,
        "grades": {g.client: {"grade": g.grade, "detail": g.detail} for g in verdict.grades},
        "verdict": verdict.headline,
        "file": [{"kind": party.kind, "says": party.says} for party in verdict.parties],
        "comparison": verdict.matrix.comparison if verdict.matrix is not None else None,
    }


def grade_path(name: str) -> Path:
    return GRADES / f"{name}.json"


BATCH = 20
"""Streams one lens process reads in the golden runs. LiteLLM keeps threads and memory of
every completion it ran (a process that read 60 recordings could start no thread under the
lens's memory cap); the server runs a lens on one stream per process, so batches of the
corpus are what a user's runs look like, not one process for all of it."""


def run_in_batches(lens: Lens, texts: list[str]) -> list[LensResult]:
    """`run_lens` over `texts`, `BATCH` streams to a process."""
    results: list[LensResult] = []
    for start in range(0, len(texts), BATCH):
        results += run_lens(lens, texts[start : start + BATCH])
    return results
