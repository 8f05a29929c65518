"""Two streams side by side (`webapp.triage.diff`): by call and by value, whatever the chunking.

Properties: the same calls cut into other pieces, on either side, are always `same`; swapping
A and B swaps the sides of every difference. Then the issue's "done means" cases, ids, where
two texts part, grades, timing, and the bound on matching very many calls.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.contract.test_properties import SOME
from tests.core.test_properties import Call, any_split, calls
from tests.streamkit import chunk, frag, records, sse
from webapp.core.readers import read
from webapp.core.records import ReadResult, Record
from webapp.lenses.results import Call as LensCall
from webapp.lenses.results import LensResult
from webapp.triage import diff as diffs
from webapp.triage.diff import Diff, diff
from webapp.triage.sides import Side, side
from webapp.triage.values import NotJson, differences, meaning, same

PARIS = '{"city": "Paris"}'


def side_of(stream: list[Record] | str, label: str = "s", **extra: Any) -> Side:
    result = read(stream) if isinstance(stream, str) else ReadResult("json", tuple(stream))
    return side(result, label=label, **extra)


def one_call(arguments: str, *, id: str = "call_1", name: str = "get_weather") -> str:
    return sse(chunk(frag(0, id, name, arguments)), chunk(finish="tool_calls"))


# -- properties -----------------------------------------------------------------------------------


@st.composite
def two_cuts(draw: st.DrawFn) -> tuple[list[Call], list[Record], list[Record]]:
    stream_calls = draw(calls())
    return stream_calls, draw(any_split(stream_calls, True)), draw(any_split(stream_calls, True))


@SOME
@given(two_cuts())
def test_the_same_calls_cut_into_other_pieces_are_the_same(case: Any) -> None:
    stream_calls, first, second = case
    a, b = side_of(first, "a"), side_of(second, "b")
    for found in (diff(a, b), diff(b, a)):
        assert found.same, [str(d) for pair in found.pairs for d in pair.differences]
        assert [pair.a.name for pair in found.pairs if pair.a] == [c.name for c in stream_calls]
        assert all(pair.diverges is None for pair in found.pairs)
        assert found.to_json()["same"] is True


@st.composite
def changed(draw: st.DrawFn, stream_calls: list[Call]) -> list[Call]:
    """The calls with some dropped, renamed, given other arguments or ids, and some added."""
    out: list[Call] = []
    for call in stream_calls:
        what = draw(st.sampled_from(["keep", "keep", "drop", "name", "args", "id"]))
        if what == "drop":
            continue
        if what == "name":
            call = replace(call, name=call.name + "_v2")
        elif what == "args":
            call = replace(call, arguments=json.dumps({"changed": draw(st.integers(0, 9))}))
        elif what == "id":
            call = replace(call, id=call.id + "x")
        out.append(call)
    if draw(st.booleans()) or not out:
        extra = draw(calls())[0]
        out.insert(draw(st.integers(0, len(out))), replace(extra, index=None, id="call_new"))
    return out


@st.composite
def two_streams(draw: st.DrawFn) -> tuple[list[Record], list[Record]]:
    first = draw(calls())
    second = draw(changed(first))
    return draw(any_split(first, True)), draw(any_split(second, True))


def _seen(found: Diff) -> list[Any]:
    return [
        (pair.a, pair.b, sorted(map(str, pair.differences)), pair.diverges,
         sorted(map(str, pair.besides)))
        for pair in found.pairs
    ]  # fmt: skip


@SOME
@given(two_streams(), st.sampled_from(diffs.IDS_MODES))
def test_swapping_a_and_b_swaps_the_sides_of_every_difference(case: Any, ids: Any) -> None:
    a, b = side_of(case[0], "a"), side_of(case[1], "b")
    forth, back = diff(a, b, ids), diff(b, a, ids)
    assert _seen(back) == _seen(forth.swapped())
    assert sorted(map(str, back.streams)) == sorted(map(str, forth.swapped().streams))
    assert back.same == forth.same
    assert (back.ids_compared, back.ids_why) == (forth.ids_compared, forth.ids_why)


# -- the "done means" ---------------------------------------------------------------------


def test_paris_and_lyon_differ_in_arguments_city() -> None:
    found = diff(side_of(one_call(PARIS)), side_of(one_call('{"city": "Lyon"}')))
    assert not found.same
    [pair] = found.pairs
    assert [str(d) for d in pair.differences] == ['arguments.city: "Paris" vs "Lyon"']
    assert pair.diverges is not None and pair.diverges.offset == len('{"city": "')
    assert found.summary == "The streams differ: 1 of 1 matched call differs."


def test_a_call_only_in_b_has_no_a() -> None:
    two = sse(
        chunk(frag(0, "call_1", "get_weather", PARIS)),
        chunk(frag(1, "call_2", "get_time", "{}")),
        chunk(finish="tool_calls"),
    )
    document = diff(side_of(one_call(PARIS)), side_of(two)).to_json()
    assert document["same"] is False
    first, second = document["calls"]
    assert first["same"] and first["a"]["name"] == first["b"]["name"] == "get_weather"
    assert second["a"] is None and second["b"]["name"] == "get_time"
    assert second["same"] is False
    assert second["differences"] == ["call: (absent) vs get_time {}"]
    assert document["summary"] == "The streams differ: 1 call only in B."


def test_bare_continuations_and_a_well_formed_stream_of_the_same_call_are_the_same() -> None:
    bare = sse(
        chunk(frag(0, "call_1", "get_weather", "")),
        chunk(frag(args='{"city":')),
        chunk(frag(args=' "Paris"}')),
        chunk(finish="tool_calls"),
    )
    found = diff(side_of(bare, "bare"), side_of(one_call(PARIS), "clean"))
    assert found.same
    assert [str(d) for d in found.streams] == [
        "quirks: bare-continuation, missing-index vs none",
        "chunks: 4 vs 2",
        "grade in exact-key: damaged vs intact",
    ]
    [pair] = found.pairs
    assert pair.diverges is None and pair.differences == ()
    assert [str(d) for d in pair.besides] == ["grade in exact-key: damaged vs intact"]


def test_the_calls_are_the_intended_reading_or_else_the_adr_0019_assembly() -> None:
    ambiguous = sse(
        chunk(frag(0, "call_w", "get_weather", "")),
        chunk(frag(1, "call_f", "book_flight", "")),
        chunk(frag(args='{"to": "Oslo"}')),
        chunk(finish="tool_calls"),
    )
    guessed, clear = side_of(ambiguous, "guess"), side_of(one_call(PARIS))
    assert guessed.reading == "adr-0019" and guessed.contract.why
    assert clear.reading == "intended"
    assert [(c.name, c.arguments) for c in guessed.calls] == [
        ("get_weather", ""),
        ("book_flight", '{"to": "Oslo"}'),
    ]
    document = diff(clear, guessed).to_json()
    assert document["b"]["reading"] == "adr-0019" and document["b"]["why"]
    assert document["a"]["reading"] == "intended" and document["a"]["why"] is None
    assert (
        "reading: the intended reading vs the adr-0019 assembly (no intended reading)"
        in (document["streams"])
    )


def test_repaired_restatements_compare_as_the_calls_they_mean() -> None:
    cumulative = sse(
        chunk(frag(0, "call_1", "get_weather", "")),
        chunk(frag(0, args='{"city"')),
        chunk(frag(0, args='{"city": "Par')),
        chunk(frag(0, args='{"city": "Paris"}')),
        chunk(finish="tool_calls"),
    )
    found = diff(side_of(cumulative), side_of(one_call(PARIS)))
    assert found.same
    assert "quirks: cumulative-arguments vs none" in [str(d) for d in found.streams]


# -- ids ------------------------------------------------------------------------------------------


def test_two_responses_with_their_own_ids_are_compared_without_them() -> None:
    a, b = side_of(one_call(PARIS)), side_of(one_call(PARIS, id="toolu_9"))
    found = diff(a, b)
    assert found.same and not found.ids_compared
    assert "share none" in found.ids_why
    forced = diff(a, b, "compare")
    assert [str(d) for d in forced.pairs[0].differences] == ['id: "call_1" vs "toolu_9"']


def test_a_gateway_that_drops_an_id_is_a_difference() -> None:
    dropped = sse(chunk(frag(0, name="get_weather", args=PARIS)), chunk(finish="tool_calls"))
    found = diff(side_of(one_call(PARIS)), side_of(dropped))
    assert found.ids_compared and not found.same
    assert [str(d) for d in found.pairs[0].differences] == ['id: "call_1" vs null']
    assert diff(side_of(one_call(PARIS)), side_of(dropped), "ignore").same


def test_calls_are_matched_by_id_before_order_when_both_have_one() -> None:
    def two(first: str, second: str) -> str:
        return sse(
            chunk(frag(0, first, "read_file", '{"path": "' + first + '"}')),
            chunk(frag(1, second, "read_file", '{"path": "' + second + '"}')),
            chunk(finish="tool_calls"),
        )

    found = diff(side_of(two("call_a", "call_b")), side_of(two("call_b", "call_c")))
    matched = [(p.a.id if p.a else None, p.b.id if p.b else None) for p in found.pairs]
    assert ("call_b", "call_b") in matched
    assert not found.same


# -- where the texts part, what the application receives ------------------------------------------


def test_the_first_step_where_the_argument_texts_part_is_found_on_each_side() -> None:
    a = sse(
        chunk(frag(0, "call_1", "get_weather", '{"city": ')),
        chunk(frag(0, args='"Paris", "unit": "C"}')),
        chunk(finish="tool_calls"),
    )
    b = sse(
        chunk(frag(0, "call_1", "get_weather", '{"ci')),
        chunk(frag(0, args='ty": "Paris", ')),
        chunk(frag(0, args='"unit": "F"}')),
        chunk(finish="tool_calls"),
    )
    [pair] = diff(side_of(a), side_of(b)).pairs
    assert [str(d) for d in pair.differences] == ['arguments.unit: "C" vs "F"']
    where = pair.diverges
    assert where is not None and where.offset == len('{"city": "Paris", "unit": "')
    assert (where.a.step, where.a.line, where.a.text) == (1, 3, 'C"}')
    assert (where.b.step, where.b.line, where.b.text) == (2, 5, 'F"}')


def test_broken_arguments_differ_in_text_and_in_what_the_application_receives() -> None:
    cut = sse(chunk(frag(0, "call_1", "get_weather", '{"city": "Par')), chunk(finish="tool_calls"))
    [pair] = diff(side_of(cut), side_of(one_call(PARIS))).pairs
    assert [str(d) for d in pair.differences] == [
        'arguments: not JSON "{\\"city\\": \\"Par" vs {"city": "Paris"}',
        'receives.city: (absent) vs "Paris"',
    ]
    assert pair.a is not None and pair.a.receives == {} and pair.a.receives_error
    assert pair.diverges is not None and pair.diverges.a.step is None  # A's text ends there


def test_the_same_value_written_otherwise_is_the_same_call() -> None:
    found = diff(
        side_of(one_call('{"a": 1, "b": [true]}')), side_of(one_call('{"b":[true],"a":1.0}'))
    )
    assert found.same
    assert found.pairs[0].diverges is not None  # the texts part, the values do not


# -- grades, timing -------------------------------------------------------------------------------


def test_lens_grades_are_compared_call_by_call_and_stream_by_stream() -> None:
    good = LensResult("pi-ai", "1.6.0", "ok", (LensCall("call_1", "get_weather", PARIS),))
    bad = LensResult("pi-ai", "1.6.0", "ok", (LensCall("call_1", "get_weather", "{}"),))
    a = side_of(one_call(PARIS), lenses=(good,))
    b = side_of(one_call(PARIS), lenses=(bad,))
    found = diff(a, b)
    assert found.same  # the streams mean the same: the client differs
    assert [str(d) for d in found.pairs[0].besides] == ["grade in pi-ai: intact vs damaged"]
    assert "grade in pi-ai: intact vs damaged" in [str(d) for d in found.streams]
    grades = found.to_json()["b"]["grades"]
    assert [g["client"] for g in grades] == ["pi-ai", "adr-0019", "exact-key"]
    assert found.to_json()["calls"][0]["b"]["grades"]["pi-ai"] == "damaged"


def test_timing_comes_from_what_the_input_carries() -> None:
    timing = {"arrivals": [12.0, 40.0, 41.0, None], "first_byte": 10.0, "end": 41.5,
              "source": "capture"}  # fmt: skip
    a = side_of(one_call(PARIS), timing=timing)
    assert a.timing is not None
    assert a.timing.to_json() == {"unit": "ms", "source": "capture", "first_byte": 10.0,
                                  "first_call": 12.0, "finish": 40.0, "end": 41.5}  # fmt: skip
    b = side_of(one_call(PARIS), timing={**timing, "end": 90.0})
    assert "timing end: 42 ms vs 90 ms" in [str(d) for d in diff(a, b).streams]
    assert side_of(one_call(PARIS)).timing is None


def test_a_har_entrys_timings_are_read() -> None:
    har = {"log": {"entries": [{
        "request": {"method": "POST", "url": "https://api.example/v1/chat/completions"},
        "response": {"status": 200, "content": {"mimeType": "text/event-stream",
                                                "text": one_call(PARIS)}},
        "timings": {"send": 1, "wait": 99, "receive": 50},
    }]}}  # fmt: skip
    found = side_of(json.dumps(har))
    assert found.timing is not None
    assert (found.timing.first_byte, found.timing.end) == (100.0, 150.0)


# -- the bound ------------------------------------------------------------------------------------


def test_very_many_calls_are_matched_greedily_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    def many(arguments: str) -> list[Record]:
        values = [chunk(frag(k, f"call_{k}", "f", "{}")) for k in range(30)]
        values[7] = chunk(frag(7, "call_7", "f", arguments))
        return records([*values, chunk(finish="tool_calls")])

    monkeypatch.setattr(diffs, "MAX_CELLS", 100)
    found = diff(side_of(many("{}")), side_of(many('{"x": 1}')))
    assert [(p.a.number, p.b.number) for p in found.pairs if p.a and p.b] == [
        (k, k) for k in range(30)
    ]
    assert [p.a.number for p in found.pairs if p.a and not p.same] == [7]


# -- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ({"city": "Paris"}, {"city": "Lyon"}, ['x.city: "Paris" vs "Lyon"']),
        ({"a": 1}, {"a": 1.0}, []),
        ({"a": True}, {"a": 1}, ["x.a: true vs 1"]),
        ({"a": None}, {}, ["x.a: null vs (absent)"]),
        ({"a": [1, 2]}, {"a": [1]}, ["x.a[1]: 2 vs (absent)"]),
        ({"a b": {"c": 1}}, {"a b": {"c": 2}}, ['x["a b"].c: 1 vs 2']),
        ([1], {"0": 1}, ['x: [1] vs {"0": 1}']),
        (NotJson("{"), NotJson("{"), []),
        (NotJson("{"), {}, ['x: not JSON "{" vs {}']),
    ],
)
def test_values_are_compared_key_by_key(a: Any, b: Any, expected: list[str]) -> None:
    assert [str(d) for d in differences("x", a, b)] == expected
    assert same(a, b) == (expected == [])


def test_deep_values_are_compared_without_recursion_and_the_lines_are_bounded() -> None:
    deep_a: Any = 1
    deep_b: Any = 2
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    [line] = differences("x", deep_a, deep_b)
    assert str(line).endswith(": 1 vs 2") and str(line).count("[0]") == 5000
    wide = differences("x", {str(k): k for k in range(100)}, {str(k): -k - 1 for k in range(100)})
    assert len(wide) == 41 and str(wide[-1]) == "x: and 60 more differences"


def test_blank_arguments_mean_an_empty_object() -> None:
    assert meaning("  ") == {}
    assert meaning("{") == NotJson("{")
    assert meaning("NaN") == NotJson("NaN")
