"""The minimiser: the result still shows the property, is never larger, is small, and keeps
the calls it leaves in whole pieces (`tests/triage/test_minimise_text.py`)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.streamkit import ABSENT, chunk, frag, records
from tests.triage.streams import TWO_HEADERS, buried
from tests.triage.test_minimise_text import calls_kept
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.writer import to_sse
from webapp.core.records import Record
from webapp.triage.minimise import Progress, PropertyDoesNotHold, ddmin, minimise
from webapp.triage.predicates import parse_until


def _holds(until: str, found: Sequence[Record], policy: str = "adr-0019") -> bool:
    return parse_until(until, Options(policy=policy)).predicate(found)  # type: ignore[arg-type]


def test_ddmin_finds_the_two_items_that_matter() -> None:
    kept = ddmin(list(range(100)), lambda items: 17 in items and 83 in items)
    assert kept == [17, 83]


def test_ddmin_may_empty_a_list_when_allowed() -> None:
    assert ddmin([1, 2, 3], lambda items: True, allow_empty=True) == []
    assert ddmin([1, 2, 3], lambda items: True) == [1]


def test_a_buried_continuation_shrinks_to_a_handful_of_chunks() -> None:
    stream = buried(5_000)
    seen: list[Progress] = []
    until = parse_until("anomaly:ambiguous-continuation", Options())
    result = minimise(stream, until.predicate, progress=seen.append)
    assert len(result.records) <= 6
    assert until.predicate(result.records)
    assert not result.timed_out
    assert [p.phase for p in seen][-1] == "done"
    # it ends like a stream: the finish chunk and [DONE] were put back
    assert result.records[-1].kind == "done"
    assert assemble(result.records).stop_reason == "toolUse"


def test_the_result_reads_back_as_the_same_records() -> None:
    until = parse_until("anomaly:ambiguous-continuation", Options())
    result = minimise(records(TWO_HEADERS), until.predicate)
    again = read(to_sse(result.records))
    assert [r.value for r in again.records] == [r.value for r in result.records]
    assert until.predicate(again.records)


def test_fragments_inside_a_chunk_go_and_argument_text_shrinks_only_when_asked() -> None:
    values = [
        chunk(frag(0, "a", "get_weather", '{"city": "Paris"}'), frag(2, "z", "x", "{}")),
        chunk(frag(1, "b", "book_flight", '{"to": "Oslo"}')),
        chunk(frag(args='{"more": "text that does not matter"}')),
        chunk(finish="tool_calls"),
    ]
    until = parse_until("anomaly:ambiguous-continuation", Options())
    # get_weather's arguments are complete here: nothing is ambiguous until they shrink
    assert not until.predicate(records(values))
    until = parse_until("rule:continuation", Options())
    for shrink_text, texts in [
        (False, ['{"to": "Oslo"}', '{"more": "text that does not matter"}']),  # whole, as sent
        (True, ["", ""]),
    ]:
        result = minimise(records(values), until.predicate, shrink_text=shrink_text)
        assert until.predicate(result.records)
        calls = [c for r in result.records if r.kind == "chunk"
                 for c in r.value["choices"][0]["delta"].get("tool_calls", [])]  # fmt: skip
        assert len(calls) == 2  # a header and the continuation
        assert [c["function"].get("arguments") for c in calls] == texts


def test_policies_differ_shrinks_to_one_header_and_one_continuation() -> None:
    result = minimise(records(TWO_HEADERS), parse_until("differs", Options()).predicate)
    chunks = [r for r in result.records if r.kind == "chunk"]
    assert len([c for c in chunks if c.value["choices"][0]["delta"].get("tool_calls")]) <= 2
    assert _holds("differs", result.records)


def test_a_property_the_input_does_not_have_is_refused() -> None:
    clean = records([chunk(frag(0, "a", "f", "{}")), chunk(finish="tool_calls")])
    with pytest.raises(PropertyDoesNotHold):
        minimise(clean, parse_until("anomaly:phantom-call", Options()).predicate)


def test_the_deadline_stops_between_tests_with_the_best_so_far() -> None:
    ticks = iter(range(10_000))
    until = parse_until("anomaly:ambiguous-continuation", Options())
    stream = buried(400)
    result = minimise(stream, until.predicate, deadline=10, clock=lambda: next(ticks))
    assert result.timed_out
    assert result.tests <= 10
    assert until.predicate(result.records)
    assert len(result.records) < len(stream)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("anomaly:nope", "unknown anomaly code 'nope'"),
        ("rule:sideways", "unknown rule 'sideways'"),
        ("same", "give anomaly:CODE, differs or rule:RULE"),
        ("", "give anomaly:CODE"),
    ],
)
def test_unknown_properties_are_named(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_until(text, Options())


fragments = st.builds(
    frag,
    index=st.sampled_from([ABSENT, 0, 1]),
    id=st.sampled_from([ABSENT, "", "call_1", "call_2"]),
    name=st.sampled_from([ABSENT, "", "get_weather", "book_flight"]),
    args=st.sampled_from([ABSENT, "", "{", '"a"', ": 1", "}", '{"b": 2}']),
)
streams = st.lists(st.lists(fragments, min_size=0, max_size=3), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.sampled_from(["adr-0019", "exact-key"]), st.booleans())
def test_the_result_keeps_the_property_and_is_never_larger(
    calls: list[list[dict]], policy: str, finish: bool
) -> None:
    values = [chunk(*fragments) for fragments in calls]
    if finish:
        values.append(chunk(finish="tool_calls"))
    stream = records(values)
    trace = assemble(stream, Options(policy=policy))  # type: ignore[arg-type]
    wanted = [f"anomaly:{a.code}" for a in trace.anomalies[:1]] + ["differs"]
    wanted += [f"rule:{name}" for name in sorted(trace.rule_counts)[:1]]
    for until in wanted:
        if not _holds(until, stream, policy):
            continue
        options = Options(policy=policy)  # type: ignore[arg-type]
        result = minimise(stream, parse_until(until, options).predicate, options=options)
        assert _holds(until, result.records, policy)
        assert len(result.records) <= len(stream)
        assert len(to_sse(result.records)) <= len(to_sse(stream))
        # the calls left are the input's, their text in whole pieces
        before, after = assemble(stream, options).blocks, assemble(result.records, options).blocks
        assert calls_kept(before, after), [(b.name, b.text) for b in after]
