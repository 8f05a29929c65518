"""Spec section 5 (text, thinking, ends), the schema-1 JSON, `Trace.state_at`, and jsoncheck."""

from __future__ import annotations

from array import array
from typing import Any

import pytest

from tests.core.schema import ANOMALY_CODES, check_schema
from tests.streamkit import chunk, frag, records, tool_stream
from webapp.core.assembler import Assembler, Options, assemble
from webapp.core.columns import EVENT_TYPES
from webapp.core.jsoncheck import Completion, classify
from webapp.core.jsvalue import js_string
from webapp.core.records import Record
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Fold, Trace
from webapp.triage.compare import compare


def events(trace: Trace, step: int) -> list[tuple[Any, ...]]:
    return [(e.type, e.contentIndex, e.delta) for e in trace.steps[step].events]


def end_events(trace: Trace) -> list[tuple[Any, ...]]:
    return [(e.type, e.contentIndex, e.content, e.reason) for e in trace.steps[-1].events]


def codes(trace: Trace) -> list[str]:
    return sorted(a.code for a in trace.anomalies if a.code in ANOMALY_CODES)


# -- text, thinking, order within a delta ---------------------------------------------------------


def test_reasoning_then_content_then_tool_calls_within_one_delta() -> None:
    value = chunk(
        frag(0, "a", "f", "{}"), content="Hi", reasoning_content="hmm", finish="tool_calls"
    )
    trace = assemble(records([value]))
    check_schema(trace.to_json())
    assert events(trace, 0) == [
        ("start", None, None),
        ("thinking_start", 0, None),
        ("thinking_delta", 0, "hmm"),
        ("text_start", 1, None),
        ("text_delta", 1, "Hi"),
        ("toolcall_start", 2, None),
        ("toolcall_delta", 2, "{}"),
    ]
    assert end_events(trace) == [
        ("thinking_end", 0, "hmm", None),
        ("text_end", 1, "Hi", None),
        ("toolcall_end", 2, "{}", None),
        ("done", None, None, "toolUse"),
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"reasoning_content": "a", "reasoning": "b", "reasoning_text": "c"}, "a"),
        ({"reasoning_content": "", "reasoning": "b", "reasoning_text": "c"}, "b"),
        ({"reasoning_content": None, "reasoning": "", "reasoning_text": "c"}, "c"),
        ({"reasoning": "b", "reasoning_text": "c"}, "b"),
        ({"reasoning_text": "c"}, "c"),
    ],
)
def test_the_first_non_empty_reasoning_field_wins(fields: dict, expected: str) -> None:
    trace = assemble(records([chunk(**fields), chunk(finish="stop")]))
    assert events(trace, 0)[1:] == [("thinking_start", 0, None), ("thinking_delta", 0, expected)]
    assert end_events(trace)[0] == ("thinking_end", 0, expected, None)


def test_blocks_share_one_content_array_in_creation_order() -> None:
    values = [
        chunk(frag(0, "a", "f", "{")),
        chunk(content=""),  # empty content creates nothing
        chunk(content="x"),
        chunk(frag(1, "b", "g", "{}")),
        chunk(frag(0, args="}"), content="y"),
        chunk(reasoning="z"),
        chunk(finish="tool_calls"),
    ]
    trace = assemble(records(values))
    check_schema(trace.to_json())
    assert events(trace, 1) == []
    assert events(trace, 2) == [("text_start", 1, None), ("text_delta", 1, "x")]
    assert events(trace, 3) == [("toolcall_start", 2, None), ("toolcall_delta", 2, "{}")]
    # the text block only grows, even after a tool call came in between
    assert events(trace, 4) == [("text_delta", 1, "y"), ("toolcall_delta", 0, "}")]
    assert events(trace, 5) == [("thinking_start", 3, None), ("thinking_delta", 3, "z")]
    assert end_events(trace) == [
        ("toolcall_end", 0, "{}", None),
        ("text_end", 1, "xy", None),
        ("toolcall_end", 2, "{}", None),
        ("thinking_end", 3, "z", None),
        ("done", None, None, "toolUse"),
    ]
    content = trace.to_json()["content"]
    assert [(c["contentIndex"], c["type"], c["block"]) for c in content] == [
        (0, "toolCall", 0),
        (1, "text", None),
        (2, "toolCall", 1),
        (3, "thinking", None),
    ]
    assert [b["contentIndex"] for b in trace.to_json()["blocks"]] == [0, 2]


