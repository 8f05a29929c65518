"""The trace: what the assembler did at every step, and the state of every block at any step.

Steps, fragments, events and anomalies are frozen. Blocks are kept as append-only histories
(argument pieces with the step that appended each, id and name changes, `toolcall_start`
steps), so the state as of step N is found by bisecting each history, never by replaying
the stream or storing a snapshot per step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from webapp.core.anomalies import Severity, severity_of
from webapp.core.delivery import Delivery, deliver
from webapp.core.jsvalue import truthy
from webapp.core.rules import Policy, RuleName
from webapp.tuning import paused_gc

StepKind = Literal["chunk", "done", "invalid", "end"]
AssemblyPath = Literal["client", "server-tools"]
BlockKind = Literal["toolCall", "text", "thinking"]
SCHEMA = 1


@dataclass(frozen=True, slots=True)
class Event:
    """One stream event the assembler fired, as upstream's `AssistantMessageEventStream` has it."""

    type: str
    contentIndex: int | None = None  # the name upstream and the schema use
    delta: str | None = None
    reason: str | None = None
    """`done`/`error`: the stop reason (`stop`, `length`, `toolUse`, `error`)."""
    message: str | None = None
    """`error`: why."""
    content: str | None = None
    """`*_end`: the block's final text or arguments."""

    def to_json(self) -> dict[str, Any]:
        """The event as schema-1 JSON, without the fields it does not use."""
        out: dict[str, Any] = {"type": self.type}
        if self.contentIndex is not None:
            out["contentIndex"] = self.contentIndex
        if self.delta is not None:
            out["delta"] = self.delta
        if self.reason is not None:
            out["reason"] = self.reason
        if self.message is not None:
            out["message"] = self.message
        if self.content is not None:
            out["content"] = self.content
        return out


@dataclass(frozen=True, slots=True)
class Fragment:
    """One entry of `delta.tool_calls` and how it was resolved."""

    position: int
    """Its place in `delta.tool_calls` (0-based)."""
    index: Any
    """`index` as read (any JSON value; None when absent): it counts only when a number."""
    id: Any
    """`id` as read: it counts only when truthy (`""` and null are no id)."""
    name: Any
    """`function.name` (or `custom.name`) as read: it counts only when truthy."""
    arguments: Any
    """`function.arguments` (or `custom.input`) as read; absent or null lands as ""."""
    rule: RuleName
    """The rule that resolved it (`webapp.core.rules.RULES`)."""
    block: int | None
    """The block (or candidate) it landed on, by opening order; None when dropped."""
    reason: str
    """Why that rule fired, in words."""
    appended: str
    """The text appended to the block ("" when dropped or when arguments were empty)."""
    late: bool = False
    """Server-tools path: its index or id names a folded candidate."""
    oddities: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The fragment as schema-1 JSON."""
        out = {
            "position": self.position,
            "index": self.index,
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "rule": self.rule,
            "block": self.block,
            "reason": self.reason,
        }
        if self.late:
            out["late"] = True
        if self.oddities:
            out["oddities"] = list(self.oddities)
        return out


@dataclass(frozen=True, slots=True)
class Step:
    """What one record did: its fragments, the events it fired, and what a person should know."""

    step: int
    line: int | None
    kind: StepKind
    fragments: tuple[Fragment, ...] = ()
    events: tuple[Event, ...] = ()
    error: str | None = None
    """Kind "invalid": what is wrong with the record, in words."""
    note: str | None = None
    """Why nothing happened, or something else worth saying (a skipped record, a stop reason)."""
    assembled: bool = True
    """False for records after `[DONE]` or after a provider error: listed, not assembled."""
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The step as schema-1 JSON."""
        out: dict[str, Any] = {
            "step": self.step,
            "line": self.line,
            "kind": self.kind,
            "fragments": [fragment.to_json() for fragment in self.fragments],
            "events": [event.to_json() for event in self.events],
        }
        if self.error is not None:
            out["error"] = self.error
        if self.note is not None:
            out["note"] = self.note
        if not self.assembled:
            out["assembled"] = False
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        return out


