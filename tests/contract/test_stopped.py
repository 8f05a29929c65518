"""A call cut where the finish_reason says the generation stopped (`length`: the token limit;
`content_filter`: the provider's filter) is no quirk of the provider's: the finish_reason says
what cut it. Before, such a stream was judged `arguments-not-json` and filed with the provider,
whose only part in it was stopping where the request's max_tokens told it to."""

from __future__ import annotations

import pytest

from tests.streamkit import chunk, frag, sse
from webapp.core.contract import Contract, read_contract
from webapp.core.readers import read
from webapp.triage.verdict import judge

CUT = '{"path": "a.txt", "content": "hello wor'


def _contract(*chunks: str) -> Contract:
    return read_contract(read(sse(*chunks), "sse").records)


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("length", "the generation stopped at its token limit"),
        ("content_filter", "the provider's content filter stopped the generation"),
    ],
)
def test_a_call_cut_where_the_generation_stopped_is_no_quirk(reason: str, said: str) -> None:
    contract = _contract(
        chunk(frag(0, "call_1", "write_file", "")), chunk(frag(0, args=CUT)), chunk(finish=reason)
    )
    assert not contract.quirks
    assert contract.intended is None
    stopped = contract.stopped
    assert stopped is not None
    assert stopped.startswith(f'{said} (finish_reason "{reason}") in block #0 write_file\'s')
    assert contract.why == stopped and contract.no_reading == "no whole reading"
    verdict = judge(contract, ())
    assert not verdict.parties and verdict.unfiled == f"Nothing to file: {stopped}."
    assert verdict.headline.startswith("Nobody broke the contract: " + said)
    assert contract.to_json()["stopped"] == stopped


def test_what_the_stop_does_not_explain_is_still_a_quirk() -> None:
    # arguments that are no JSON value's start are not cut by a stop
    broken = _contract(
        chunk(frag(0, "call_1", "f", "")), chunk(frag(0, args='{"a": 1}}')), chunk(finish="length")
    )
    assert broken.codes == {"arguments-not-json"}
    assert broken.stopped is None
    # an earlier call's arguments cut short: the stop came in the last call, not in that one
    earlier = _contract(
        chunk(frag(0, "call_1", "f", '{"a": ')),
        chunk(frag(1, "call_2", "g", "")),
        chunk(frag(1, args='{"b": ')),
        chunk(finish="length"),
    )
    assert earlier.codes == {"arguments-not-json"}
    assert [found.blocks for found in earlier.quirks] == [(0,)]
    assert earlier.stopped is not None and "block #1" in earlier.stopped
    verdict = judge(earlier, ())
    assert [party.kind for party in verdict.parties] == ["provider"]  # its quirk is still filed
    # another finish_reason says nothing of what cut the call: the provider's quirk
    other = _contract(
        chunk(frag(0, "call_1", "f", "")), chunk(frag(0, args=CUT)), chunk(finish="tool_calls")
    )
    assert other.codes == {"arguments-not-json"} and other.stopped is None


def test_a_whole_call_before_the_limit_is_read_as_it_means() -> None:
    whole = _contract(chunk(frag(0, "call_1", "f", '{"a": 1}')), chunk(finish="length"))
    assert whole.stopped is None and whole.intended is not None


def test_a_client_that_flags_nothing_is_said_to() -> None:
    """With no intended reading the clients are "guessed"; one that hands the calls and flags
    none is said to, the generation having stopped inside the last call."""
    from webapp.lenses.results import Call as LensCall
    from webapp.lenses.results import LensResult

    contract = _contract(
        chunk(frag(0, "call_1", "write_file", "")), chunk(frag(0, args=CUT)), chunk(finish="length")
    )
    handed = (LensCall("call_1", "write_file", CUT + '"}'),)
    column = LensResult("langchain", "1.0", "ok", calls=handed)
    (graded,) = judge(contract, (column,)).grades
    assert graded.grade == "guessed"
    assert graded.detail.endswith(
        "flagging none, though the generation stopped inside the last call"
    )
