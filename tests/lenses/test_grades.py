"""Every client graded against what the stream means, on the lens goldens' own results: the
grade goldens (golden/grades/NAME.json, written by `python -m tests.lenses.regen`), and the
cases issue 19 names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lenses.streams import (
    GRADES,
    STREAMS,
    golden_verdict,
    grade_document,
    grade_path,
    load_golden,
)
from webapp.triage.verdict import GRADES as GRADE_NAMES

NAMES = list(STREAMS)


@pytest.mark.parametrize("name", NAMES)
def test_the_grades_match_their_golden_file(name: str) -> None:
    expected = json.loads(grade_path(name).read_text(encoding="utf-8"))
    assert grade_document(name, load_golden(name)) == expected


def test_every_stream_has_a_grade_golden_and_no_other_exists() -> None:
    assert {path.stem for path in Path(GRADES).glob("*.json")} == set(NAMES)


def _grades(name: str) -> dict[str, str | None]:
    return {g.client: g.grade for g in golden_verdict(name, load_golden(name)).grades}


@pytest.mark.parametrize("name", ["record-example", "continuation-without-index"])
def test_the_envoy_shape_damages_pi_ai_flags_openai_python_and_adr_0019_is_intact(
    name: str,
) -> None:
    verdict = golden_verdict(name, load_golden(name))
    grades = _grades(name)
    assert (grades["pi-ai"], grades["openai-python"], grades["adr-0019"]) == (
        "damaged", "flagged", "intact",
    )  # fmt: skip
    assert verdict.contract.codes == {"missing-index", "bare-continuation"}
    assert verdict.contract.intended is not None and len(verdict.contract.intended.calls) == 1
    assert verdict.headline.startswith("The provider")
    assert "broke the contract: missing-index and bare-continuation." in verdict.headline
    assert "Damaged silently: pi-ai, langchain, exact-key. Flagged: openai-python." in (
        verdict.headline
    )
    (party,) = verdict.parties
    assert party.kind == "provider"
    assert party.says.startswith("File with the provider: a provider bug:")
    assert "omits `index` on tool_calls entries (missing-index)" in party.says
    assert "pi-ai 1.6.0 and langchain 1.7.4 hand the application wrong calls" in party.says
    assert any(line.startswith("openai-python 3.57.0: flagged: fails:") for line in party.evidence)


def test_two_open_calls_then_bare_continuations_have_no_reading_and_no_client_is_right() -> None:
    verdict = golden_verdict("two-calls-open", load_golden("two-calls-open"))
    assert verdict.contract.intended is None
    assert set(_grades("two-calls-open").values()) <= {"guessed", "flagged"}
    assert "the stream admits more than one reading" in verdict.headline
    assert verdict.matrix is not None and verdict.matrix.comparison.startswith(
        "No intended reading to grade the calls against"
    )


def test_with_no_quirk_a_client_that_is_not_intact_is_at_fault() -> None:
    """arguments-never-close is cut short by the provider (a quirk); `clean` has none, and
    every client reads it intact: nothing to file."""
    clean = golden_verdict("clean", load_golden("clean"))
    assert clean.contract.quirks == () and clean.parties == ()
    assert clean.headline.startswith("Nobody broke the contract")
    assert clean.unfiled.startswith("Nothing to file")


def test_a_harmless_quirk_blames_nobody() -> None:
    for name in (
        "real-openai-gpt4o-forced-tool-stop",
        "real-openrouter-claude45haiku-reasoning-tool",
    ):
        verdict = golden_verdict(name, load_golden(name))
        assert verdict.parties == (), name
        assert "only in ways every client here reads intact" in verdict.headline


def test_every_grade_is_one_of_the_four() -> None:
    for name in NAMES:
        assert set(_grades(name).values()) <= {*GRADE_NAMES, None}, name
