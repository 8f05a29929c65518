"""The trace: what the assembler did at every step, and the state of every block at any step.

The steps are columns (`webapp.core.columns.Columns`); `Trace.steps` builds each `Step` (with its
`Fragment`s and `Event`s) when it is asked for. Blocks are append-only histories
(`webapp.core.blocks`), so the state as of step N is found by bisecting each history, never by
replaying the stream or storing a snapshot per step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from webapp.core.blocks import Block, BlockKind, BlockState, Fold, value_as_of
from webapp.core.columns import CHUNK, Columns, Steps
from webapp.core.rules import Policy
from webapp.core.steps import Anomaly, Event, Fragment, Step, StepKind
from webapp.core.tracejson import document_parts, steps_json
from webapp.tuning import paused_gc

__all__ = [
    "SCHEMA",
    "Anomaly",
    "AssemblyPath",
    "Block",
    "BlockKind",
    "BlockState",
    "Event",
    "Fold",
    "Fragment",
    "Step",
    "StepKind",
    "Trace",
    "value_as_of",
]

AssemblyPath = Literal["client", "server-tools"]
SCHEMA = 1


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything the assembler did to one stream under one policy and path."""

    policy: Policy
    path: AssemblyPath
    server_tools: tuple[str, ...]
    choice: int
    columns: Columns
    """Every step, fragment and event, as rows."""
    blocks: tuple[Block, ...]
    """Tool-call blocks (client path) or candidates (server-tools path), in opening order."""
    content: tuple[Block, ...]
    """Every block in the content array (text, thinking, tool calls), in content order."""
    anomalies: tuple[Anomaly, ...]
    rule_counts: Counter[str]
    stop_reason: str | None
    orjson_values: bool = False
    """Every chunk's value came from orjson (the plain lane): then none holds a lone surrogate
    or an integer beyond 64 bits, so orjson writes the whole document and it can be streamed
    (`webapp.core.tracejson.trace_document_stream`) without the fallback ever being needed."""

    @property
    def steps(self) -> Steps:
        """Every step in order, each built from the columns when it is asked for."""
        return Steps(self.columns, self.blocks, self.content)

    def anomalies_by_step(self) -> dict[int, tuple[Anomaly, ...]]:
        """The anomalies reported at each step, in report order (steps without any are absent)."""
        by_step: dict[int, list[Anomaly]] = {}
        for anomaly in self.anomalies:
            by_step.setdefault(anomaly.step, []).append(anomaly)
        return {step: tuple(found) for step, found in by_step.items()}

    @property
    def fragment_count(self) -> int:
        """How many tool-call fragments the stream held (assembled ones)."""
        return sum(self.rule_counts.values())

    @property
    def chunk_count(self) -> int:
        """How many records were chunks (parsed JSON), assembled or not."""
        return self.columns.step_kind.count(CHUNK)

    def state_at(self, step: int) -> tuple[BlockState, ...]:
        """Every block that existed as of the end of `step`: content first, then candidates."""
        states: list[BlockState] = []
        seen: set[int] = set()
        for block in (*self.content, *self.blocks):
            if id(block) in seen:
                continue
            seen.add(id(block))
            state = block.state_at(step)
            if state is not None:
                states.append(state)
        return tuple(states)

    def to_json(self) -> dict[str, Any]:
        """The whole trace as schema-1 JSON, what `streamviz trace --format json` prints."""
        with paused_gc():
            return self._json()

    def _json(self) -> dict[str, Any]:
        steps = list(steps_json(self.columns, self.blocks, self.content))
        return {**self._head(), "steps": steps, **self._tail()}

    def json_parts(self, extra: dict[str, Any]) -> Iterator[bytes]:
        """`{**self.to_json(), **extra}` as compact JSON bytes, written a batch of steps at a
        time (`webapp.core.tracejson.document_parts`); raises `TypeError` where orjson would."""
        with paused_gc():
            head, tail = self._head(), {**self._tail(), **extra}
            yield from document_parts(head, self.columns, self.blocks, self.content, tail)

    def _head(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "policy": self.policy,
            "path": self.path,
            "server_tools": list(self.server_tools),
            "choice": self.choice,
        }

    def _tail(self) -> dict[str, Any]:
        return {
            "blocks": [_block_json(block) for block in self.blocks],
            "content": [
                {"contentIndex": block.content_index, "type": block.kind, "block": block.number}
                for block in self.content
            ],
            "anomalies": [anomaly.to_json() for anomaly in self.anomalies],
            "summary": self.summary_json(),
        }

    def summary_json(self) -> dict[str, Any]:
        """The document's "summary": counts of steps, fragments, blocks, rules and anomalies."""
        return {
            "steps": len(self.columns),
            "fragments": self.fragment_count,
            "blocks": len(self.blocks),
            "rules": {name: self.rule_counts[name] for name in sorted(self.rule_counts)},
            "anomalies": dict(sorted(Counter(a.code for a in self.anomalies).items())),
            "stop_reason": self.stop_reason,
        }

    def line_of(self, step: int) -> int | None:
        """The input line of step `step` (None for the end step or a step out of range)."""
        return self.columns.line(step) if 0 <= step < len(self.columns) else None

    def steps_by_rule(self) -> dict[str, list[int]]:
        """For each rule, the steps with a fragment it resolved, in order (from the columns)."""
        return self.columns.steps_by_rule()


def _block_json(block: Block) -> dict[str, Any]:
    delivered = block.delivered
    return {
        "block": block.number,
        "contentIndex": block.content_index,
        "id": block.id,
        "name": block.name,
        "arguments": block.text,
        "starts": len(block.start_steps),
        "folded": None if block.fold is None else block.fold.to_json(),
        "opened_step": block.opened_step,
        "indexes": [value for _, value in block.indexes],
        "ids": [value for _, value in block.aliases],
        "delivered": delivered.arguments,
        "delivered_error": delivered.error,
    }
