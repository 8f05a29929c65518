"""The headline with the client libraries' grades: at most 400 characters on every lens golden
(the real recordings and each quirk's stream, as the libraries read them) and on every built-in
example with the libraries run now; the comparison against what the stream means."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lenses.streams import STREAMS, golden_verdict, load_golden, run_in_batches
from webapp.core.readers import read
from webapp.lenses.runner import default_lenses
from webapp.triage.headline import HEADLINE
from webapp.triage.verdict import Verdict, results_verdict

EXAMPLES = {path.stem: path for path in sorted(Path("webapp/examples").glob("*.sse"))}


@pytest.mark.parametrize("name", list(STREAMS))
def test_the_headline_of_every_golden_is_short(name: str) -> None:
    verdict = golden_verdict(name, load_golden(name))
    assert len(verdict.headline) <= HEADLINE, verdict.headline
    assert verdict.to_json()["verdict"] == verdict.headline
    for graded in verdict.grades:
        assert graded.client in verdict.headline
        assert graded.detail not in verdict.headline  # the grades table says it


@pytest.fixture(scope="module")
def examples() -> dict[str, Verdict]:
    """Every example's verdict, each library run now on all of them (one process a library)."""
    texts = {name: path.read_text(encoding="utf-8") for name, path in EXAMPLES.items()}
    by_lens = []
    for lens in default_lenses():
        assert lens.missing is None, f"{lens.missing}: run `make clients` (CI installs them)"
        by_lens.append(run_in_batches(lens, list(texts.values())))
    verdicts = {}
    for i, (name, text) in enumerate(texts.items()):
        source = read(text, "sse")
        results = [found[i] for found in by_lens]
        verdicts[name] = results_verdict(source.records, results, model=source.model)
    return verdicts


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_headline_of_every_example_is_short(examples: dict[str, Verdict], name: str) -> None:
    verdict = examples[name]
    document = verdict.to_json()
    assert len(document["verdict"]) <= HEADLINE, document["verdict"]
    assert all(graded.grade is not None for graded in verdict.grades)  # every library ran
    for party in document["file"]:
        assert party["says"] not in document["verdict"]
    assert document["comparison"] not in document["verdict"]


def test_same_index_is_compared_with_the_two_calls_it_means(examples: dict[str, Verdict]) -> None:
    """adr-0019 keeps one call where the stream means two: vercel-ai, the one library that hands
    both, was "wrong" against adr-0019's guess; against the intended reading it is intact and
    the comparison never names it."""
    verdict = examples["same-index"]
    assert verdict.grade_of("vercel-ai") == "intact"
    assert verdict.grade_of("adr-0019") == "damaged"
    matrix = verdict.matrix
    assert matrix is not None and matrix.reference == "intended"
    assert [row.label for row in matrix.rows] == ["get_weather (call_w1)", "get_time (call_t1)"]
    assert matrix.comparison.startswith("Against what the stream means: ")
    assert "vercel-ai" not in matrix.comparison
    assert "miss get_time" in matrix.comparison


def test_ambiguous_grades_no_call_against_adr_0019_s_guess(examples: dict[str, Verdict]) -> None:
    verdict = examples["ambiguous"]
    matrix = verdict.matrix
    assert verdict.contract.intended is None
    assert matrix is not None and matrix.reference == "adr-0019"
    assert matrix.comparison.startswith("No intended reading to grade the calls against: ")
    assert "wrong" not in matrix.comparison
    assert "the stream admits more than one reading" in verdict.headline
