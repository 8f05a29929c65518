"""Properties: the contract is the same under every policy and path and whatever reader lane
read the stream; cutting the same calls into other pieces never changes the intended reading;
each quirk is reported once per call (or stream); the reading is linear in the stream."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.test_properties import (
    Call,
    any_options,
    any_records,
    any_split,
    bare_split,
    calls,
    cut,
    group,
    header,
)
from tests.streamkit import chunk, frag, records, sse
from tests.timing import assert_linear
from webapp.core.assembler import assemble
from webapp.core.contract import QUIRK, read_contract
from webapp.core.contract.quirks import ENTRY_TESTS
from webapp.core.contract.wire import read_wire
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.readers.writer import to_sse
from webapp.core.records import Payloads, Record

SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPTIONS = [
    Options("adr-0019", "client"),
    Options("exact-key", "client"),
    Options("adr-0019", "server-tools", ("web_search",)),
    Options("exact-key", "server-tools", ("*",)),
]


@SOME
@given(any_records, any_options)
def test_the_contract_is_the_same_under_every_policy_and_path(
    stream: list[Record], options: Options
) -> None:
    expected = read_contract(stream, options.choice)
    for other in [*OPTIONS, options]:
        chosen = Options(other.policy, other.path, other.server_tools, options.choice)
        trace = assemble(stream, chosen)
        assert trace.contract == expected, chosen
        document = trace.to_json()
        assert document["quirks"] == [found.to_json() for found in expected.quirks]
        assert document["why"] == expected.why


@SOME
@given(any_records)
@example(  # null entries and a tool_calls that is no array: one "no call" hit, not two
    [
        Record("chunk", 1, {"choices": [None]}),
        Record("chunk", 2, {"choices": [{"index": 0, "delta": {"tool_calls": [None]}}]}),
        Record("chunk", 3, {"choices": [{"index": 0, "delta": {"tool_calls": True}}]}),
    ]
)
def test_each_quirk_is_reported_once_per_call_or_once_per_stream(stream: list[Record]) -> None:
    """A call is a part of a block (two calls sharing an index are two parts of one block)."""
    contract = read_contract(stream)
    parts = Counter(part.block for part in read_wire(stream, 0, ENTRY_TESTS).parts)
    seen: Counter[tuple[str, int | None]] = Counter()
    for found in contract.quirks:
        assert found.steps == tuple(sorted(found.steps)) or found.code == "no-finish"
        assert found.count >= len(found.steps) >= 1
        if QUIRK[found.code].scope == "stream":
            key: tuple[str, int | None] = (found.code, None)
        else:
            assert len(found.blocks) <= 1
            key = (found.code, found.blocks[0] if found.blocks else None)
        seen[key] += 1
        calls_there = 1 if key[1] is None or QUIRK[key[0]].entry else parts[key[1]]
        assert seen[key] <= calls_there, key


@SOME
@given(bare_split())
def test_the_plain_lane_and_the_line_by_line_reader_read_the_same_contract(case: Any) -> None:
    _, stream, _ = case
    text = to_sse(stream)
    lane = read(text, "sse").records
    assert isinstance(lane, Payloads)
    assert read_contract(lane) == read_contract(tuple(lane))


_BARE_SHAPES = st.sampled_from(
    [
        lambda piece: {"function": {"arguments": piece}},
        lambda piece: {"index": None, "function": {"arguments": piece}},
        lambda piece: {"type": "function", "function": {"arguments": piece}, "id": None},
        lambda piece: {"function": {"arguments": piece, "name": None}},
        lambda piece: {"function": {}},
        lambda piece: {"index": None, "function": {"arguments": None}},
    ]
)


@SOME
@given(bare_split(), st.data())
def test_plain_bare_continuations_are_marked_as_the_entry_tests_would(
    case: Any, data: st.DataObject
) -> None:
    """The reader fed by the assembler marks a plain bare continuation with `BARE_MARKS`
    without running the entry tests; reading the same stream with every test run (as
    `read_contract` does) finds the same quirks, in whichever shape the pieces come."""
    _, stream, _ = case
    shaped = []
    for record in stream:
        value = record.value
        if isinstance(value, dict) and record.kind == "chunk":
            delta = value["choices"][0].get("delta", {})
            for k, entry in enumerate(delta.get("tool_calls") or []):
                if isinstance(entry, dict) and set(entry) <= {"function"}:
                    piece = entry.get("function", {}).get("arguments")
                    delta["tool_calls"][k] = data.draw(_BARE_SHAPES)(piece)
        shaped.append(record)
    assert assemble(shaped).contract == read_contract(shaped)


def _intended(stream: list[Record]) -> list[tuple[Any, Any, Any]]:
    contract = read_contract(stream)
    assert contract.intended is not None, contract.why
    return [(c.id, c.name, json.loads(c.arguments)) for c in contract.intended.calls]


def _meant(stream_calls: list[Call]) -> list[tuple[Any, Any, Any]]:
    return [(call.id, call.name, json.loads(call.arguments)) for call in stream_calls]


@st.composite
def cumulative(draw: st.DrawFn, stream_calls: list[Call]) -> list[Record]:
    """Each call's arguments as restatements: ever longer prefixes, the last one whole."""
    fragments: list[dict[str, Any]] = []
    for call in stream_calls:
        text = call.arguments
        fragments.append(header(call, ""))
        points = draw(st.sets(st.integers(1, len(text) - 1), min_size=2, max_size=5))
        for end in [*sorted(points), len(text)]:
            if call.index is None:
                fragments.append(frag(args=text[:end]))
            else:
                fragments.append(frag(call.index, args=text[:end]))
    return group(draw, fragments)


