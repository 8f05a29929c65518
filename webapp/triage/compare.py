"""Two policies on the same stream, aligned by step: where decision 0019 changes the outcome."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import Policy
from webapp.core.trace import Block, Step, Trace, value_as_of
from webapp.core.words import count
from webapp.tuning import paused_gc


@dataclass(frozen=True, slots=True)
class Outcome:
    """One policy's result in numbers, for the summary line."""

    policy: Policy
    blocks: int
    phantoms: int
    starts: int
    calls: int
    """Blocks that end with a name: the calls a client would run."""
    dropped: int

    def describe(self) -> str:
        """E.g. "exact-key: 3 blocks, 2 phantom calls, toolcall_start fired 3 times for 1 call"."""
        parts = [count(self.blocks, "block")]
        if self.phantoms:
            parts.append(count(self.phantoms, "phantom call"))
        if self.starts != self.calls:
            fired = count(self.starts, "time")
            parts.append(f"toolcall_start fired {fired} for {count(self.calls, 'call')}")
        if self.dropped:
            parts.append(f"{count(self.dropped, 'fragment')} dropped")
        return f"{self.policy}: {', '.join(parts)}"


@dataclass(frozen=True, slots=True)
class AlignedStep:
    """One step on both sides, and whether they disagree there."""

    step: int
    left: Step
    right: Step
    rule_differs: bool
    blocks_differ: bool

    @property
    def differs(self) -> bool:
        """The rule or the resulting blocks differ at this step."""
        return self.rule_differs or self.blocks_differ


@dataclass(frozen=True, slots=True)
class Comparison:
    """Both traces, their rows aligned by step, and the summary of what changed."""

    left: Trace
    right: Trace
    rows: tuple[AlignedStep, ...]
    left_outcome: Outcome
    right_outcome: Outcome

    @property
    def differing(self) -> tuple[AlignedStep, ...]:
        """The rows where the policies disagree."""
        return tuple(row for row in self.rows if row.differs)

    @property
    def summary(self) -> str:
        """What changed, in one line; "the same" when nothing did."""
        if not self.differing and self.left_outcome.blocks == self.right_outcome.blocks:
            return f"{self.left.policy} and {self.right.policy} agree on every step"
        return f"{self.left_outcome.describe()}; {self.right_outcome.describe()}"


def compare(
    records: Sequence[Record],
    options: Options | None = None,
    left: Policy = "exact-key",
    right: Policy = "adr-0019",
    *,
    end: str = "",
    recorded: bool = True,
) -> Comparison:
    """Assemble the same records under two policies and align the steps (`end`: why the
    records stop before the stream's end, `Trace.without_end`, "" when they do not;
    `recorded`: False for bytes not recorded off the wire, whose end is then judged only
    when they show one, `unended`)."""
    base = options or Options()
    traces = [
        assemble(records, Options(policy, base.path, base.server_tools, base.choice))
        for policy in (left, right)
    ]
    traces = [trace.as_recorded(end, recorded=recorded) for trace in traces]
    left_trace, right_trace = traces
    left_walk, right_walk = _Landings(left_trace), _Landings(right_trace)
    with paused_gc():
        rows = tuple(
            _row(a, b, left_walk.at(a), right_walk.at(b))
            for a, b in zip(left_trace.steps, right_trace.steps, strict=True)
        )
    return Comparison(left_trace, right_trace, rows, outcome(left_trace), outcome(right_trace))


def _row(a: Step, b: Step, left: list[object], right: list[object]) -> AlignedStep:
    rule_differs = [f.rule for f in a.fragments] != [f.rule for f in b.fragments]
    blocks_differ = left != right or _ends(a) != _ends(b)
    return AlignedStep(a.step, a, b, rule_differs, blocks_differ)


class _Landings:
    """Walks a trace step by step, keeping a digest of every block's text so far.

    Comparing digests instead of texts keeps a comparison linear: a block's text is never
    rebuilt per fragment.
    """

    def __init__(self, trace: Trace) -> None:
        self._blocks = trace.blocks
        self._digests: dict[Block, Any] = {}
        self._cursors: dict[Block, int] = {}

    def at(self, step: Step) -> list[object]:
        """For each fragment, the block it landed on as of this step: id, name, text digest."""
        out: list[object] = []
        for fragment in step.fragments:
            if fragment.block is None:
                out.append(None)
                continue
            block = self._blocks[fragment.block]
            out.append((value_as_of(block.ids, step.step), value_as_of(block.names, step.step),
                        self._digest(block, step.step)))  # fmt: skip
        return out

    def _digest(self, block: Block, step: int) -> bytes:
        digest = self._digests.setdefault(block, hashlib.blake2b(digest_size=16))
        cursor = self._cursors.get(block, 0)
        while cursor < len(block.pieces) and block.piece_steps[cursor] <= step:
            digest.update(block.pieces[cursor].encode("utf-8", "surrogatepass"))
            cursor += 1
        self._cursors[block] = cursor
        return bytes(digest.digest())


def _ends(step: Step) -> list[tuple[str, str | None]]:
    return [(e.type, e.content) for e in step.events if e.type.endswith("_end")]


def outcome(trace: Trace) -> Outcome:
    """Count blocks, phantoms, starts and real calls of a trace."""
    tool_blocks: list[Block] = [b for b in trace.blocks if b.fold is None or b.fold.as_ == "client"]
    phantoms = sum(1 for block in tool_blocks if block.is_phantom)
    return Outcome(
        policy=trace.policy,
        blocks=len(trace.blocks),
        phantoms=phantoms,
        starts=sum(len(block.start_steps) for block in trace.blocks),
        calls=len(tool_blocks) - phantoms,
        dropped=trace.rule_counts.get("drop", 0),
    )
