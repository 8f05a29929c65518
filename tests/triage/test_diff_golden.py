"""Golden diffs: pairs of corpus streams (tests/corpus) and the diff of each, reviewed.

`tests/triage/golden/diff/<a>--<b>.json` is `streamviz diff A B --format json` for the pair
(pretty, sorted keys). Regenerate with

    STREAMVIZ_REGENERATE=1 .venv/bin/pytest tests/triage/test_diff_golden.py

and review the diff before committing it. Each pair also says whether its streams mean the
same calls, so that a regenerated golden cannot quietly flip that.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from webapp.core.readers import read
from webapp.triage.diff import diff
from webapp.triage.sides import side

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
GOLDEN = Path(__file__).resolve().parent / "golden" / "diff"
REGENERATE = os.environ.get("STREAMVIZ_REGENERATE") == "1"
PAIRS = [
    # Two providers, the same two calls: other ids, other spacing, other chunking.
    ("interleaved-parallel-calls", "parallel-calls-all-index-0", True),
    ("nameless-header-backfilled", "parallel-calls-all-index-0", True),
    ("clean-single-call", "fresh-id-every-fragment", True),
    ("clean-single-call", "text-then-tool-call", True),
    # A stream with no intended reading against one that means two other calls.
    ("two-calls-open-continuations", "interleaved-parallel-calls", False),
    # Arguments cut short (not JSON: the application gets {}) against whole ones.
    ("argument-shapes", "text-then-tool-call", False),
    # Real captures: other values, a call only in B, finish reasons that differ.
    ("real/openai-gpt4o-forced-tool-stop", "real/mistral-large-parallel-noindex", False),
    ("real/ollama-llama31-noindex-stop", "real/gemini-openai-compat-noindex-emptyid-stop", False),
]


def render(first: str, second: str) -> str:
    sides = [
        side(read((CORPUS / f"{name}.sse").read_text(encoding="utf-8")), label=f"{name}.sse")
        for name in (first, second)
    ]
    found = diff(sides[0], sides[1])
    return json.dumps(found.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def golden_path(first: str, second: str) -> Path:
    return GOLDEN / f"{first.replace('/', '_')}--{second.replace('/', '_')}.json"


@pytest.mark.parametrize(("first", "second", "same"), PAIRS, ids=[f"{a}--{b}" for a, b, _ in PAIRS])
def test_golden_diff(first: str, second: str, same: bool) -> None:
    got = render(first, second)
    assert json.loads(got)["same"] is same
    path = golden_path(first, second)
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with STREAMVIZ_REGENERATE=1 and review it"
    expected = path.read_text(encoding="utf-8")
    if got != expected:
        shown = "".join(difflib.unified_diff(expected.splitlines(True), got.splitlines(True),
                                             str(path), "now", n=2))  # fmt: skip
        pytest.fail(f"the diff of {first} and {second} changed:\n{shown[:6000]}")


def test_every_golden_has_a_pair() -> None:
    wanted = {golden_path(a, b).name for a, b, _ in PAIRS}
    assert {path.name for path in GOLDEN.glob("*.json")} == wanted
