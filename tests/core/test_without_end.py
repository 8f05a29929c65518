"""A trace of a stream whose end was not recorded (a capture cut): nothing judged on how the
stream ends is reported, and the trace says what was left out (issue 31)."""

from __future__ import annotations

import json

import pytest

from tests.streamkit import chunk, frag, sse
from webapp.core.assembler import assemble
from webapp.core.contract import QUIRKS, contract_from_json
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.rules import Policy
from webapp.core.trace import Trace

CUT = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(0, args='{"city": "Par')),
    done=False,
)
"""A call cut mid-arguments, no finish_reason, no [DONE]: how a capture cut short ends."""

PROVEN = sse(
    chunk(frag(id="", name="get_weather", args='{"city": "Paris"}')),  # no index, an empty id
    chunk(frag(args="")),
    done=False,
)
"""Quirks the bytes prove whatever follows them: a missing index, an empty id."""


def trace_of(text: str, policy: Policy = "adr-0019") -> Trace:
    return assemble(read(text).records, Options(policy=policy))


@pytest.mark.parametrize("policy", ["adr-0019", "exact-key"])
def test_what_the_end_decides_is_withheld(policy: Policy) -> None:
    whole = trace_of(CUT, policy)
    end = len(whole.columns) - 1
    assert whole.contract is not None
    judged_at_end = {a.code for a in whole.anomalies if a.step == end}
    assert {"missing-finish-reason", "incomplete-arguments"} <= judged_at_end
    assert {"no-finish", "arguments-not-json"} <= whole.contract.codes

    cut = whole.without_end("cut by the client")
    assert cut.contract is not None
    assert not any(a.step == end for a in cut.anomalies)
    assert not cut.contract.codes & {q.code for q in QUIRKS if q.at_end}
    assert cut.contract.end == "cut by the client"
    assert set(cut.contract.withheld) == judged_at_end | {"no-finish", "arguments-not-json"}
    assert cut.contract.intended is None and "not recorded" in (cut.contract.why or "")
    assert cut.columns is whole.columns and cut.blocks == whole.blocks  # the steps stay
    assert cut.without_end("cut by the upstream") is cut  # said once


def test_quirks_the_bytes_prove_stay() -> None:
    whole = trace_of(PROVEN)
    assert whole.contract is not None and {"missing-index", "empty-id"} <= whole.contract.codes
    cut = whole.without_end("cut by the upstream")
    assert cut.contract is not None and {"missing-index", "empty-id"} <= cut.contract.codes


def test_the_document_says_the_end_is_missing_and_reads_back() -> None:
    cut = trace_of(CUT).without_end("cut: the server stopped")
    document = json.loads(json.dumps(cut.to_json()))
    assert document["end"]["recorded"] is False
    assert document["end"]["why"] == "cut: the server stopped"
    assert "missing-finish-reason" in document["end"]["withheld"]
    assert not any(a["code"] == "missing-finish-reason" for a in document["anomalies"])
    back = contract_from_json(document)
    assert cut.contract is not None
    assert (back.end, back.withheld) == (cut.contract.end, cut.contract.withheld)


def test_a_whole_stream_says_nothing_of_an_end() -> None:
    assert "end" not in trace_of(sse(chunk(finish="stop"))).to_json()
