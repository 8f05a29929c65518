"""The verdict at a glance: at most 400 characters, who broke the contract, each grade's clients.

The bound is checked on this build's policies' verdict for every built-in example and real
recording here; tests/lenses/test_headline.py checks it with the client libraries' grades."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.streamkit import chunk, frag, records
from webapp.core.contract import QUIRKS, Contract, Found, read_contract
from webapp.core.readers import read
from webapp.lenses.results import Call, LensResult
from webapp.triage.headline import HEADLINE
from webapp.triage.verdict import judge, policies_verdict

EXAMPLES = sorted(Path("webapp/examples").glob("*.sse"))
REAL = sorted(Path("tests/corpus/real").glob("*.sse"))


@pytest.mark.parametrize("path", EXAMPLES + REAL, ids=lambda path: path.stem)
def test_the_policies_headline_is_short_and_says_who_and_each_grade(path: Path) -> None:
    source = read(path.read_text(encoding="utf-8"))
    verdict = policies_verdict(source.records, model=source.model)
    headline = verdict.to_json()["verdict"]
    assert headline == verdict.headline
    assert len(headline) <= HEADLINE, headline
    assert headline.startswith(("The provider", "Nobody broke the contract")), headline
    for graded in verdict.grades:
        assert graded.client in headline  # every column's grade, by name
    for party in verdict.parties:
        assert party.says not in headline  # what to file is said under "where to file"


def test_the_bound_holds_whatever_the_stream_names() -> None:
    """A model named at length, every quirk the table knows, an error and seven columns
    graded: the codes are counted past the room left, the name is clipped."""
    every = tuple(Found(quirk.code, (1,), (0,), 1, "seen", "silent") for quirk in QUIRKS)
    contract = Contract(every, None, "more than one reading", error="boom " * 200)
    columns = [LensResult(f"client-{n}", "1", "ok", (Call("c", "f", "{}"),)) for n in range(7)]
    headline = judge(contract, columns, model="m" * 500).headline
    assert len(headline) <= HEADLINE
    assert headline.startswith(f"The provider ({'m' * 59}…) broke the contract: it ended the")
    assert "more; the stream admits more than one reading." in headline
    assert headline.endswith("client-5, client-6.")  # the grades are never clipped away


def test_a_capture_whose_end_was_not_recorded_says_so_and_files_nothing() -> None:
    cut = read_contract(records([chunk(frag(0, "call_1", "get_weather", '{"city": "Par'))]))
    unended = cut.without_end("cut: the client left")
    columns = [LensResult("pi-ai", "1.6.0", "ok", (Call("call_1", "get_weather", "{}"),))]
    verdict = judge(unended, columns)
    assert verdict.headline == (
        "The stream's end was not recorded (cut: the client left): nothing is judged on how it "
        "ends, and nothing is filed. Guessed: pi-ai."
    )
    assert verdict.parties == ()
    assert verdict.unfiled.startswith("Nothing to file from these bytes: the stream's end was")
    assert "no-finish" not in verdict.headline


def test_with_no_client_run_the_table_s_harm_names_the_provider() -> None:
    silent = read_contract(
        records(
            [
                chunk(frag(0, "call_1", "get_weather", "")),
                chunk(frag(0, "call_1", args='{"city": "Paris"}')),
                chunk(finish="tool_calls"),
            ]
        )
    )
    assert judge(silent, (), model="gpt-4o").headline == (
        "The provider (gpt-4o) broke the contract: repeated-id."
    )
