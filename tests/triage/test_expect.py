"""The first difference between two trace documents, and what is not a trace."""

from __future__ import annotations

import copy

from tests.streamkit import records
from tests.triage.streams import TWO_HEADERS
from webapp.core.assembler import assemble
from webapp.triage.expect import first_difference, not_a_trace


def _document() -> dict:
    return assemble(records(TWO_HEADERS)).to_json()


def test_equal_documents_have_no_difference_and_input_is_ignored() -> None:
    document = _document()
    other = copy.deepcopy(document)
    other["input"] = {"format": "json"}
    assert first_difference(document, other) is None
    assert not_a_trace(document) is None


def test_the_earliest_step_is_named() -> None:
    document = _document()
    other = copy.deepcopy(document)
    other["steps"][4]["note"] = "changed"
    other["steps"][2]["fragments"][0]["rule"] = "new"
    found = first_difference(document, other)
    assert found is not None
    assert found.step == 2
    assert (
        found.describe() == 'step 2: steps[2].fragments[0].rule: expected "continuation", got "new"'
    )


def test_missing_and_extra_items() -> None:
    document = _document()
    shorter = copy.deepcopy(document)
    del shorter["blocks"][1]
    found = first_difference(document, shorter)
    assert found is not None and found.path == "blocks[1]" and "(nothing)" in found.describe()
    extra = copy.deepcopy(document)
    extra["surprise"] = 1
    found = first_difference(document, extra)
    assert found is not None and found.path == "surprise"


def test_types_count_true_is_not_1() -> None:
    found = first_difference({"a": [1]}, {"a": [True]})
    assert found is not None and found.path == "a[0]"