# -- ends -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "last", "reason"),
    [
        ("stop", "done", "stop"),
        ("end", "done", "stop"),
        ("length", "done", "length"),
        ("tool_calls", "done", "toolUse"),
        ("function_call", "done", "toolUse"),
        ("content_filter", "error", "error"),
        ("made_up_reason", "error", "error"),
    ],
)
def test_finish_reason_maps_to_done_or_error(finish: str, last: str, reason: str) -> None:
    trace = assemble(records([chunk(content="hi"), chunk(finish=finish)]))
    final = trace.steps[-1].events[-1]
    assert (final.type, final.reason) == (last, reason)
    if last == "error":
        assert final.message is not None and finish in final.message
    assert trace.steps[-1].events[0].type == "text_end", "blocks end before done/error"
    assert codes(trace) == []


@pytest.mark.parametrize("finish", [None, ""])
def test_no_finish_reason_ends_with_error(finish: Any) -> None:
    trace = assemble(records([chunk(content="hi", finish=finish)]))
    assert [e.type for e in trace.steps[-1].events] == ["text_end", "error"]
    assert trace.steps[-1].events[-1].reason == "error"
    assert codes(trace) == ["missing-finish-reason"]


def test_finish_reason_only_records_the_reason_and_blocks_end_after_the_last_chunk() -> None:
    values = [chunk(frag(0, "a", "f", "{"), finish="tool_calls"), chunk(frag(0, args="}"))]
    trace = assemble(records(values))
    assert [e.type for e in trace.steps[0].events] == ["start", "toolcall_start", "toolcall_delta"]
    assert trace.blocks[0].text == "{}"
    assert [e.type for e in trace.steps[-1].events] == ["toolcall_end", "done"]


def test_a_provider_error_stops_assembly_and_the_end_holds_error_alone() -> None:
    stream = [
        Record("chunk", 1, chunk(frag(0, "a", "f", "{}"), content="hi")),
        Record("chunk", 3, {"error": {"message": "overloaded", "code": 529}}),
        Record("chunk", 5, chunk(frag(0, args="x"), finish="tool_calls")),
        Record("done", 7, text="[DONE]"),
    ]
    trace = assemble(stream)
    check_schema(trace.to_json())
    assert [s.kind for s in trace.steps] == ["chunk", "chunk", "chunk", "done", "end"]
    assert [s.assembled for s in trace.steps] == [True, True, False, False, True]
    assert trace.steps[2].fragments == ()
    assert trace.blocks[0].text == "{}", "nothing after the error is assembled"
    assert [(e.type, e.reason, e.message) for e in trace.steps[-1].events] == [
        ("error", "error", "overloaded")
    ]
    assert [(a.code, a.step) for a in trace.anomalies if a.code in ANOMALY_CODES] == [
        ("provider-error", 1)
    ]


def test_an_sse_error_event_is_a_provider_error() -> None:
    stream = [
        Record("chunk", 1, chunk(content="hi")),
        Record("chunk", 4, {"message": "boom"}, event="error"),
    ]
    trace = assemble(stream)
    assert [(e.type, e.message) for e in trace.steps[-1].events] == [("error", "boom")]
    assert codes(trace) == ["provider-error"]


def test_a_provider_error_without_a_message_is_shown_as_json() -> None:
    """Upstream's SDK shows such an error as `JSON.stringify(error)`, not as a Python dict."""
    stream = [Record("chunk", 1, {"error": {"code": 502, "type": "upstream"}})]
    trace = assemble(stream)
    assert trace.steps[-1].events[-1].message == '{"code":502,"type":"upstream"}'


