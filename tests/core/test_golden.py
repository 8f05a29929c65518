"""Golden corpus: example streams as raw SSE with their reviewed traces, for both policies.

`tests/corpus/<name>.sse` is a stream as a provider sent it (its first line, a `:` comment,
says what it shows). `<name>.<policy>.json` is its trace on the client path, and when a
`<name>.options.json` sidecar names server tools, `<name>.server-tools.<policy>.json` is its
trace on the server-tools path. The JSON files are the reviewed truth: pretty, sorted keys.

    STREAMVIZ_REGENERATE=1 .venv/bin/pytest tests/core/test_golden.py

rewrites them from what the code does now; review the diff before committing it.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.core.schema import check_schema
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.rules import POLICIES

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
REGENERATE = os.environ.get("STREAMVIZ_REGENERATE") == "1"
STREAMS = sorted(path.stem for path in CORPUS.glob("*.sse"))


def _server_tools(name: str) -> tuple[str, ...] | None:
    sidecar = CORPUS / f"{name}.options.json"
    if not sidecar.exists():
        return None
    return tuple(json.loads(sidecar.read_text(encoding="utf-8"))["server_tools"])


def _cases() -> list[Any]:
    cases = []
    for name in STREAMS:
        for policy in POLICIES:
            cases.append(pytest.param(name, policy, None, id=f"{name}.{policy}"))
            server_tools = _server_tools(name)
            if server_tools is not None:
                label = f"{name}.server-tools.{policy}"
                cases.append(pytest.param(name, policy, server_tools, id=label))
    return cases


def golden_path(name: str, policy: str, server_tools: tuple[str, ...] | None) -> Path:
    middle = "" if server_tools is None else ".server-tools"
    return CORPUS / f"{name}{middle}.{policy}.json"


def render(name: str, policy: str, server_tools: tuple[str, ...] | None) -> str:
    """The trace of a corpus stream as its golden file holds it."""
    text = (CORPUS / f"{name}.sse").read_text(encoding="utf-8")
    result = read(text)
    assert result.format == "sse"
    if server_tools is None:
        options = Options(policy=policy)  # type: ignore[arg-type]
    else:
        options = Options(policy, "server-tools", server_tools)  # type: ignore[arg-type]
    doc = assemble(result.records, options).to_json()
    check_schema(doc)
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(("name", "policy", "server_tools"), _cases())
def test_golden_trace(name: str, policy: str, server_tools: tuple[str, ...] | None) -> None:
    path = golden_path(name, policy, server_tools)
    actual = render(name, policy, server_tools)
    if REGENERATE:
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path.name} is missing: run with STREAMVIZ_REGENERATE=1 and review it"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"{path.name} (golden)",
            tofile=f"{path.name} (now)",
        )
        pytest.fail(
            "the trace differs from the golden file (if the change is intended, rerun with "
            "STREAMVIZ_REGENERATE=1 and review the diff):\n" + "".join(diff),
            pytrace=False,
        )


def test_the_corpus_is_whole() -> None:
    """Every stream says what it shows, reads without invalid records, and has its goldens;
    every golden and sidecar belongs to a stream."""
    assert len(STREAMS) >= 12
    expected: set[str] = set()
    for name in STREAMS:
        text = (CORPUS / f"{name}.sse").read_text(encoding="utf-8")
        assert text.startswith(": "), f"{name}.sse opens with a comment saying what it shows"
        assert all(record.kind != "invalid" for record in read(text).records)
        server_tools = _server_tools(name)
        for policy in POLICIES:
            expected.add(golden_path(name, policy, None).name)
            if server_tools is not None:
                expected.add(golden_path(name, policy, server_tools).name)
        if server_tools is not None:
            expected.add(f"{name}.options.json")
    present = {path.name for path in CORPUS.glob("*.json")}
    if not REGENERATE:
        assert present == expected
