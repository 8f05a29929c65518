"""Grades against the intended reading, the headline, where to file, the fingerprint."""

from __future__ import annotations

from typing import Any

import pytest

from tests.streamkit import chunk, frag, records
from webapp.core.contract import Call as Meant
from webapp.core.contract import Contract, Intended, read_contract
from webapp.lenses.results import Call, LensResult
from webapp.lenses.runner import ran_out
from webapp.triage.fingerprint import fingerprint, keeps
from webapp.triage.minimise import minimise
from webapp.triage.verdict import grade, judge, policies_verdict, same_arguments

WEATHER = Meant("call_1", "get_weather", '{"city": "Paris"}')
PARIS = Intended((WEATHER,), ())


def column(*calls: Call, status: str = "ok", error: str | None = None) -> LensResult:
    return LensResult("pi-ai", "1.6.0", status, tuple(calls), error)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("result", "expected", "words"),
    [
        (column(Call("call_1", "get_weather", '{"city":"Paris"}')), "intact", "as the stream"),
        (column(Call(None, "get_weather", '{ "city" : "Paris" }')), "intact", "as the stream"),
        (column(Call("call_1", "get_weather", "{}")), "damaged", "gets {} instead of"),
        (column(), "damaged", "get_weather is missing"),
        (column(Call("call_1", "get_weather", '{"city":"Paris"}'), Call("", "", "{}")),
         "damaged", "adds 1 phantom call"),
        (column(Call("call_1", "get_weatherget_weather", '{"city":"Paris"}')),
         "damaged", 'is named "get_weatherget_weather"'),
        (column(Call("call_1call_1", "get_weather", '{"city":"Paris"}')),
         "damaged", "id is \"call_1call_1\""),
        (column(Call("call_1", "get_weather", "{}", invalid="Unexpected end of JSON input")),
         "flagged", "flags get_weather (Unexpected end"),
        (column(status="error", error="RuntimeError: Expected list delta entry to have an"),
         "flagged", "fails: RuntimeError"),
        (column(Call("call_1", "get_weather", '{"city":"Paris"}'), Call("", "", "x", "bad")),
         "flagged", "adds 1 extra call, flagged"),
    ],
)  # fmt: skip
def test_a_column_is_graded_against_the_intended_reading(
    result: LensResult, expected: str, words: str
) -> None:
    graded = grade(result, PARIS)
    assert graded.grade == expected
    assert words in graded.detail


def test_without_an_intended_reading_a_client_guessed_or_flagged() -> None:
    chose = column(Call("call_1", "get_weather", "{}"), Call("call_2", "book_flight", "{}"))
    assert grade(chose, None).grade == "guessed"
    flagged = column(Call("call_1", "get_weather", "{}", invalid="bad JSON"))
    assert grade(flagged, None).grade == "flagged"
    unavailable = LensResult("litellm", "1.110.2", "unavailable", (), "not installed")
    assert grade(unavailable, None).grade is None


def test_blank_arguments_mean_an_empty_object() -> None:
    assert same_arguments("", "{}") and same_arguments("{}", "  ") and same_arguments(None, "")
    assert not same_arguments("{}", '{"a": 1}')
    assert same_arguments('{"a": "Par', '{"a": "Par')  # not JSON: the same text
    assert not same_arguments('{"a": "Par"}', '{"a": "Par')


def _no_quirk() -> Contract:
    return Contract((), PARIS, None, "gpt-4o")


def test_with_no_quirk_a_client_that_is_not_intact_is_at_fault() -> None:
    verdict = judge(_no_quirk(), [column(Call("call_1", "get_weather", "{}"))])
    (party,) = verdict.parties
    assert (party.kind, party.name) == ("library", "@earendil-works/pi-ai 1.6.0")
    assert "the fault is the client's: it hands the application other calls" in party.says
    assert "get_weather gets {}" not in party.says  # the grade's detail says it, once
    assert verdict.headline == (
        "The provider (gpt-4o) keeps the contract: a client bug in pi-ai. Damaged silently: pi-ai."
    )


def test_a_lens_at_its_memory_cap_is_not_graded_and_nobody_is_blamed() -> None:
    capped = LensResult("pi-ai", "1.6.0", "error", (), ran_out("pi-ai", 1 << 30), limit="memory")
    verdict = judge(_no_quirk(), [capped])
    (graded,) = verdict.grades
    assert (graded.grade, graded.limited) == (None, True)
    assert graded.detail.startswith("pi-ai ran out of its 1 GiB memory cap")
    assert verdict.parties == ()  # the cap is ours: nothing to file with pi-ai
    assert "Flagged" not in verdict.headline and "make clients" not in verdict.headline
    assert verdict.headline.endswith("Not graded (a limit): pi-ai.")


def _contract(*values: dict[str, Any]) -> Contract:
    return read_contract(records(list(values)))


def test_a_quirk_no_client_minds_blames_nobody() -> None:
    forced = _contract(chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
                       chunk(finish="stop"))  # fmt: skip
    verdict = judge(forced, [column(Call("call_1", "get_weather", '{"city": "Paris"}'))])
    assert verdict.parties == ()
    assert verdict.headline == (
        "The provider departs from the contract only in ways every client here reads intact: "
        "stop-with-calls; nothing to file. Intact: pi-ai."
    )
    assert verdict.unfiled == "Nothing to file: every client that ran reads it as it means."


