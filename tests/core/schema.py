"""A checker for schema-1 trace documents, and the anomaly codes the spec names."""

from __future__ import annotations

from typing import Any

from webapp.core.jsoncheck import dumps
from webapp.core.rules import POLICIES, RULE_NAMES

ANOMALY_CODES = frozenset(
    {
        "phantom-call",
        "invalid-arguments",
        "dropped-fragment",
        "name-conflict",
        "id-conflict",
        "invalid-chunk",
        "missing-finish-reason",
        "after-done",
        "other-choices",
        "provider-error",
        "late-fragment",
        "ambiguous-continuation",
        "incomplete-arguments",
        "non-object-arguments",
        "empty-arguments",
    }
)
"""The codes spec sections 6 and 7 name ("at least"); the tests compare only these."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_schema(doc: Any) -> None:
    """Assert that `doc` has every key spec section 6 fixes for schema 1, with the right types."""
    assert isinstance(doc, dict)
    assert doc["schema"] == 1
    assert doc["policy"] in POLICIES
    assert doc["path"] in ("client", "server-tools")
    steps, blocks, anomalies = doc["steps"], doc["blocks"], doc["anomalies"]
    assert isinstance(steps, list) and steps, "at least the end step"
    assert isinstance(blocks, list) and isinstance(anomalies, list)
    for number, step in enumerate(steps):
        assert step["step"] == number
        assert step["line"] is None or (_is_int(step["line"]) and step["line"] >= 1)
        assert step["kind"] in ("chunk", "done", "invalid", "end")
        assert (step["kind"] == "end") == (number == len(steps) - 1), "only the last is end"
        if step["kind"] == "invalid":
            assert isinstance(step["error"], str) and step["error"], "an invalid step says why"
        else:
            assert "error" not in step, "error belongs to invalid steps only"
        assert isinstance(step["fragments"], list)
        for position, fragment in enumerate(step["fragments"]):
            for key in ("index", "id", "name", "arguments"):
                assert key in fragment
            assert fragment["position"] == position
            assert fragment["rule"] in RULE_NAMES
            if fragment["rule"] == "drop":
                assert fragment["block"] is None
            else:
                assert _is_int(fragment["block"]) and 0 <= fragment["block"] < len(blocks)
        assert isinstance(step["events"], list)
        for event in step["events"]:
            assert isinstance(event["type"], str) and event["type"]
            if "contentIndex" in event:
                assert _is_int(event["contentIndex"]) and event["contentIndex"] >= 0
    assert steps[-1]["events"], "the end step fires done or error"
    assert steps[-1]["events"][-1]["type"] in ("done", "error")
    for number, block in enumerate(blocks):
        assert block["block"] == number
        assert block["contentIndex"] is None or _is_int(block["contentIndex"])
        assert "id" in block and "name" in block
        assert isinstance(block["arguments"], str)
        assert _is_int(block["starts"]) and block["starts"] >= 0
        folded = block["folded"]
        if doc["path"] == "client":
            assert folded is None
        if folded is not None:
            assert _is_int(folded["step"]) and 0 <= folded["step"] < len(steps)
            assert folded["as"] in ("server", "client")
    for anomaly in anomalies:
        assert isinstance(anomaly["code"], str) and anomaly["code"]
        assert _is_int(anomaly["step"]) and 0 <= anomaly["step"] < len(steps)
        assert anomaly["block"] is None or (
            _is_int(anomaly["block"]) and 0 <= anomaly["block"] < len(blocks)
        )
        assert isinstance(anomaly["message"], str) and anomaly["message"]
    dumps(doc)  # the one JSON writer the CLI and the API use
