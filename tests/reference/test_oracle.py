"""The assembler agrees with the oracle of the spec (`tests.reference.oracle`) on every step.

For streams inside the spec's domain (see the oracle's docstring), under both policies and on
both paths (client, server-tools), fed both ways (a list of records; the SSE text, which the
reader keeps as payloads that the assembler parses itself): each step's fragments (rule and
block), its events, whether it was assembled, every tool-call block's state after it, the
final blocks, and the anomalies whose code and step the spec defines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.schema import ANOMALY_CODES
from tests.core.test_golden import CORPUS, STREAMS
from tests.reference import oracle
from tests.streamkit import ABSENT, chunk, frag
from tests.streamkit import records as chunk_records
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.refusal import holds_stream
from webapp.core.records import Payloads, Record
from webapp.core.rules import POLICIES
from webapp.core.trace import Trace

LOTS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Streams inside the spec's domain.

texts = st.text("ab \u00e9", max_size=3)
arguments = st.sampled_from(
    [ABSENT, None, "", "{", "}", '{"a":', "1", '"x"', "{}", " ", "[1]", '{"a":1}']
) | st.text('{}[]":,1a \n\\', max_size=6)
fragments = st.builds(
    frag,
    index=st.sampled_from([ABSENT, None, 0, 0, 1, 2, -1, "0"]),
    id=st.sampled_from([ABSENT, ABSENT, None, "", "a", "b"]),
    name=st.sampled_from([ABSENT, ABSENT, None, "", "f", "g", "web_search"]),
    args=arguments,
)
deltas = st.fixed_dictionaries(
    {},
    optional={
        "content": st.none() | texts,
        "reasoning_content": texts,
        "reasoning": texts,
        "reasoning_text": texts,
        "tool_calls": st.lists(fragments, max_size=3),
    },
)
finishes = st.sampled_from(
    [ABSENT, None, None, "", "stop", "tool_calls", "length", "content_filter", "end", "odd"]
)


@st.composite
def chunks(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["one"] * 8 + ["two", "none", "error"]))
    if kind == "error":
        return {"error": {"message": "boom"}}
    if kind == "none":
        return {"choices": [], "usage": {"total_tokens": 3}}
    choices = []
    for index in [draw(st.sampled_from([0, 0, 0, 1]))] if kind == "one" else [0, 1]:
        choice: dict[str, Any] = {"index": index, "delta": draw(deltas)}
        finish = draw(finishes)
        if finish is not ABSENT:
            choice["finish_reason"] = finish
        choices.append(choice)
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": choices}


@st.composite
def streams(draw: st.DrawFn) -> list[Record]:
    out = []
    for kind in draw(st.lists(st.sampled_from(["chunk"] * 12 + ["done", "invalid"]), max_size=9)):
        line = 2 * len(out) + 1
        if kind == "chunk":
            out.append(Record("chunk", line, draw(chunks())))
        elif kind == "done":
            out.append(Record("done", line, text="[DONE]"))
        else:
            out.append(Record("invalid", line, text="{", error="not JSON"))
    return out


paths = st.sampled_from(
    [None, ("web_search",), ("f",), ("*",), ("g*", "web_search")]
)  # None: the client path


def options_for(policy: str, tools: tuple[str, ...] | None, choice: int = 0) -> Options:
    if tools is None:
        return Options(policy, "client", (), choice)  # type: ignore[arg-type]
    return Options(policy, "server-tools", tools, choice)  # type: ignore[arg-type]


# The comparison.


def event_json(event: Any) -> dict[str, Any]:
    out = event.to_json()
    out.pop("message", None)  # the words are not the spec's
    return out


def snapshot(state: Any) -> tuple[Any, ...]:
    fold = None if state.fold is None else (state.fold.step, state.fold.as_)
    return (state.number, state.content_index, state.id, state.name, state.text, state.starts,
            fold)  # fmt: skip


def anomalies(trace: Trace) -> set[tuple[str, int, int | None]]:
    return {
        (a.code, -1 if a.code == "phantom-call" else a.step, a.block)
        for a in trace.anomalies
        if a.code in ANOMALY_CODES
    }


def agree(records: list[Record], policy: str, tools: tuple[str, ...] | None, choice: int) -> None:
    """The trace of `records` is the oracle's, step by step."""
    expected = oracle.run(records, policy, tools, choice)
    trace = assemble(records, options_for(policy, tools, choice))
    assert len(trace.steps) == len(expected.steps)
    for step, (mine, theirs) in enumerate(zip(trace.steps, expected.steps, strict=True)):
        assert [(f.rule, f.block) for f in mine.fragments] == theirs.fragments, f"step {step}"
        assert [event_json(e) for e in mine.events] == theirs.events, f"step {step}"
        assert mine.assembled == theirs.assembled, f"step {step}"
        states = [s for s in trace.state_at(step) if s.kind == "toolCall"]
        assert sorted(map(snapshot, states)) == theirs.blocks, f"step {step}"
    final = [(b["block"], b["contentIndex"], b["id"], b["name"], b["arguments"], b["starts"],
              None if b["folded"] is None else (b["folded"]["step"], b["folded"]["as"]))
             for b in trace.to_json()["blocks"]]  # fmt: skip
    assert final == [block.snapshot() for block in expected.blocks]
    assert anomalies(trace) == expected.anomalies