def test_records_after_done_are_listed_not_assembled() -> None:
    stream = [
        *tool_stream([[frag(0, "a", "f", "{}")]]),
        Record("chunk", 9, chunk(frag(1, "b", "g", "{}"), finish="stop")),
        Record("invalid", 11, text="{oops", error="Expecting property name"),
    ]
    trace = assemble(stream)
    check_schema(trace.to_json())
    assert [(s.kind, s.assembled) for s in trace.steps] == [
        ("chunk", True),
        ("chunk", True),
        ("done", True),
        ("chunk", False),
        ("invalid", False),
        ("end", True),
    ]
    assert trace.steps[3].fragments == () and trace.steps[3].events == ()
    assert [b.name for b in trace.blocks] == ["f"]
    assert trace.steps[-1].events[-1].reason == "toolUse", "the stop reason after [DONE] is ignored"
    assert [(a.code, a.step) for a in trace.anomalies if a.code in ANOMALY_CODES] == [
        ("after-done", 3)
    ]


def test_an_invalid_record_is_a_step_and_the_rest_is_still_assembled() -> None:
    stream = [
        Record("chunk", 1, chunk(frag(0, "a", "f", '{"x":'))),
        Record("invalid", 3, text='{"choices": [', error="unexpected end of data"),
        Record("chunk", 5, chunk(frag(0, args="1}"), finish="tool_calls")),
        Record("done", 7, text="[DONE]"),
    ]
    trace = assemble(stream)
    doc = trace.to_json()
    check_schema(doc)
    assert doc["steps"][1]["kind"] == "invalid"
    assert doc["steps"][1]["line"] == 3
    assert "unexpected end of data" in doc["steps"][1]["error"]
    assert trace.blocks[0].text == '{"x":1}'
    assert trace.steps[-1].events[-1].type == "done"
    invalid = [a for a in trace.anomalies if a.code == "invalid-chunk"]
    assert [(a.step, a.block) for a in invalid] == [(1, None)]
    assert "upstream" in invalid[0].message.lower() and "line 3" in invalid[0].message
    assert codes(trace) == ["invalid-chunk"]


def test_start_fires_once_with_the_first_record_whatever_it_is() -> None:
    stream = [
        Record("invalid", 1, text="nope", error="not JSON"),
        Record("chunk", 3, chunk(content="a", finish="stop")),
    ]
    trace = assemble(stream)
    assert [e.type for e in trace.steps[0].events] == ["start"]
    every = [e.type for s in trace.steps for e in s.events]
    assert every.count("start") == 1


def test_an_empty_stream_still_starts_and_ends_with_error() -> None:
    trace = assemble([])
    assert [s.kind for s in trace.steps] == ["end"]
    assert [e.type for e in trace.steps[0].events] == ["start", "error"]
    assert codes(trace) == ["missing-finish-reason"]
    check_schema(trace.to_json())


def test_a_usage_only_chunk_is_a_step_with_no_fragments() -> None:
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}}
    values = [chunk(frag(0, "a", "f", "{}")), chunk(finish="tool_calls"), usage]
    trace = assemble(records(values))
    assert trace.steps[2].kind == "chunk"
    assert trace.steps[2].fragments == () and trace.steps[2].events == ()
    assert codes(trace) == []


def _two_choices(first: int, second: int) -> dict:
    return {
        "choices": [
            {"index": first, "delta": {"tool_calls": [frag(0, f"id{first}", f"f{first}", "{}")]}},
            {
                "index": second,
                "delta": {"tool_calls": [frag(0, f"id{second}", f"f{second}", "{}")]},
            },
        ]
    }


@pytest.mark.parametrize(("choice", "order"), [(0, (0, 1)), (0, (1, 0)), (1, (0, 1))])
def test_the_choice_is_selected_by_its_index_and_others_are_reported(
    choice: int, order: tuple[int, int]
) -> None:
    values = [_two_choices(*order), chunk(finish="tool_calls", choice=choice)]
    trace = assemble(records(values), Options(choice=choice))
    assert [(b.id, b.name) for b in trace.blocks] == [(f"id{choice}", f"f{choice}")]
    assert trace.choice == choice and trace.to_json()["choice"] == choice
    other = [a for a in trace.anomalies if a.code == "other-choices"]
    assert [a.step for a in other] == [0]
    assert str(1 - choice) in other[0].message