def test_the_headline_names_the_provider_then_each_grade_and_its_party_says_what_to_file() -> None:
    envoy = _contract(
        chunk(frag(0, "call_1", "get_weather", "")),
        chunk(frag(args='{"city": "Paris"}')),
        chunk(finish="tool_calls"),
    )
    columns = [
        LensResult("openai-python", "3.57.0", "error", (), "RuntimeError: no `index` key"),
        column(Call("call_1", "get_weather", "{}"), Call("", "", "{}", "bad")),
        LensResult(
            "vercel-ai", "7.0.173", "ok", (Call("call_1", "get_weather", WEATHER.arguments),)
        ),
    ]
    verdict = judge(envoy, columns, model="bedrock-claude")
    assert verdict.headline == (
        "The provider (bedrock-claude) broke the contract: missing-index and bare-continuation. "
        "Damaged silently: pi-ai. Flagged: openai-python. Intact: vercel-ai."
    )
    (party,) = verdict.parties
    assert party.says == (
        "File with the provider: a provider bug: bedrock-claude omits `index` on tool_calls "
        "entries (missing-index) and sends argument pieces with no index, no id and no name "
        "(bare-continuation); pi-ai 1.6.0 hands the application wrong calls without a word; "
        "openai-python 3.57.0 raises or flags the calls."
    )  # what each gets is in its grade and in the evidence, not here
    assert "pi-ai 1.6.0: damaged: get_weather gets {}" in "\n".join(party.evidence)


def test_without_clients_the_table_s_harm_decides_whom_to_name() -> None:
    silent = _contract(
        chunk(frag(0, "call_1", "get_weather", "")),
        chunk(frag(0, "call_1", args='{"city": "Paris"}')),
        chunk(finish="tool_calls"),
    )
    assert [p.kind for p in judge(silent, []).parties] == ["provider"]  # repeated-id: silent
    harmless = _contract(chunk(frag(0, "call_1", "f", "{}")), chunk(finish="tool_calls"),
                         chunk(finish="tool_calls"))  # fmt: skip
    assert judge(harmless, []).parties == ()


def test_the_policies_alone_are_graded_without_any_client() -> None:
    stream = records(
        [
            chunk(frag(0, "call_1", "get_weather", "")),
            chunk(frag(args='{"city": "Paris"}')),
            chunk(finish="tool_calls"),
        ]
    )
    verdict = policies_verdict(stream)
    assert {g.client: g.grade for g in verdict.grades} == {
        "adr-0019": "intact", "exact-key": "damaged",
    }  # fmt: skip
    document = verdict.to_json()
    assert {"grades", "quirks", "intended", "why", "verdict", "file"} <= set(document)


# The fingerprint.

TWO_OPEN = [
    chunk(frag(0, "call_w", "get_weather", ""), frag(1, "call_f", "book_flight", "")),
    chunk(frag(args='{"city": ')),
    chunk(frag(args='"Paris"}')),
    chunk(finish="tool_calls"),
]


def test_the_fingerprint_holds_quirks_anomalies_on_named_blocks_and_grades() -> None:
    found = fingerprint(records(TWO_OPEN))
    assert found.quirks == {"missing-index", "bare-continuation"}
    assert ("ambiguous-continuation", "book_flight") in found.anomalies
    assert dict(found.grades) == {"adr-0019": "guessed", "exact-key": "flagged"}
    assert "grades: adr-0019 guessed" in found.describe()


def test_an_empty_continuation_is_not_the_same_bug() -> None:
    """Issue 19: shrunk to an empty continuation, the stream kept its anomaly code while every
    client got {}: the fingerprint tells them apart (the reading is no longer ambiguous)."""
    emptied = [TWO_OPEN[0], chunk(frag(args="")), TWO_OPEN[3]]
    original, shrunk = fingerprint(records(TWO_OPEN)), fingerprint(records(emptied))
    assert ("ambiguous-continuation", "book_flight") in shrunk.anomalies
    assert shrunk != original
    assert dict(shrunk.grades)["adr-0019"] != "guessed"


def test_minimising_by_the_fingerprint_keeps_the_bug() -> None:
    stream = records([chunk(content="Let me look."), *TWO_OPEN[:2],
                      chunk(frag(args=" ")), *TWO_OPEN[2:]])  # fmt: skip
    original = fingerprint(stream)
    result = minimise(stream, keeps(original, _options()))
    assert fingerprint(result.records) == original
    assert len(result.records) < len(stream)


def _options() -> Any:
    from webapp.core.options import Options

    return Options()


def test_a_call_whose_id_is_not_a_string_is_graded_not_raised() -> None:
    """Found by the pseudonymiser's property: an id that is a list cannot be hashed."""
    stream = records([chunk(frag(0, ["x"], "f", "{}")), chunk(finish="tool_calls")])
    assert fingerprint(stream).quirks == {"non-string-arguments"}
