"""Diagnosis (spec section 7): anomalies at their cause, severities, what the tool receives.

Properties over arbitrary streams (the generators of test_properties):
- an `invalid-arguments` anomaly sits at the step whose fragment broke the JSON: as of the step
  before, the block's text was still the start of valid JSON; as of its step, it no longer is;
- an `ambiguous-continuation` sits at a step where a continuation landed on its block;
- every anomaly code is in the table, with its severity in the JSON;
- `delivered` is what upstream's client would hand the tool: an object, always.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from tests.core.test_properties import any_options, any_records
from tests.streamkit import frag, tool_stream
from webapp.core.anomalies import KINDS, severity_of
from webapp.core.assembler import assemble
from webapp.core.delivery import deliver, repair
from webapp.core.diagnosis import explain, first_break, is_prefix
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.trace import Trace

MANY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _text_as_of(trace: Trace, block: int, step: int) -> str:
    states = {s.number: s for s in trace.state_at(step) if s.kind == "toolCall"}
    state = states.get(block)
    return "" if state is None else state.text


@MANY
@given(any_records, any_options)
def test_an_anomaly_is_never_after_the_fragment_that_caused_it(
    stream: list[Record], options: Options
) -> None:
    trace = assemble(stream, options)
    end = len(trace.steps) - 1
    for anomaly in trace.anomalies:
        assert anomaly.code in KINDS, f"{anomaly.code} is missing from the anomaly table"
        assert 0 <= anomaly.step <= end
        if anomaly.code == "invalid-arguments":
            assert anomaly.block is not None
            before = _text_as_of(trace, anomaly.block, anomaly.step - 1)
            after = _text_as_of(trace, anomaly.block, anomaly.step)
            assert is_prefix(before), (before, anomaly)
            assert not is_prefix(after), (after, anomaly)
        if anomaly.code == "ambiguous-continuation":
            landed = [f for f in trace.steps[anomaly.step].fragments if f.rule == "continuation"]
            assert any(f.block == anomaly.block for f in landed)
    for document in trace.to_json()["anomalies"]:
        assert document["severity"] == severity_of(document["code"])
    for block in trace.blocks:
        assert isinstance(block.delivered.arguments, dict)


def _trace(chunks: list[list[dict]], policy: str = "adr-0019") -> Trace:
    return assemble(tool_stream(chunks), Options(policy=policy))  # type: ignore[arg-type]


def _found(trace: Trace) -> list[tuple[str, int, int | None]]:
    return [(a.code, a.step, a.block) for a in trace.anomalies]


def test_two_open_headers_make_both_continuations_a_guess() -> None:
    trace = _trace(
        [
            [frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "book_flight", "")],
            [frag(args='{"city": ')],
            [frag(args='"Paris"}')],
        ]
    )
    assert _found(trace) == [
        ("ambiguous-continuation", 1, 1),
        ("ambiguous-continuation", 2, 1),
        ("empty-arguments", 5, 0),
    ]
    reason = trace.steps[1].fragments[0].reason
    assert "continuation onto block #1" in reason
    assert "block #0 get_weather was also open, its arguments empty" in reason
    assert trace.blocks[0].delivered.arguments == {}
    assert trace.blocks[1].delivered.arguments == {"city": "Paris"}


def test_no_guess_when_the_other_block_is_complete() -> None:
    trace = _trace(
        [
            [frag(0, "a", "f", "{}"), frag(1, "b", "g", '{"x": ')],
            [frag(args="1}")],
        ]
    )
    assert _found(trace) == []
    assert "no other block was waiting for arguments" in trace.steps[1].fragments[0].reason


def test_many_waiting_blocks_are_counted_not_listed() -> None:
    headers = [frag(k, f"c{k}", f"f{k}", "") for k in range(6)]
    trace = _trace([headers, [frag(args="{}")]])
    (guess,) = [a for a in trace.anomalies if a.code == "ambiguous-continuation"]
    assert guess.block == 5
    assert "and 2 other blocks" in guess.message


def test_invalid_arguments_sit_at_the_step_that_broke_them() -> None:
    trace = _trace(
        [
            [frag(0, "c", "f", '{"a": 1')],
            [frag(0, args="}")],
            [frag(0, args=' {"b": 2}')],  # a second value: the break, at step 2
            [frag(0, args="")],
        ]
    )
    (broken,) = [a for a in trace.anomalies if a.code == "invalid-arguments"]
    assert broken.step == 2
    assert "two values glued together" in broken.message
    assert "trailing characters" in broken.message  # the parser's own words, as detail


@pytest.mark.parametrize(
    ("arguments", "code", "severity"),
    [
        ('{"city": "Par', "incomplete-arguments", "error"),
        ("[1]", "non-object-arguments", "warning"),
        ('"x"', "non-object-arguments", "warning"),
        ("42", "non-object-arguments", "warning"),
        ("", "empty-arguments", "warning"),
        ("  ", "empty-arguments", "warning"),
    ],
)
def test_final_verdicts_at_the_end_step(arguments: str, code: str, severity: str) -> None:
    trace = _trace([[frag(0, "c", "f", arguments)]])
    assert _found(trace) == [(code, len(trace.steps) - 1, 0)]
    assert trace.anomalies[0].severity == severity
    assert trace.blocks[0].delivered.arguments == {}


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ('{"a": 1}{"b": 2}', "two values glued together"),
        ('"Paris"}', "start mid-string"),
        ('{"a": NaN}', "NaN and Infinity are not JSON"),
        ('{"a": 1,}', "trailing comma"),
        ('{"a" 1}', "structure breaks here"),
        ('{"a": "x\ny"}', "raw control character"),
        ('{"a": "\\q"}', "backslash"),
        ("Paris", "do not start with a JSON value"),
    ],
)
def test_parser_messages_are_translated(text: str, meaning: str) -> None:
    cause = explain(text)
    assert meaning in cause.meaning
    assert cause.detail  # the raw parser text is kept


def test_the_break_position_counts_characters_not_bytes() -> None:
    text = '{"ü": 1}x'
    assert explain(text).position == text.index("x")


def test_first_break_bisects_the_pieces() -> None:
    assert first_break(['{"a"', ": 1", "}", "}", "x"]) == 3
    assert first_break(['{"a"', ": 1"]) is None
    assert first_break(["x"]) == 0


@pytest.mark.parametrize(
    ("text", "arguments", "complains"),
    [
        ("", {}, False),
        ("   ", {}, False),
        ('{"a": 1}', {"a": 1}, False),
        ('{"a": "x\ny"}', {"a": "x\ny"}, False),  # repaired: the newline escaped
        ('{"a": "C:\\dir"}', {"a": "C:\\dir"}, False),  # repaired: \d doubled
        ('{"a": 1', {}, True),
        ("[1, 2]", {}, True),
        ('{"big": 12345678901234567890}', {"big": 1.2345678901234567e19}, False),
    ],
)
def test_delivered_follows_upstreams_parse(text: str, arguments: object, complains: bool) -> None:
    delivered = deliver(text)
    assert delivered.arguments == arguments
    assert (delivered.error is not None) == complains


def test_repair_leaves_valid_escapes_alone() -> None:
    assert repair('"a\\n\\u00e9\\"b"') == '"a\\n\\u00e9\\"b"'
    assert repair('"\\u12"') == '"\\\\u12"'