# -- both policies, side by side ------------------------------------------------------------------


def test_both_policies_side_by_side_on_the_phantom_call_stream() -> None:
    stream = tool_stream([[frag(0, "call_1", "get_weather", '{"city":')], [frag(args='"Paris"}')]])
    comparison = compare(stream)
    assert comparison.left.policy == "exact-key" and comparison.right.policy == "adr-0019"
    assert [row.step for row in comparison.differing] == [1, 4]  # the fragment, the end
    assert comparison.left_outcome.phantoms == 1 and comparison.left_outcome.starts == 2
    assert comparison.right_outcome.phantoms == 0 and comparison.right_outcome.starts == 1
    assert comparison.summary == (
        "exact-key: 2 blocks, 1 phantom call, toolcall_start fired 2 times for 1 call; "
        "adr-0019: 1 block"
    )


# -- fragments as read, schema 1 ------------------------------------------------------------------


def test_fragments_are_recorded_as_read_with_null_for_absent_keys() -> None:
    stream = tool_stream([[frag(0, "a", "f", "{")], [frag(args="}")], [frag("1", "", None)]])
    doc = assemble(stream).to_json()
    check_schema(doc)
    fragments = [f for step in doc["steps"] for f in step["fragments"]]
    assert [(f["index"], f["id"], f["name"], f["arguments"]) for f in fragments] == [
        (0, "a", "f", "{"),
        (None, None, None, "}"),
        ("1", "", None, None),
    ]


@pytest.mark.parametrize("policy", ["adr-0019", "exact-key"])
@pytest.mark.parametrize("server_tools", [None, ("web_search",)])
def test_schema_1_on_a_stream_with_every_kind_of_step(policy: str, server_tools: Any) -> None:
    stream = [
        Record("chunk", 1, chunk(reasoning_content="think")),
        Record("chunk", 3, chunk(frag(0, "a", "web_search", '{"q":'), content="ok")),
        Record("invalid", 5, text="{", error="truncated"),
        Record("chunk", 7, chunk(frag(args='"x"}'), frag(1, "b", "f", "{}"))),
        Record("chunk", 9, {"choices": []}),
        Record("chunk", 11, chunk(finish="tool_calls")),
        Record("done", 13, text="[DONE]"),
        Record("chunk", 15, chunk(content="late")),
    ]
    if server_tools is None:
        options = Options(policy=policy)  # type: ignore[arg-type]
    else:
        options = Options(policy, "server-tools", server_tools)  # type: ignore[arg-type]
    doc = assemble(stream, options).to_json()
    check_schema(doc)
    assert doc["policy"] == policy
    assert doc["path"] == ("client" if server_tools is None else "server-tools")
    assert [s["kind"] for s in doc["steps"]] == [
        *("chunk", "chunk", "invalid", "chunk", "chunk", "chunk", "done", "chunk", "end"),
    ]
    assert [s["line"] for s in doc["steps"]] == [1, 3, 5, 7, 9, 11, 13, 15, None]


# -- state at a step ------------------------------------------------------------------------------


def test_state_at_a_step_on_the_client_path() -> None:
    values = [
        chunk(content="Let me check."),
        chunk(frag(0, "a", None, '{"c":')),
        chunk(frag(0, name="f", args='"P')),
        chunk(frag(args='"}')),
        chunk(finish="tool_calls"),
    ]
    trace = assemble(records(values))

    def call(step: int) -> Any:
        return [s for s in trace.state_at(step) if s.kind == "toolCall"]

    assert [s.kind for s in trace.state_at(0)] == ["text"]
    assert call(0) == []
    text = trace.state_at(0)[0]
    assert (text.text, text.appended, text.content_index) == ("Let me check.", "Let me check.", 0)
    assert trace.state_at(1)[0].appended == "", "the text block got nothing at step 1"

    expected = {
        1: ("a", "", '{"c":', '{"c":'),
        2: ("a", "f", '{"c":"P', '"P'),
        3: ("a", "f", '{"c":"P"}', '"}'),
        4: ("a", "f", '{"c":"P"}', ""),
        6: ("a", "f", '{"c":"P"}', ""),
    }
    for step, (call_id, name, text_so_far, appended) in expected.items():
        (state,) = call(step)
        assert (state.id, state.name, state.text, state.appended) == (
            call_id,
            name,
            text_so_far,
            appended,
        ), f"step {step}"
        assert state.starts == 1 and state.fold is None and state.content_index == 1
        assert state.indexes == (0,) and state.aliases == ("a",)


