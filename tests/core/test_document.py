"""The trace document is the same however it is written: from the columns a batch of steps at
a time, or built whole from the `Step` objects; and the trace's answers that read the columns
(`line_of`, `steps_by_rule`, `summary_json`) are the ones its steps give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.core.test_golden import CORPUS, STREAMS
from tests.core.test_properties import any_options, any_records
from tests.streamkit import chunk, frag
from tests.streamkit import records as chunk_records
from webapp.core.assembler import assemble
from webapp.core.jsoncheck import dumps
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import ReadResult, Record
from webapp.core.rules import POLICIES, RULE_NAMES
from webapp.core.tracejson import input_json, trace_document_parts, trace_document_stream

SOME = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def same_documents(records: list[Record] | tuple[Record, ...], options: Options) -> None:
    """Batch by batch from the columns, or whole from the steps: the same bytes."""
    trace = assemble(records, options)
    source = ReadResult("sse", tuple(records), notes=("a note",))
    whole = {
        **trace.to_json(),
        "steps": [step.to_json() for step in trace.steps],
        "input": input_json(source),
    }
    assert trace.to_json()["steps"] == whole["steps"]
    written = b"".join(trace_document_parts(trace, source))
    assert written == dumps(whole)
    if trace.orjson_values:
        assert b"".join(trace_document_stream(trace, source)) == written


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("policy", POLICIES)
def test_the_corpus_is_written_the_same_both_ways(name: str, policy: str) -> None:
    text = (Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")
    for options in (Options(policy), Options(policy, "server-tools", ("web_search", "get_*"))):  # type: ignore[arg-type]
        same_documents(read(text).records, options)


@SOME
@given(any_records, any_options)
def test_any_stream_is_written_the_same_both_ways(stream: list[Record], options: Options) -> None:
    same_documents(stream, options)


@pytest.mark.parametrize("depth", [1, 200, *range(247, 258), 300])
def test_deeply_nested_values_are_written_as_the_whole_document_would_be(depth: int) -> None:
    """orjson refuses nesting beyond its limit: the streamed document must refuse it where
    the whole one would, and fall back to the same ASCII JSON."""
    deep: Any = "x"
    for _ in range(depth):
        deep = [deep]
    stream = chunk_records([chunk(frag(0, deep, "f", "{}"), finish="tool_calls")])
    same_documents(stream, Options())
    deep_arguments = "[" * depth + "]" * depth
    stream = chunk_records([chunk(frag(0, "a", "f", '{"a":' + deep_arguments + "}"))])
    same_documents(stream, Options())


def test_lone_surrogates_and_huge_integers_fall_back_to_the_same_ascii_document() -> None:
    for odd in ("a\ud800b", 2**70):
        stream = chunk_records([chunk(frag(0, "a", odd, "{}"), finish="tool_calls")])
        same_documents(stream, Options())


def test_many_steps_are_written_in_several_batches() -> None:
    pieces = [frag(args="x") for _ in range(5000)]
    stream = chunk_records([chunk(frag(0, "a", "f", "{")), *(chunk(p) for p in pieces)])
    same_documents(stream, Options())


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
