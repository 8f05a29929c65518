"""The non-stream twin: does the provider's own answer to the request sent `"stream": false`
agree with what the stream means, and with what each client received?

A diff of a stream and an answer (`webapp.core.contract.answer`) compares the stream's calls
(its intended reading; its adr-0019 assembly when it has none) with the answer's, and each
graded column's calls (the client lenses that ran, this build's two policies) with the
answer's: in order, by name and by arguments as JSON, never by id (the two responses' ids differ
by nature). Each agreement is "same calls as ..." or "differs at call 1, `arguments.city`".
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webapp.core.words import count
from webapp.lenses.results import LensResult
from webapp.triage.sides import Side
from webapp.triage.values import differences, meaning
from webapp.triage.verdict import BUILD


@dataclass(frozen=True, slots=True)
class Agreement:
    """One reading of the stream (its meaning, or what one client received) held to the answer."""

    who: str
    """`the stream's intended reading`, `what openai-python 1.99.0 received`."""
    same: bool | None
    """None when the client did not run."""
    where: str
    """Where it first differs: `call 1, `arguments.city``; "" when the same or not run."""

    @property
    def words(self) -> str:
        """ "same calls as the stream's intended reading" / "differs at call 1, ..."."""
        if self.same is None:
            return f"{self.who}: not run"
        if self.same:
            return f"same calls as {self.who}"
        return f"differs from {self.who} at {self.where}"

    def to_json(self) -> dict[str, Any]:
        return {"who": self.who, "same": self.same, "where": self.where or None,
                "words": self.words}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Twin:
    """A stream and its non-stream answer held to each other."""

    answer: str
    """Which side of the diff is the answer: "a" or "b"."""
    reading: Agreement
    clients: tuple[Agreement, ...]

    @property
    def agreements(self) -> tuple[Agreement, ...]:
        """The stream's meaning's, then each client's."""
        return (self.reading, *self.clients)

    @property
    def same(self) -> bool:
        """The answer holds the calls the stream means."""
        return bool(self.reading.same)

    @property
    def sentence(self) -> str:
        """`The non-stream answer: same calls as the stream's intended reading; differs from what
        pi-ai 1.6.0 received at call 1, `arguments.city`.`"""
        parts = [self.reading.words, *(c.words for c in self.clients if c.same is False)]
        return f"The non-stream answer: {'; '.join(parts)}."

    def to_json(self) -> dict[str, Any]:
        """`{"answer": "b", "same", "reading": {...}, "clients": [...], "sentence"}`."""
        return {
            "answer": self.answer,
            "same": self.same,
            "reading": self.reading.to_json(),
            "clients": [client.to_json() for client in self.clients],
            "sentence": self.sentence,
        }


def twin(a: Side, b: Side) -> Twin | None:
    """The agreements of a diff whose one side is a non-stream answer (None otherwise)."""
    if a.answer == b.answer:
        return None
    letter, answer, stream = ("a", a, b) if a.answer else ("b", b, a)
    want = [(call.name, call.arguments) for call in answer.calls]
    meant = "the stream's intended reading" if stream.reading == "intended" else (
        "the stream's adr-0019 assembly (it has no intended reading)")  # fmt: skip
    reading = Agreement(meant, *_held(want, [(c.name, c.arguments) for c in stream.calls]))
    return Twin(letter, reading, tuple(_client(column, want) for column in stream.columns))


def _client(column: LensResult, want: Sequence[tuple[Any, str]]) -> Agreement:
    who = f"{column.client} ({BUILD})" if column.version == BUILD else (
        f"{column.client} {column.version}".strip())  # fmt: skip
    if column.status == "unavailable":
        return Agreement(who, None, "")
    if column.status == "error":
        return Agreement(f"{who}, which raised ({_short(column.error or '')})", False, "its end")
    got = [(call.name, call.arguments or "") for call in column.calls]
    return Agreement(f"what {who} received", *_held(want, got))


def agreement(want: Sequence[tuple[Any, str]], got: Sequence[tuple[Any, str]]) -> tuple[bool, str]:
    """(same, where they first differ) of two lists of (name, arguments text), the answer's
    first: in order, by name, then by arguments as JSON."""
    return _held(want, got)


def _held(want: Sequence[tuple[Any, str]], got: Sequence[tuple[Any, str]]) -> tuple[bool, str]:
    for number, (expected, found) in enumerate(zip(want, got, strict=False), 1):
        if expected[0] != found[0]:
            names = f"{_name(found[0])}, the answer {_name(expected[0])}"
            return False, f"call {number}, `name` ({names})"
        parted = differences("arguments", meaning(found[1]), meaning(expected[1]), limit=1)
        if parted:
            return False, f"call {number}, `{parted[0].path}`"
    if len(want) == len(got):
        return True, ""
    number = min(len(want), len(got)) + 1
    if len(got) > len(want):
        extra = f"{_name(got[number - 1][0])} is not in the answer"
    else:
        extra = f"it lacks the answer's {_name(want[number - 1][0])}"
    return False, f"call {number}: {extra} ({count(len(got), 'call')}, the answer {len(want)})"


def _name(name: Any) -> str:
    return name if isinstance(name, str) and name else "(no name)"


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
