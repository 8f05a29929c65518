"""Grades against the intended reading, the verdict sentence, where to file, the fingerprint."""

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
    assert (party.kind, party.name) == ("client", "@earendil-works/pi-ai 1.6.0")
    assert "the fault is the client's" in party.says
    assert verdict.sentence.startswith("The provider (gpt-4o) keeps the contract: no quirk.")
    assert "Damaged silently: pi-ai 1.6.0 (get_weather gets {}" in verdict.sentence


def test_a_lens_at_its_memory_cap_is_not_graded_and_nobody_is_blamed() -> None:
    capped = LensResult("pi-ai", "1.6.0", "error", (), ran_out("pi-ai", 1 << 30), limit="memory")
    verdict = judge(_no_quirk(), [capped])
    (graded,) = verdict.grades
    assert (graded.grade, graded.limited) == (None, True)
    assert graded.detail.startswith("pi-ai ran out of its 1 GiB memory cap")
    assert verdict.parties == ()  # the cap is ours: nothing to file with pi-ai
    assert "Flagged" not in verdict.sentence and "make clients" not in verdict.sentence
    assert "Not graded: pi-ai 1.6.0 (pi-ai ran out of its 1 GiB memory cap" in verdict.sentence


def _contract(*values: dict[str, Any]) -> Contract:
    return read_contract(records(list(values)))


def test_a_quirk_no_client_minds_blames_nobody() -> None:
    forced = _contract(chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
                       chunk(finish="stop"))  # fmt: skip
    verdict = judge(forced, [column(Call("call_1", "get_weather", '{"city": "Paris"}'))])
    assert verdict.parties == ()
    assert "only in ways every client handles: stop-with-calls" in verdict.sentence
    assert verdict.sentence.endswith("Nothing to file: every client that ran reads it intact.")


def test_the_provider_first_then_survivors_then_silent_damage_then_where_to_file() -> None:
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
    sentence = judge(envoy, columns, model="bedrock-claude").sentence
    order = [
        "The provider (bedrock-claude) departs from the contract: missing-index and "
        "bare-continuation break",
        "Intact: vercel-ai 7.0.173.",
        "Damaged silently: pi-ai 1.6.0 (get_weather gets {}",
        "Flagged: openai-python 3.57.0 (fails: RuntimeError",
        "File with the provider: a provider bug: bedrock-claude omits `index`",
    ]
    places = [sentence.index(part) for part in order]
    assert places == sorted(places), sentence


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
