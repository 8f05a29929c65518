"""A content block's history, and its state as of any step, found by bisecting that history.

Blocks are kept as append-only histories (argument pieces with the step that appended each, id
and name changes, `toolcall_start` steps), so the state as of step N is found by bisecting
each history, never by replaying the stream or storing a snapshot per step.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from webapp.core.delivery import Delivery, deliver
from webapp.core.jsvalue import js_string, truthy

BlockKind = Literal["toolCall", "text", "thinking"]
T = TypeVar("T")


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
    piece_steps: array[int] = field(default_factory=lambda: array("q"))
    """The step of each piece (a machine integer each: a long stream's are most of its steps)."""
    ids: Sequence[tuple[int, Any]] = ()
    """(step, id) each time the block's own id was set. This history and the four below grow
    with `added`: most blocks hold none or one entry (a stream of 90,000 phantom calls has
    90,000 blocks), so they start as tuples, not as five lists each."""
    names: Sequence[tuple[int, Any]] = ()
    aliases: Sequence[tuple[int, Any]] = ()
    """(step, id) each time an id was registered for the block."""
    indexes: Sequence[tuple[int, Any]] = ()
    start_steps: Sequence[int] = ()
    fold: Fold | None = None
    custom_input: list[str] | None = None
    """Freeform (`custom`) tool calls: the input pieces, which upstream hands the tool as
    `{"input": ...}` whatever JSON text came before; None for a JSON function call."""
    _derived: dict[str, tuple[int, Any]] | None = field(default=None, repr=False)
    """Values computed from the text (`derived`), each with how many pieces it had then."""

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
    def label(self) -> str:
        """The block's name as of now, for a message, or `(no name)`."""
        return js_string(self.name) if truthy(self.name) else "(no name)"

    @property
    def text(self) -> str:
        """All the text appended so far, joined on demand."""
        return "".join(self.pieces)

    @property
    def delivered(self) -> Delivery:
        """What upstream's client would hand the tool for the text so far (parsed on demand)."""
        if self.custom_input is not None:
            return Delivery({"input": "".join(self.custom_input)})
        return self.derived("delivered", lambda block: deliver(block.text))

    def derived(self, key: str, compute: Callable[[Block], T]) -> T:
        """`compute(self)`, kept until a piece is appended: what is read more than once of a
        long text (its delivery, where it broke) is worked out once."""
        known = self._derived.get(key) if self._derived is not None else None
        if known is None or known[0] != len(self.pieces):
            if self._derived is None:
                self._derived = {}
            known = self._derived[key] = (len(self.pieces), compute(self))
        return known[1]

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


def added(history: Sequence[T], item: T) -> Sequence[T]:
    """`history` with `item` at its end: a short one is a new tuple, a longer one becomes a
    list that grows in place (so that a block re-keyed on every fragment stays linear)."""
    if isinstance(history, list):
        history.append(item)
        return history
    if len(history) < _SHORT:
        return (*history, item)
    return [*history, item]


_SHORT = 8


def value_as_of(history: Sequence[tuple[int, Any]], step: int, default: Any = "") -> Any:
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