def as_sse(records: list[Record]) -> str:
    """The records as a plain SSE text: one `data:` line each."""
    lines = []
    for record in records:
        if record.kind == "chunk":
            lines.append(f"data: {json.dumps(record.value)}\n\n")
        else:
            lines.append(f"data: {record.text}\n\n")
    return "".join(lines)


@LOTS
@given(streams(), st.sampled_from(POLICIES), paths, st.sampled_from([0, 0, 0, 1]))
@example(
    chunk_records([chunk(frag(0, "a", "f", "{")), chunk(frag(args="}")), chunk(finish="stop")]),
    "adr-0019", None, 0,
)  # fmt: skip
def test_the_assembler_follows_the_spec(
    stream: list[Record], policy: str, tools: tuple[str, ...] | None, choice: int
) -> None:
    agree(stream, policy, tools, choice)


@LOTS
@given(streams(), st.sampled_from(POLICIES), paths, st.sampled_from([0, 0, 0, 1]))
def test_the_assembler_follows_the_spec_from_sse_text(
    stream: list[Record], policy: str, tools: tuple[str, ...] | None, choice: int
) -> None:
    if not holds_stream(stream):
        return  # an empty input, or one without a chunk, is refused by the reader
    source = read(as_sse(stream), "sse")
    assert isinstance(source.records, Payloads)
    agree(list(source.records), policy, tools, choice)
    expected = oracle.run(list(source.records), policy, tools, choice)
    trace = assemble(source.records, options_for(policy, tools, choice))
    assert [[(f.rule, f.block) for f in s.fragments] for s in trace.steps] == [
        s.fragments for s in expected.steps
    ]
    assert anomalies(trace) == expected.anomalies


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("tools", [None, ("web_search", "get_*")], ids=["client", "server"])
def test_the_corpus_follows_the_spec(name: str, policy: str, tools: tuple[str, ...] | None) -> None:
    records = list(read((Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")).records)
    if any(_outside_the_domain(record) for record in records):
        pytest.skip("a record outside the oracle's domain")  # none today: see the test below
    agree(records, policy, tools, 0)


def _outside_the_domain(record: Record) -> bool:
    if record.kind != "chunk":
        return False
    choices = record.value.get("choices") if isinstance(record.value, dict) else None
    for choice in choices or []:
        delta = choice.get("delta") or {}
        if "reasoning_details" in delta or any(
            "custom" in raw or not isinstance(raw.get("function", {}), dict)
            for raw in delta.get("tool_calls") or []
        ):
            return True
    return False


def test_every_corpus_stream_is_inside_the_oracles_domain() -> None:
    outside = [
        name
        for name in STREAMS
        if any(
            _outside_the_domain(r)
            for r in read((Path(CORPUS) / f"{name}.sse").read_text(encoding="utf-8")).records
        )
    ]
    assert outside == []


def test_the_oracle_reads_json_as_the_spec_does() -> None:
    """Its own JSON check: complete, a prefix of some valid text, or broken."""
    cases = {
        "complete": ["{}", '{"a": [1, 2.5e-3, true, null, "x\\u00e9"]}', " 1 ", '"x"', "-0"],
        "partial": ["{", '{"a":', '{"a": "x', "[1,", "tru", "-", "1.", "1e", '"\\u00'],
        "invalid": ["}", "{}{", '{"a" 1}', "[1,]", "01", "NaN", '"\x01"', '{"a":1,}', "1 2"],
    }
    for state, texts_ in cases.items():
        for text in texts_:
            assert oracle.json_state(text) == state, text