def test_state_at_a_step_on_the_server_tools_path() -> None:
    values = [
        chunk(frag(0, "a", "web_search", '{"q":')),
        chunk(frag(1, "b", "f", "{")),
        chunk(frag(0, args='"x"}')),
        chunk(frag(1, args="}")),
        chunk(finish="tool_calls"),
    ]
    trace = assemble(records(values), Options(path="server-tools", server_tools=("web_search",)))

    def candidate(step: int, number: int) -> Any:
        (state,) = [s for s in trace.state_at(step) if s.number == number]
        return state

    assert [s.number for s in trace.state_at(0)] == [0]
    first = candidate(1, 0)
    assert (first.fold, first.starts, first.content_index, first.pending) == (None, 0, None, True)
    assert candidate(2, 0).fold == Fold(2, "server")
    assert candidate(2, 0).appended == '"x"}'
    assert (candidate(2, 1).fold, candidate(2, 1).starts, candidate(2, 1).content_index) == (
        None,
        0,
        None,
    )
    second = candidate(3, 1)
    assert (second.fold, second.starts, second.content_index) == (Fold(3, "client"), 1, 0)
    assert (second.text, second.appended) == ("{}", "}")
    assert candidate(6, 0).starts == 0 and candidate(6, 0).content_index is None


# -- JSON checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "state", "value"),
    [
        ('{"a":1}', "complete", {"a": 1}),
        (' [1, "x"] ', "complete", [1, "x"]),
        ('"x"', "complete", "x"),
        ("null", "complete", None),
        ("1" * 30, "complete", None),  # a double, as JSON.parse gives
        ('{"a":', "partial", {}),
        ('{"a":"Par', "partial", {"a": "Par"}),
        ("[1,", "partial", [1]),
        ('{"a"', "partial", None),
        ("tru", "partial", None),
        ("-", "partial", None),
        ('{"a":1.', "partial", None),
        ('"\\u12', "partial", None),
        ("}", "invalid", None),
        ('{"a" 1}', "invalid", None),
        ('{"a":1}}', "invalid", None),
        ('{"a":01', "invalid", None),
        ('{"a": NaN}', "invalid", None),
        ("[1] x", "invalid", None),
        # complete values followed by more text never become JSON again
        ('{"a":1} 1', "invalid", None),
        ("1 2", "invalid", None),
        ('{"a":1}t', "invalid", None),
        ("", "empty", None),
        (" \n\t", "empty", None),
    ],
)
def test_classify(text: str, state: str, value: Any) -> None:
    parsed = classify(text)
    assert parsed.state == state
    if state in ("complete", "partial") and value is not None:
        assert parsed.value == value
    if state == "invalid":
        assert parsed.error


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (['{"q":', '"x"', "}"], [False, False, True]),
        (['{"a":"}"', "}"], [False, True]),
        (['{"a":"\\', '"', '"}'], [False, False, True]),
        (["{}", " ", "\n"], [True, True, True]),
        (["{}", " x"], [True, False]),
        (["{}", "{}"], [True, False]),
        (["[1,2", "]"], [False, True]),
        (["", "  ", "{", "}"], [False, False, False, True]),
        (['{"a" 1}', "  "], [False, False]),
        (['"ab', 'c"', " "], [False, True, True]),
        (["tr", "ue"], [False, True]),
        (["-", "1", "2"], [False, True, True]),
        (["1", " 2"], [True, False]),
    ],
)
def test_completion_says_when_the_text_is_one_complete_json_value(
    pieces: list[str], expected: list[bool]
) -> None:
    completion = Completion()
    assert [completion.feed(piece) for piece in pieces] == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (123456789012345680000.0, "123456789012345680000"),
        (2**70, "1.1805916207174113e+21"),
        (True, "true"),
        ([1, None, "a"], "1,,a"),
        ({"a": 1}, "[object Object]"),
        (float("inf"), "Infinity"),  # JSON.parse("1e400") is Infinity
        (float("-inf"), "-Infinity"),
    ],
)
def test_js_string_matches_javascript(value: Any, text: str) -> None:
    assert js_string(value) == text


