"""The quirk table: a stream for each code shows that code, every row is whole, and each quirk
is reported once per call (or stream) with its steps and the adr-0019 client path's blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.contract.streams import ALSO, MEANS, QUIRK_STREAMS
from tests.streamkit import chunk, frag, records, sse
from webapp.core.assembler import assemble
from webapp.core.contract import CODES, QUIRK, QUIRKS, read_contract
from webapp.core.contract.quirks import CLAUSES, ENTRY_TESTS, HARMS
from webapp.core.contract.wire import read_wire
from webapp.core.options import Options
from webapp.core.readers import read

SPEC_CODES = {
    "missing-index", "bare-continuation", "shared-index", "empty-id", "repeated-id",
    "repeated-name", "cumulative-arguments", "arguments-resent", "after-complete",
    "call-after-finish", "repeated-finish", "no-finish", "stop-with-calls",
    "index-not-from-zero", "no-choices-chunk", "non-string-arguments",
}  # fmt: skip
"""verdict.md section 2, "at least"."""


def contract_of(text: str) -> Any:
    return read_contract(read(text, "sse").records)


def test_the_table_holds_every_code_of_the_spec_and_a_stream_for_each() -> None:
    assert set(CODES) >= SPEC_CODES
    assert set(QUIRK_STREAMS) == set(CODES) == set(MEANS)


@pytest.mark.parametrize("quirk", QUIRKS, ids=lambda quirk: quirk.code)
def test_every_row_is_whole(quirk: Any) -> None:
    assert quirk.meaning and quirk.typically and quirk.says
    assert quirk.clause in CLAUSES
    assert quirk.harm in HARMS
    assert quirk.scope in ("call", "stream")
    assert quirk.entry is not None or quirk.whole is not None
    assert quirk.entry is None or quirk.shows, "an entry test says what its entries do"
    assert quirk.seen, "where it was seen, publicly"
    for seen in quirk.seen:
        assert seen.by
        assert seen.url is None or seen.url.startswith("https://github.com/")
        assert (seen.thread is None) == (seen.url is None)


@pytest.mark.parametrize("code", sorted(QUIRK_STREAMS))
def test_each_stream_shows_its_quirk_and_means_its_calls(code: str) -> None:
    contract = contract_of(QUIRK_STREAMS[code])
    assert contract.codes == {code} | ALSO.get(code, set())
    wanted = MEANS[code]
    if wanted is None:
        assert contract.intended is None
        assert contract.why
        return
    assert contract.intended is not None, contract.why
    calls = [call.to_json() for call in contract.intended.calls]
    assert [(c["id"], c["name"]) for c in calls] == [(w["id"], w["name"]) for w in wanted]
    for got, want in zip(calls, wanted, strict=True):
        assert _value(got["arguments"]) == _value(want["arguments"])


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_a_quirk_is_reported_once_per_call_with_its_steps_and_blocks() -> None:
    text = sse(
        chunk(frag(0, "call_1", "get_weather", ""), frag(1, "call_2", "get_time", "")),
        chunk(frag(0, "call_1", args='{"city":')),
        chunk(frag(1, "call_2", args='{"tz":')),
        chunk(frag(0, "call_1", args=' "Paris"}')),
        chunk(frag(1, "call_2", args=' "CET"}')),
        chunk(finish="tool_calls"),
    )
    found = [item.to_json() for item in contract_of(text).quirks]
    assert [(q["code"], q["steps"], q["blocks"], q["count"]) for q in found] == [
        ("repeated-id", [1, 3], [0], 2),
        ("repeated-id", [2, 4], [1], 2),
    ]
    assert set(found[0]) == {"code", "steps", "blocks", "count", "message", "harm", "seen"}
    assert found[0]["harm"] == "silent"
    assert found[0]["seen"][0]["url"].startswith("https://github.com/")


def test_a_stream_wide_quirk_is_reported_once() -> None:
    text = sse(
        chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
        chunk(finish="tool_calls"),
        chunk(finish="tool_calls"),
        chunk(finish="tool_calls"),
    )
    (found,) = contract_of(text).quirks
    assert (found.code, found.steps, found.blocks, found.count) == (
        "repeated-finish", (1, 2, 3), (), 3,
    )  # fmt: skip


def test_blocks_are_numbered_as_the_adr_0019_client_path_numbers_them() -> None:
    """A bare piece before any call is dropped (no block), a nameless header with an id opens
    one: the wire's blocks are the trace's, step for step, and the quirks name them."""
    values = [
        chunk(frag(args='{"x": 1}')),
        chunk(frag(id="call_a", args="")),
        chunk(frag(id="call_a", name="lookup")),
        chunk(frag(args='{"q": "a"}')),
        chunk(frag(0, "call_b", "get_time", "{}")),
        chunk(finish="tool_calls"),
    ]
    wire = read_wire(records(values), 0, ENTRY_TESTS)
    trace = assemble(records(values), Options("adr-0019", "client"))
    assert len(trace.blocks) == 2
    assert [(b.number, b.opened, b.id, b.name) for b in wire.blocks] == [
        (b.number, b.opened_step, b.id or None, b.name or None) for b in trace.blocks
    ]
    found = [(q.code, q.blocks, q.steps) for q in read_contract(records(values)).quirks]
    assert found == [
        ("missing-index", (), (0,)),  # the dropped piece landed on no block: reported apart
        ("headerless-entry", (), (0,)),
        ("missing-index", (0,), (1, 2, 3)),
        ("repeated-id", (0,), (2,)),
        ("bare-continuation", (0,), (3,)),
    ]


def test_empty_ids_do_harm_only_when_the_call_never_gets_one() -> None:
    named = contract_of(QUIRK_STREAMS["empty-id"]).quirks
    nameless = contract_of(sse(
        chunk(frag(0, "", "get_weather", "")),
        chunk(frag(0, "", args='{"city": "Paris"}')),
        chunk(finish="tool_calls"),
    )).quirks  # fmt: skip
    assert [q.harm for q in named] == ["none"]
    assert [q.harm for q in nameless] == ["silent"]
    assert "LiteLLM drops such a call" in nameless[0].message


def test_late_whitespace_is_a_harmless_after_complete() -> None:
    text = sse(
        chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')),
        chunk(frag(0, args="\n ")),
        chunk(finish="tool_calls"),
    )
    contract = contract_of(text)
    (found,) = contract.quirks
    assert (found.code, found.harm, found.steps) == ("after-complete", "none", (1,))
    assert contract.intended is not None and contract.intended.repairs == ()
    assert contract.intended.calls[0].arguments == '{"city": "Paris"}'


def test_records_after_done_and_after_a_provider_error_are_not_read() -> None:
    after_done = sse(chunk(frag(0, "call_1", "f", "{}")), chunk(finish="tool_calls")) + sse(
        chunk(frag(0, "call_1", "f", "{}")), chunk(finish="stop")
    )
    assert contract_of(after_done).codes == set()
    error = sse(chunk(frag(0, "call_1", "f", "{}")), {"error": {"message": "overloaded"}},
                chunk(finish="tool_calls"), done=False)  # fmt: skip
    found = contract_of(error)
    assert found.codes == {"no-finish"}
    assert "before a provider error" in found.quirks[0].message


def test_a_code_name_in_the_table_is_unique_and_entry_tests_follow_the_table() -> None:
    assert len(CODES) == len(set(CODES))
    assert [code for code, _ in ENTRY_TESTS] == [q.code for q in QUIRKS if q.entry is not None]
    assert QUIRK["stop-with-calls"].harm == "none"
    assert "tool_choice names a function" in QUIRK["stop-with-calls"].typically
    assert "April 2026" in QUIRK["repeated-finish"].typically
