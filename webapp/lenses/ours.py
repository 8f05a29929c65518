"""Our own assembler's two policies as two more columns, in the lenses' terms."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import Policy
from webapp.core.trace import Trace
from webapp.lenses.results import Call, LensResult

VERSION = "this build"


def policy_result(records: Sequence[Record], policy: Policy) -> LensResult:
    """The tool calls a policy's trace ends with, each with what pi-ai's parse delivers.

    A call is flagged with the parse's complaint only when its `toolcall_end` fired: upstream
    parses there, and a stream cut short by a provider error never gets that far.
    """
    try:
        trace = assemble(records, Options(policy=policy), contract=False)
    except Exception as error:  # a core bug is shown in the column, not raised
        return LensResult(policy, VERSION, "error", (), f"the assembler failed: {error!r}")
    return trace_result(trace)


def trace_result(trace: Trace) -> LensResult:
    """`policy_result` of a trace already assembled (client path) under its policy."""
    errors = [
        event.message or "error"
        for step in trace.steps
        for event in step.events
        if event.type == "error"
    ]
    ended = {
        event.contentIndex
        for step in trace.steps
        for event in step.events
        if event.type == "toolcall_end"
    }
    calls = []
    for block in trace.content:
        if block.kind != "toolCall":
            continue
        delivered = block.delivered
        calls.append(
            Call(
                id=_text(block.id),
                name=_text(block.name),
                arguments=json.dumps(
                    delivered.arguments, separators=(",", ":"), ensure_ascii=False
                ),
                invalid=delivered.error if block.content_index in ended else None,
            )
        )
    said = "; ".join(errors) or None
    return LensResult(trace.policy, VERSION, "error" if said else "ok", tuple(calls), said)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
