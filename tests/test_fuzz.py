"""The fuzz targets, briefly and derandomised (bench/fuzz.py runs them for long)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzzkit import TARGETS, ReaderCase, Target, check_readers, check_trace
from webapp.core.options import Options
from webapp.core.records import Record

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {
    "readers": 150,
    "reader-bytes": 100,
    "redaction": 200,
    "assembler": 100,
    "playground": 200,
}


@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.name)
def test_fuzz_target_briefly(target: Target) -> None:
    @settings(
        max_examples=EXAMPLES[target.name],
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(target.strategy)
    def run(value: Any) -> None:
        target.check(value)

    run()


def test_a_lone_surrogate_in_a_trace_streams_through_the_fallback() -> None:
    # found by the fuzzer: orjson refuses the surrogate in `json_parts`; the check accepts the
    # documented TypeError (document.trace_document_parts then writes ASCII JSON).
    fragment = {"index": 0, "delta": {"tool_calls": [None]}, "finish_reason": "\ud83d"}
    check_trace([Record("chunk", None, {"choices": [fragment]})], Options())


def test_deep_nesting_is_refused_in_words() -> None:
    for text in ("[" * 5000, "data: " + "[" * 5000, "ChatCompletionChunk(" + "(" * 5000):
        check_readers(ReaderCase(text, None, Options()))


def test_the_long_run_script_counts_examples_and_saves_failures(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(ROOT / "bench" / "fuzz.py"), "--examples", "5"]
    done = subprocess.run(
        [*command, "--target", "assembler", "--out", str(tmp_path), "--engine", "atheris"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "atheris is not available" in done.stdout
    assert "assembler: 5 examples in 1 rounds, ok" in done.stdout
    assert "summary: 5 examples" in done.stdout
    assert not list(tmp_path.iterdir())


def test_a_failure_is_shrunk_and_saved(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("fuzz_script", ROOT / "bench" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_script"] = script  # its dataclasses look their module up
    try:
        spec.loader.exec_module(script)
    finally:
        del sys.modules["fuzz_script"]
    script.OUT[0] = tmp_path

    def check(text: str) -> None:
        assert "!" not in text, "a bang"

    tally = script.Tally()
    target = Target("bang", st.text(max_size=30), check)
    assert script.one_round(target, 300, 1, tally) is not None
    assert tally.failure is not None and "a bang" in tally.failure
    assert sorted(path.name for path in tally.saved) == ["bang-seed1.input", "bang-seed1.txt"]
    assert (tmp_path / "bang-seed1.input").read_bytes() == b"!"
    assert "input: '!'" in (tmp_path / "bang-seed1.txt").read_text()