@dataclass(frozen=True, slots=True)
class Anomaly:
    """Something a person triaging the stream should look at."""

    code: str
    step: int
    block: int | None
    message: str

    @property
    def severity(self) -> Severity:
        """`error` or `warning`, from the table in `webapp.core.anomalies`."""
        return severity_of(self.code)

    def to_json(self) -> dict[str, Any]:
        """The anomaly as schema-1 JSON, with its severity (spec section 7)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "step": self.step,
            "block": self.block,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Fold:
    """Server-tools path: when a candidate folded, and into what."""

    step: int
    as_: Literal["server", "client"]

    def to_json(self) -> dict[str, Any]:
        """The fold as schema-1 JSON."""
        return {"step": self.step, "as": self.as_}


@dataclass(slots=True, eq=False)
class Block:
    """A content block's history: written by the assembler while it runs, read-only after."""

    kind: BlockKind
    number: int | None
    """Tool-call blocks and candidates: their number in opening order."""
    opened_step: int
    content_index: int | None = None
    content_step: int | None = None
    """The step at which it joined the content array (on the server path: when it folded)."""
    pieces: list[str] = field(default_factory=list)
    piece_steps: list[int] = field(default_factory=list)
    ids: list[tuple[int, Any]] = field(default_factory=list)
    """(step, id) each time the block's own id was set."""
    names: list[tuple[int, Any]] = field(default_factory=list)
    aliases: list[tuple[int, Any]] = field(default_factory=list)
    """(step, id) each time an id was registered for the block."""
    indexes: list[tuple[int, Any]] = field(default_factory=list)
    start_steps: list[int] = field(default_factory=list)
    fold: Fold | None = None
    custom_input: list[str] | None = None
    """Freeform (`custom`) tool calls: the input pieces, which upstream hands the tool as
    `{"input": ...}` whatever JSON text came before; None for a JSON function call."""

    @property
    def is_phantom(self) -> bool:
        """A tool call whose name is still empty: what exact-key makes of a continuation.

        A server-tool call is never a phantom (a candidate that folded as one had a name).
        Read on a finished trace it answers "at the end", which is how anomalies use it.
        """
        if self.kind != "toolCall" or (self.fold is not None and self.fold.as_ == "server"):
            return False
        return not truthy(self.name)

    @property
    def folded_step(self) -> int | None:
        """The step at which the candidate folded, or None."""
        return None if self.fold is None else self.fold.step

    @property
    def id(self) -> Any:
        """The block's own id now ("" until one is set)."""
        return self.ids[-1][1] if self.ids else ""

    @property
    def name(self) -> Any:
        """The block's name now ("" until one is set)."""
        return self.names[-1][1] if self.names else ""

    @property
    def text(self) -> str:
        """All the text appended so far, joined on demand."""
        return "".join(self.pieces)

    @property
    def delivered(self) -> Delivery:
        """What upstream's client would hand the tool for the text so far (parsed on demand)."""
        if self.custom_input is not None:
            return Delivery({"input": "".join(self.custom_input)})
        return deliver(self.text)

    def append(self, step: int, piece: str) -> None:
        """Record text appended at `step`."""
        self.pieces.append(piece)
        self.piece_steps.append(step)

    def state_at(self, step: int) -> BlockState | None:
        """The block as of the end of `step`, or None when it did not exist yet."""
        if self.opened_step > step:
            return None
        count = bisect_right(self.piece_steps, step)
        first_now = bisect_right(self.piece_steps, step - 1)
        return BlockState(
            kind=self.kind,
            number=self.number,
            content_index=self.content_index
            if self.content_step is not None and self.content_step <= step
            else None,
            id=value_as_of(self.ids, step),
            name=value_as_of(self.names, step),
            text="".join(self.pieces[:count]),
            appended="".join(self.pieces[first_now:count]),
            starts=bisect_right(self.start_steps, step),
            fold=self.fold if self.fold is not None and self.fold.step <= step else None,
            indexes=tuple(value for at, value in self.indexes if at <= step),
            aliases=tuple(value for at, value in self.aliases if at <= step),
            opened_step=self.opened_step,
        )


def value_as_of(history: list[tuple[int, Any]], step: int, default: Any = "") -> Any:
    """The latest value a (step, value) history held as of `step`, else `default`."""
    value = default
    for at, item in history:
        if at > step:
            break
        value = item
    return value


@dataclass(frozen=True, slots=True)
class BlockState:
    """One block as of a given step, for the state panel."""

    kind: BlockKind
    number: int | None
    content_index: int | None
    id: Any
    name: Any
    text: str
    """Arguments so far (tool calls) or text so far (text and thinking blocks)."""
    appended: str
    """What this step appended."""
    starts: int
    fold: Fold | None
    indexes: tuple[Any, ...]
    aliases: tuple[Any, ...]
    opened_step: int

    @property
    def pending(self) -> bool:
        """Server-tools path: still a candidate (not folded yet)."""
        return self.fold is None


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything the assembler did to one stream under one policy and path."""

    policy: Policy
    path: AssemblyPath
    server_tools: tuple[str, ...]
    choice: int
    steps: tuple[Step, ...]
    blocks: tuple[Block, ...]
    """Tool-call blocks (client path) or candidates (server-tools path), in opening order."""
    content: tuple[Block, ...]
    """Every block in the content array (text, thinking, tool calls), in content order."""
    anomalies: tuple[Anomaly, ...]
    rule_counts: Counter[str]
    stop_reason: str | None

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
        return {
            "schema": SCHEMA,
            "policy": self.policy,
            "path": self.path,
            "server_tools": list(self.server_tools),
            "choice": self.choice,
            "steps": [step.to_json() for step in self.steps],
            "blocks": [_block_json(block) for block in self.blocks],
            "content": [
                {"contentIndex": block.content_index, "type": block.kind, "block": block.number}
                for block in self.content
            ],
            "anomalies": [anomaly.to_json() for anomaly in self.anomalies],
            "summary": {
                "steps": len(self.steps),
                "fragments": self.fragment_count,
                "blocks": len(self.blocks),
                "rules": {name: self.rule_counts[name] for name in sorted(self.rule_counts)},
                "anomalies": dict(sorted(Counter(a.code for a in self.anomalies).items())),
                "stop_reason": self.stop_reason,
            },
        }


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
