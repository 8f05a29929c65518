"""The columnar trace agrees with the reference loop on every step, block and anomaly.

Every step (its JSON, plus each fragment's appended text), every block's state after every
step, and the whole trace document are compared on the golden corpus and on streams that
Hypothesis generates with the strategies of `tests.core.test_properties`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.core.test_golden import CORPUS, STREAMS
from tests.core.test_properties import any_options, any_records, bare_split, two_splits
from tests.reference.assembler import assemble as reference_assemble
from tests.streamkit import chunk, frag
from tests.streamkit import records as chunk_records
from webapp.core.assembler import assemble
from webapp.core.document import input_json, trace_document_parts
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import ReadResult, Record
from webapp.core.rules import POLICIES, RULE_NAMES

LOTS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def agree(records: list[Record] | tuple[Record, ...], options: Options) -> None:
    """Assemble both ways and compare everything a view or a document can read."""
    expected = reference_assemble(records, options)
    actual = assemble(records, options, contract=False)  # the reference reads no contract
    assert len(actual.steps) == len(expected.steps)
    for mine, theirs in zip(actual.steps, expected.steps, strict=True):
        assert mine.to_json() == theirs.to_json(), f"step {theirs.step}"
        assert [f.appended for f in mine.fragments] == [f.appended for f in theirs.fragments]
        assert mine.assembled == theirs.assembled
    for step in range(len(expected.steps)):
        assert _states(actual.state_at(step)) == _states(expected.state_at(step)), step
    assert actual.anomalies_by_step().keys() == expected.anomalies_by_step().keys()
    assert actual.rule_counts == expected.rule_counts
    assert actual.to_json() == expected.to_json()
    source = ReadResult("sse", tuple(records), notes=("a note",))
    document = {**expected.to_json(), "input": input_json(source)}
    assert b"".join(trace_document_parts(actual, source)) == dumps(document)


def _states(states: Any) -> list[tuple[Any, ...]]:
    return [
        (s.kind, s.number, s.content_index, s.id, s.name, s.text, s.appended, s.starts,
         None if s.fold is None else s.fold.to_json(), s.indexes, s.aliases, s.opened_step)
        for s in states
    ]  # fmt: skip


def _corpus_cases() -> list[Any]:
    cases = []
    for name in STREAMS:
        for policy in POLICIES:
            for path, tools in (("client", ()), ("server-tools", ("web_search", "get_*"))):
                label = f"{name}.{policy}.{path}"
                cases.append(pytest.param(name, Options(policy, path, tools), id=label))
    return cases


@pytest.mark.parametrize(("name", "options"), _corpus_cases())
def test_the_corpus_agrees_with_the_reference(name: str, options: Options) -> None:
    text = (Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")
    agree(read(text).records, options)


@LOTS
@given(any_records, any_options)
def test_any_stream_agrees_with_the_reference(stream: list[Record], options: Options) -> None:
    agree(stream, options)


@SOME
@given(bare_split())
def test_bare_continuations_agree_with_the_reference(case: Any) -> None:
    _, stream, _ = case
    for policy in POLICIES:
        agree(stream, Options(policy))


@SOME
@given(two_splits())
def test_split_calls_agree_with_the_reference(case: Any) -> None:
    _, policy, first, second = case
    for stream in (first, second):
        agree(stream, Options(policy))
        agree(stream, Options(policy, "server-tools", ("f",)))


@pytest.mark.parametrize("depth", [1, 200, *range(247, 258), 300])
def test_deeply_nested_values_are_written_as_the_whole_document_would_be(depth: int) -> None:
    """orjson refuses nesting beyond its limit: the streamed document must refuse it where
    the whole one would, and fall back to the same ASCII JSON."""
    deep: Any = "x"
    for _ in range(depth):
        deep = [deep]
    stream = chunk_records([chunk(frag(0, deep, "f", "{}"), finish="tool_calls")])
    agree(stream, Options())
    deep_arguments = "[" * depth + "]" * depth
    stream = chunk_records([chunk(frag(0, "a", "f", '{"a":' + deep_arguments + "}"))])
    agree(stream, Options())


def test_lone_surrogates_and_huge_integers_fall_back_to_the_same_ascii_document() -> None:
    for odd in ("a\ud800b", 2**70):
        stream = chunk_records([chunk(frag(0, "a", odd, "{}"), finish="tool_calls")])
        agree(stream, Options())


def test_many_steps_are_written_in_several_batches() -> None:
    pieces = [frag(args="x") for _ in range(5000)]
    stream = chunk_records([chunk(frag(0, "a", "f", "{")), *(chunk(p) for p in pieces)])
    agree(stream, Options())


@SOME
@given(any_records, any_options)
def test_the_trace_answers_from_its_columns_as_its_steps_do(
    stream: list[Record], options: Options
) -> None:
    """`line_of`, `steps_by_rule` and `summary_json` read the columns; the steps agree."""
    trace = assemble(stream, options)
    steps = list(trace.steps)
    assert [trace.line_of(step.step) for step in steps] == [step.line for step in steps]
    assert trace.line_of(len(steps)) is None and trace.line_of(-1) is None
    by_rule: dict[str, list[int]] = {name: [] for name in RULE_NAMES}
    for step in steps:
        for rule in {fragment.rule for fragment in step.fragments}:
            by_rule[rule].append(step.step)
    assert trace.steps_by_rule() == by_rule
    assert trace.summary_json() == trace.to_json()["summary"]
