"""The compare page's selected step: each row's input, and both policies' blocks as of a step.

A row's input is read from the record itself, not from the trace, because the trace cannot
tell an absent key from a `null` one: each fragment lists `index`, `id`, `name` and
`arguments` with its value as JSON (so `""` and `null` read as such), or as absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.chunks import select_choice
from webapp.core.records import Record
from webapp.core.rules import Policy
from webapp.core.trace import Trace
from webapp.triage.compare import Comparison
from webapp.web.http.text import Clipped, Excerpt, clipped, excerpt, literal
from webapp.web.views.timeline import Badge, badges, block_label

INPUT_KEYS = ("index", "id", "name", "arguments")
ROW_VALUE_LIMIT = 40
"""How much of a key's value a compare row shows (the panel shows more)."""
PANEL_VALUE_LIMIT = 400
STEP_BLOCKS = 24
"""The most blocks a side of the panel lists (those the step touched, then the most recent)."""
ARGUMENTS_LIMIT = 600


@dataclass(frozen=True, slots=True)
class InputKey:
    """One key of a fragment as the stream carried it: its JSON value, or absent."""

    name: str
    value: Clipped
    absent: bool


@dataclass(frozen=True, slots=True)
class InputFragment:
    """One entry of the chunk's `delta.tool_calls`, key by key (`other`: not an object)."""

    position: int
    keys: tuple[InputKey, ...]
    other: Clipped | None = None


def fragment_inputs(
    record: Record | None, choice: int, limit: int = ROW_VALUE_LIMIT
) -> tuple[InputFragment, ...]:
    """The tool-call fragments of a record's followed choice, as the stream carried them."""
    calls = _tool_calls(record, choice)
    return tuple(_input(position, call, limit) for position, call in enumerate(calls))


def _tool_calls(record: Record | None, choice: int) -> list[Any]:
    if record is None or record.kind != "chunk" or not isinstance(record.value, dict):
        return []
    picked = select_choice(record.value.get("choices"), choice).choice
    delta = picked.get("delta") if picked is not None else None
    calls = delta.get("tool_calls") if isinstance(delta, dict) else None
    return calls if isinstance(calls, list) else []


def _input(position: int, call: Any, limit: int) -> InputFragment:
    if not isinstance(call, dict):
        return InputFragment(position, (), clipped(literal(call), limit))
    carried: dict[str, Any] = {key: call[key] for key in ("index", "id") if key in call}
    for holder, text_key in (("function", "arguments"), ("custom", "input")):
        inner = call.get(holder)
        if isinstance(inner, dict):
            if "name" in inner:
                carried["name"] = inner["name"]
            if text_key in inner:
                carried["arguments"] = inner[text_key]
            break
    keys = tuple(
        InputKey(key, clipped(literal(carried[key]), limit), False)
        if key in carried
        else InputKey(key, Clipped(""), True)
        for key in INPUT_KEYS
    )
    return InputFragment(position, keys)


@dataclass(frozen=True, slots=True)
class StepBlock:
    """One block of one policy as of the selected step."""

    label: str
    id: str
    arguments: Excerpt
    starts: int
    phantom: bool
    """Still without a name at the end of the stream: a call no client can run."""
    nameless: bool
    """Without a name as of this step."""
    touched: bool
    opened_here: bool


@dataclass(frozen=True, slots=True)
class StepSide:
    """One policy at the selected step: what its fragments did and its blocks so far."""

    policy: Policy
    badges: tuple[Badge, ...]
    blocks: tuple[StepBlock, ...]
    total: int
    """How many blocks exist as of the step (`blocks` may list fewer)."""


@dataclass(frozen=True, slots=True)
class StepPanel:
    """The selected step of the compare page: its input and both sides' blocks."""

    step: int
    last: int
    kind: str
    inputs: tuple[InputFragment, ...]
    left: StepSide
    right: StepSide
    differs: bool


def step_panel(comparison: Comparison, records: Sequence[Record], step: int) -> StepPanel:
    """The panel of `step` (clamped to the stream's steps)."""
    last = max(0, len(comparison.rows) - 1)
    step = max(0, min(step, last))
    record = records[step] if step < len(records) else None
    row = comparison.rows[step] if comparison.rows else None
    choice = comparison.left.choice
    return StepPanel(
        step=step,
        last=last,
        kind=row.left.kind if row is not None else "",
        inputs=fragment_inputs(record, choice, PANEL_VALUE_LIMIT),
        left=_side(comparison.left, step),
        right=_side(comparison.right, step),
        differs=row.differs if row is not None else False,
    )


def _side(trace: Trace, step: int) -> StepSide:
    if not 0 <= step < len(trace.steps):
        return StepSide(trace.policy, (), (), 0)
    current = trace.steps[step]
    touched = {fragment.block for fragment in current.fragments if fragment.block is not None}
    existing = [block for block in trace.blocks if block.opened_step <= step]
    shown = [b for b in existing if b.number in touched]
    for block in reversed(existing):
        if len(shown) >= STEP_BLOCKS:
            break
        if block.number not in touched:
            shown.append(block)
    shown.sort(key=lambda block: block.number if block.number is not None else -1)
    blocks: list[StepBlock] = []
    for block in shown:
        state = block.state_at(step)
        if state is None:
            continue
        blocks.append(
            StepBlock(
                label=block_label(trace, block.number, step),
                id=str(state.id) if state.id else "",
                arguments=excerpt(state.text, state.appended, ARGUMENTS_LIMIT, ARGUMENTS_LIMIT),
                starts=state.starts,
                phantom=block.is_phantom,
                nameless=not state.name,
                touched=block.number in touched,
                opened_here=block.opened_step == step,
            )
        )
    return StepSide(trace.policy, badges(trace, current), tuple(blocks), len(existing))