def test_incomplete_arguments_are_reported_for_a_server_tool_call_too() -> None:
    """A server-tool call whose arguments never completed folds at the end, unfinished."""
    stream = tool_stream([[frag(0, "a", "web_search", '{"q":')]])
    trace = assemble(stream, Options(path="server-tools", server_tools=("web_search",)))
    assert trace.blocks[0].fold is not None and trace.blocks[0].fold.as_ == "server"
    assert [(a.code, a.block) for a in trace.anomalies if a.code in ANOMALY_CODES] == [
        ("incomplete-arguments", 0)
    ]


def test_a_phantom_is_reported_even_when_a_bare_star_pattern_makes_it_a_server_tool() -> None:
    """`*` names every tool a server tool; a candidate with no name at all is still a phantom."""
    stream = tool_stream([[frag(0, "a", "f", '{"x":')], [frag(args="1}")]])
    trace = assemble(stream, Options("exact-key", "server-tools", ("*",)))
    assert [(b.name, b.text) for b in trace.blocks] == [("f", '{"x":'), ("", "1}")]
    assert ("phantom-call", 1) in [(a.code, a.block) for a in trace.anomalies]


def test_a_server_path_continuation_names_the_pending_candidate_it_chose() -> None:
    """Block #1 opened later but has folded: the reason must not call #0 "the most recently
    opened" without saying that folded candidates were passed over."""
    stream = tool_stream(
        [[frag(0, "a", "f", '{"x":')], [frag(1, "b", "g", "{}")], [frag(args="1}")]]
    )
    trace = assemble(stream, Options(path="server-tools", server_tools=("web_search",)))
    (fragment,) = trace.steps[2].fragments
    assert fragment.rule == "continuation" and fragment.block == 0
    assert "fold" in fragment.reason or "pending" in fragment.reason


def test_feeding_records_one_at_a_time_gives_the_steps_of_assemble() -> None:
    stream = tool_stream([[frag(0, "a", "f", "{")], [frag(args="}")]])
    assembler = Assembler(Options())
    steps = [assembler.feed(record) for record in stream]
    steps.append(assembler.finish())
    trace = assemble(stream)
    assert tuple(steps) == trace.steps == assembler.trace.steps
    with pytest.raises(RuntimeError):
        assembler.feed(stream[0])
    with pytest.raises(RuntimeError):
        assembler.finish()


def test_the_byte_sized_columns_are_bytearrays_the_other_integers_arrays() -> None:
    """Byte-sized rows in bytearrays, the other integers in arrays (`Columns`), with the
    rows' values."""
    stream = tool_stream([[frag(0, "a", "f", "{")], [frag(args="}")], [frag(1, "b", "g", "{}")]])
    columns = assemble(stream, Options()).columns
    for column in (columns.step_kind, columns.fragment_rule, columns.event_type):
        assert type(column) is bytearray
    for column in (columns.step_line, columns.fragment_block, columns.event_index):
        assert isinstance(column, array) and column.typecode == "q"
    assert [RULE_NAMES[code] for code in columns.fragment_rule] == ["new", "continuation", "new"]
    assert list(columns.fragment_block) == [0, 0, 1]
    assert [EVENT_TYPES[code] for code in columns.event_type][-3:] == [
        "toolcall_end", "toolcall_end", "done"
    ]  # fmt: skip
