"""The trace: what the assembler did at every step, and the state of every block at any step.

The steps are columns (`webapp.core.columns.Columns`); `Trace.steps` builds each `Step` (with its
`Fragment`s and `Event`s) when it is asked for. Blocks are append-only histories
(`webapp.core.blocks`), so the state as of step N is found by bisecting each history, never by
replaying the stream or storing a snapshot per step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from webapp.core.blocks import Block, BlockKind, BlockState, Fold, value_as_of
from webapp.core.columns import CHUNK, EVENT_TYPES, NONE, STEP_KINDS, Columns, Steps
from webapp.core.contract import Contract, unended
from webapp.core.rules import RULE_NAMES, Policy
from webapp.core.steps import Anomaly, Event, Fragment, Glance, Step, StepKind
from webapp.core.stepsjson import document_parts, steps_json
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
    contract: Contract | None = None
    """The stream's quirks and intended reading (`webapp.core.contract`), read from the records
    and the same under every policy and path; `assemble` sets it."""

    def as_recorded(self, end: str, *, recorded: bool) -> Trace:
        """This trace as far as its bytes hold the stream: without its end (`without_end`)
        when `webapp.core.contract.unended` says they stop before it, else the same."""
        why = unended(self.contract, end, recorded=recorded)
        return self.without_end(why) if why else self

    def without_end(self, why: str) -> Trace:
        """This trace of a stream whose end was not recorded (`why`: a capture cut, or still
        arriving): what is judged at the end step (no finish_reason, arguments never finished,
        a call never named) is not reported, and the contract says what was withheld
        (`Contract.without_end`). The same trace when it says so already."""
        if self.contract is None or self.contract.end is not None:
            return self
        end = len(self.columns) - 1
        at_end = {anomaly.code for anomaly in self.anomalies if anomaly.step == end}
        return replace(
            self,
            anomalies=tuple(anomaly for anomaly in self.anomalies if anomaly.step != end),
            contract=self.contract.without_end(why, at_end),
        )

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
        time (`webapp.core.stepsjson.document_parts`); raises `TypeError` where orjson would."""
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
            **({} if self.contract is None else self.contract.to_json()),
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

    def glance(self, step: int) -> Glance:
        """Step `step` as a timeline row shows it, without building its `Step` (`Glance`)."""
        return self.columns.glance(step, self.blocks)

    def line_of(self, step: int) -> int | None:
        """The input line of step `step` (None for the end step or a step out of range)."""
        return self.columns.line(step) if 0 <= step < len(self.columns) else None

    def steps_by_rule(self) -> dict[str, list[int]]:
        """For each rule, the steps with a fragment it resolved, in order (from the columns)."""
        return self.columns.steps_by_rule()

    # What the web asks of a trace, answered here so that no page reads the columns.

    def kind_of(self, step: int) -> StepKind:
        """The kind of step `step`: "chunk", "done", "invalid" or "end"."""
        return STEP_KINDS[self.columns.step_kind[step]]

    def finish_steps(self) -> list[int]:
        """The steps whose chunk carried a finish_reason, in order."""
        return sorted(step for step, reason in self.columns.finish_reasons.items() if reason)

    def fragments_in(self, first: int, stop: int) -> int:
        """How many fragments steps `first` to `stop` (exclusive) carry."""
        return self._fragment_row(stop) - self._fragment_row(first)

    def rules_in(self, first: int, stop: int) -> Counter[str]:
        """Fragments per rule in steps `first` to `stop` (exclusive); a rule without any is
        absent."""
        rules = self.columns.fragment_rule[self._fragment_row(first) : self._fragment_row(stop)]
        return Counter({RULE_NAMES[code]: n for code, n in Counter(rules).items()})

    def same_verdicts(self, other: Trace) -> bool:
        """Every fragment took the same rule onto the same block in both traces (so their
        steps are the same: two policies that agree on a stream)."""
        mine, theirs = self.columns, other.columns
        return (
            mine.fragment_rule == theirs.fragment_rule
            and mine.fragment_block == theirs.fragment_block
        )

    def is_phantom_block(self, number: int | None) -> bool:
        """Block `number` is a tool-call block whose name is still empty at the end (False for
        None, a dropped fragment's "block", or a number out of range)."""
        return (
            number is not None and 0 <= number < len(self.blocks) and self.blocks[number].is_phantom
        )

    def quiet_runs(
        self, minimum: int, breaks: Iterable[int]
    ) -> list[tuple[int, int, str, int | None]]:
        """The runs of at least `minimum` consecutive quiet steps alike, as (first step, last
        step, what, block: None when dropped or none); a step in `breaks` is in none
        (`Columns.quiet_runs`: the timeline folds each run into one row). `what` is the rule
        that took the steps' fragments, or "text" or "thinking" for steps that each carried
        one piece of a text or a thought and no fragment."""
        width = len(RULE_NAMES)
        return [
            (
                first,
                last,
                RULE_NAMES[what] if what < width else EVENT_TYPES[what - width][: -len("_delta")],
                None if block == NONE else block,
            )
            for first, last, what, block in self.columns.quiet_runs(minimum, breaks)
        ]

    def _fragment_row(self, step: int) -> int:
        """The first fragment row of `step`; the number of rows for the step past the last."""
        columns = self.columns
        return columns.step_fragment[step] if step < len(columns) else len(columns.fragment_rule)


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
