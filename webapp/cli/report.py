"""The JSON documents of `check` and `compare` (the trace's own is `webapp.core.tracejson`'s).

They are written with `webapp.core.jsoncheck.dumps` (orjson, with a fallback for the lone
surrogates and integers beyond 64 bits that a JavaScript parser accepts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from webapp.core.records import ReadResult
from webapp.core.trace import SCHEMA, Step, Trace
from webapp.core.tracejson import input_json

if TYPE_CHECKING:
    from webapp.triage.compare import Comparison, Outcome


def check_document(trace: Trace, source: ReadResult) -> dict[str, Any]:
    """`streamviz check --format json`: the anomalies with their input lines, and the summary."""
    return {
        "schema": SCHEMA,
        "policy": trace.policy,
        "path": trace.path,
        "server_tools": list(trace.server_tools),
        "choice": trace.choice,
        "anomalies": [
            {**anomaly.to_json(), "line": _line(trace, anomaly.step)} for anomaly in trace.anomalies
        ],
        "summary": trace.summary_json(),
        **({} if trace.contract is None else trace.contract.to_json()),
        "input": input_json(source),
    }


def compare_document(comparison: Comparison, source: ReadResult) -> dict[str, Any]:
    """`streamviz compare --format json`: the summary, the differing steps, both sides' blocks."""
    left, right = comparison.left, comparison.right
    sides = {trace.policy: trace.to_json() for trace in (left, right)}
    return {
        "schema": SCHEMA,
        "left": left.policy,
        "right": right.policy,
        "path": left.path,
        "server_tools": list(left.server_tools),
        "choice": left.choice,
        "summary": comparison.summary,
        "outcomes": {
            outcome.policy: _outcome_json(outcome)
            for outcome in (comparison.left_outcome, comparison.right_outcome)
        },
        "differing": [
            {
                "step": row.step,
                "line": row.left.line,
                "rule_differs": row.rule_differs,
                "blocks_differ": row.blocks_differ,
                "left": _side_json(row.left),
                "right": _side_json(row.right),
            }
            for row in comparison.differing
        ],
        "blocks": {policy: side["blocks"] for policy, side in sides.items()},
        "anomalies": {policy: side["anomalies"] for policy, side in sides.items()},
        "summaries": {policy: side["summary"] for policy, side in sides.items()},
        "input": input_json(source),
    }


def _side_json(step: Step) -> dict[str, Any]:
    return {
        "fragments": [fragment.to_json() for fragment in step.fragments],
        "events": [event.to_json() for event in step.events],
    }


def _outcome_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "blocks": outcome.blocks,
        "phantoms": outcome.phantoms,
        "starts": outcome.starts,
        "calls": outcome.calls,
        "dropped": outcome.dropped,
        "text": outcome.describe(),
    }


def _line(trace: Trace, step: int) -> int | None:
    return trace.line_of(step)
