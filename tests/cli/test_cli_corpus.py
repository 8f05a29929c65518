"""Every stream of the golden corpus through every command: the CLI prints the reviewed traces."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.clikit import Invoke
from webapp.core.rules import POLICIES

CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def _cases() -> list[Any]:
    cases = []
    for stream in sorted(CORPUS.glob("*.sse")):
        sidecar = stream.with_suffix(".options.json")
        for policy in POLICIES:
            cases.append(pytest.param(stream, policy, (), id=f"{stream.stem}.{policy}"))
            if sidecar.exists():
                tools = tuple(json.loads(sidecar.read_text(encoding="utf-8"))["server_tools"])
                label = f"{stream.stem}.server-tools.{policy}"
                cases.append(pytest.param(stream, policy, tools, id=label))
    return cases


def test_the_corpus_is_there() -> None:
    assert len(_cases()) >= 20


@pytest.mark.parametrize(("stream", "policy", "tools"), _cases())
def test_corpus_stream(invoke: Invoke, stream: Path, policy: str, tools: tuple[str, ...]) -> None:
    middle = ".server-tools" if tools else ""
    golden = json.loads((CORPUS / f"{stream.stem}{middle}.{policy}.json").read_text("utf-8"))
    extra = ["--server-tools", ",".join(tools)] if tools else []
    base = [str(stream), "--policy", policy, *extra]

    traced = invoke("trace", *base, "--format", "json")
    assert traced.exit_code == 0, traced.output
    document = json.loads(traced.stdout)
    assert document.pop("input")["format"] == "sse"
    assert document == golden

    text = invoke("trace", *base)
    assert text.exit_code == 0
    rows = [
        line
        for line in text.stdout.splitlines()
        if re.match(r"\s+\d+\s+(\d+|-) (chunk|done|invalid|end)\b", line)
    ]
    assert len(rows) == len(golden["steps"])

    checked = invoke("check", *base)
    assert checked.exit_code == (1 if golden["anomalies"] else 0)
    for anomaly in golden["anomalies"]:
        assert anomaly["code"] in checked.stdout

    compared = invoke("compare", *base[:1], *extra)
    assert compared.exit_code == 0
    assert compared.stdout.count(" blocks: ") == 2