@st.composite
def resent(draw: st.DrawFn, stream_calls: list[Call]) -> list[Record]:
    """Each call cut into pieces, then sent once more whole, with its id and name."""
    fragments: list[dict[str, Any]] = []
    for call in stream_calls:
        fragments.append(header(call, ""))
        for piece in cut(draw, call.arguments):
            fragments.append(frag(call.index if call.index is not None else None, args=piece))
        fragments.append(header(call, call.arguments))
    return group(draw, fragments)


@st.composite
def any_cutting(draw: st.DrawFn, stream_calls: list[Call]) -> list[Record]:
    """The same calls in one of the wire's shapes: plain, bare, restated or resent pieces."""
    shape = draw(st.sampled_from(["split", "cumulative", "resent"]))
    if shape == "cumulative" and all(len(call.arguments) >= 3 for call in stream_calls):
        return draw(cumulative(stream_calls))
    if shape == "resent":
        return draw(resent(stream_calls))
    return draw(any_split(stream_calls, True))


@SOME
@given(calls().flatmap(lambda found: st.tuples(st.just(found), any_cutting(found),
                                               any_cutting(found))))  # fmt: skip
def test_cutting_the_same_calls_into_other_pieces_never_changes_the_intended_reading(
    case: Any,
) -> None:
    stream_calls, first, second = case
    assert _intended(first) == _intended(second) == _meant(stream_calls)


def test_cumulative_arguments_mean_the_last_restatement_and_a_resend_is_dropped() -> None:
    cumulative_stream = sse(
        chunk(frag(0, "call_1", "get_weather", "")),
        *(chunk(frag(0, args='{"city": "Paris"}'[:end])) for end in (3, 9, 14, 17)),
        chunk(finish="tool_calls"),
    )
    contract = read_contract(read(cumulative_stream).records)
    assert contract.intended is not None
    assert contract.intended.calls[0].arguments == '{"city": "Paris"}'
    assert contract.intended.repairs == (
        "cumulative-arguments on block 0: kept the last restatement (step 4)",
    )
    resend = sse(
        chunk(frag(0, "call_1", "get_weather", '{"city":')),
        chunk(frag(0, args=' "Paris"}')),
        chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
        chunk(finish="tool_calls"),
    )
    contract = read_contract(read(resend).records)
    assert contract.intended is not None
    assert [c.arguments for c in contract.intended.calls] == ['{"city": "Paris"}']
    assert contract.intended.repairs == (
        "arguments-resent on block 0: dropped the piece that resends the arguments (step 2)",
    )
    assert {"arguments-resent", "repeated-id", "repeated-name"} == contract.codes


def test_a_resend_that_differs_leaves_no_intended_reading() -> None:
    text = sse(
        chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
        chunk(frag(0, "call_1", "get_weather", '{"city": "Paris", "unit": "C"}')),
        chunk(finish="tool_calls"),
    )
    contract = read_contract(read(text).records)
    assert contract.intended is None
    assert contract.why is not None and "does not say whether it replaces" in contract.why


# -- Linear in the stream --------------------------------------------------------------------


def _plain(n: int) -> str:
    pieces = (chunk(frag(0, args='"ab", ')) for _ in range(n))
    return sse(chunk(frag(0, "call_1", "f", '{"k": [')), *pieces, chunk(frag(0, args='"z"]}')),
               chunk(finish="tool_calls"))  # fmt: skip


def _bare_parallel(n: int) -> list[Record]:
    """n calls open at once, then bare pieces: every continuation weighs the open calls."""
    headers = [chunk(frag(k, f"call_{k}", "f", "")) for k in range(n)]
    bare = [chunk(frag(args="{" if k == 0 else '"a": 1, ')) for k in range(n)]
    return records([*headers, *bare, chunk(finish="tool_calls")])


def _restated(n: int) -> list[Record]:
    """n calls on one index, each a header and its arguments: split by their headers."""
    values = []
    for k in range(n):
        values.append(chunk(frag(0, f"call_{k}", "f", "")))
        values.append(chunk(frag(0, args=f'{{"k": {k}}}')))
    values.append(chunk(finish="tool_calls"))
    return records(values)


def test_reading_the_contract_is_linear_in_the_stream() -> None:
    small, large = read(_plain(500)).records, read(_plain(4000)).records
    assert_linear("plain pieces", lambda: read_contract(small), lambda: read_contract(large))
    small_b, large_b = _bare_parallel(300), _bare_parallel(2400)
    assert_linear("bare continuations among open calls",
                  lambda: read_contract(small_b), lambda: read_contract(large_b))  # fmt: skip
    small_r, large_r = _restated(300), _restated(2400)
    assert_linear("calls sharing an index",
                  lambda: read_contract(small_r), lambda: read_contract(large_r))  # fmt: skip


def test_the_linear_inputs_are_what_they_claim() -> None:
    assert read_contract(read(_plain(10)).records).codes == set()
    bare = read_contract(_bare_parallel(5))
    assert bare.intended is None and {"bare-continuation"} <= bare.codes
    shared = read_contract(_restated(5))
    assert shared.intended is not None and len(shared.intended.calls) == 5
    assert list(itertools.islice((c.id for c in shared.intended.calls), 2)) == [
        "call_0", "call_1",
    ]  # fmt: skip
