"""What the assembler did at one step, as the views and the JSON see it: frozen values.

The trace records them as columns (`webapp.core.columns`); these objects are built on demand, one
step (or one window of steps) at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from webapp.core.anomalies import Severity, severity_of
from webapp.core.rules import RuleName

StepKind = Literal["chunk", "done", "invalid", "end"]


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


Landing = tuple[RuleName, int | None, str, bool]
"""What a fragment did, as a timeline row shows it: its rule, its block (None when dropped), the
text it appended ("" when none), whether it came late (`Fragment`'s fields of those names)."""
Fired = tuple[str, int | None, str | None]
"""An event, as a timeline row shows it: its type, its `contentIndex`, a `done` or `error`
event's reason (`Event`'s fields of those names)."""


@dataclass(slots=True)
class Glance:
    """A step as a timeline row shows it (`Trace.glance`): a `Step` without its fragments'
    keys and reasons or its events' deltas and contents, and without their objects. A page
    draws a hundred rows at random places of a long stream: a `Step` costs several times as
    much to build, and its end step joins every block's whole text."""

    step: int
    line: int | None
    kind: StepKind
    landings: tuple[Landing, ...]
    fired: tuple[Fired, ...]
    error: str | None
    assembled: bool
    finish_reason: str | None


class Anomaly:
    """Something a person triaging the stream should look at.

    Its message is text, or worded when first read: `word(code, subject)`. The verdicts on
    final blocks are worded so (`webapp.core.diagnosis.final_words`, the subject a block), because
    a stream of 90,000 phantom calls has 180,000 of them and a page shows a handful; a stored
    trace keeps none of their text and words them again from its loaded blocks.
    """

    __slots__ = ("_message", "_subject", "_word", "block", "code", "step")

    def __init__(
        self,
        code: str,
        step: int,
        block: int | None,
        message: str | Callable[[str, Any], str],
        subject: Any = None,
    ) -> None:
        self.code = code
        self.step = step
        self.block = block
        if isinstance(message, str):
            self._message: str | None = message
            self._word: Callable[[str, Any], str] | None = None
        else:
            self._message, self._word = None, message
        self._subject = subject

    @property
    def worded(self) -> bool:
        """Whether the message is worded from its subject (not given as text)."""
        return self._word is not None

    @property
    def message(self) -> str:
        """The message, worded on first use."""
        found = self._message
        if found is None:
            assert self._word is not None
            found = self._message = self._word(self.code, self._subject)
        return found

    def _key(self) -> tuple[str, int, int | None, str]:
        return (self.code, self.step, self.block, self.message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Anomaly) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Anomaly({self.code!r}, {self.step!r}, {self.block!r}, {self.message!r})"

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
