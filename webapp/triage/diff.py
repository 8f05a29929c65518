"""Two streams side by side: the calls each means, matched, and where they part.

Each stream is a `webapp.triage.sides.Side`: its calls are its intended reading when it has
one, else its adr-0019 assembly's. `diff(a, b)` aligns the two sides' calls in order of opening
and matches them by name, and by id where both have one: a longest common subsequence weighted
by how well two calls agree (`_score`), greedy in order past `MAX_CELLS` pairs. Each matched
pair is compared by value: name, id, the arguments and what the application receives, both as
JSON and key by key (`webapp.triage.values`), and the first step where the two argument texts
part is found on each side. A call with no partner is only in A or only in B.

Two streams are `same` when they mean the same calls: every call matched, no pair differing.
Chunking, quirks, anomalies, finish reasons, chunk counts, grades and timing are listed as
differences between the streams (`Diff.streams`) and change nothing.

Ids are compared unless both streams carry ids and share none: then they are two responses
(two providers, before and after a fix) whose ids differ by nature (`ids="auto"`; "compare"
and "ignore" force it). The alignment is worked out with the sides in a fixed order (`_key`),
so that the diff of B and A is the diff of A and B with its sides swapped. A gateway's hop (A
what it received, B what it sent on) also says what the gateway did (`webapp.triage.hop`).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from webapp.core.words import count
from webapp.lenses.results import LensResult
from webapp.triage.hop import Hop, hop_of
from webapp.triage.sides import DiffCall, Side
from webapp.triage.values import Difference, agreement, differ, differences, show
from webapp.triage.verdict import BUILD, Gateway, through

IdsMode = Literal["auto", "compare", "ignore"]
IDS_MODES: tuple[IdsMode, ...] = get_args(IdsMode)
MAX_CELLS = 250_000
"""Above this many (call of A, call of B) pairs, calls are matched greedily in order."""
LOOKAHEAD = 64
"""The greedy match looks this many calls ahead for a partner."""
TEXT_SHOWN = 30
"""Characters of argument text shown from where two texts part."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where on one side two argument texts part: the step, its input line, the text there."""

    step: int | None
    """None when this side's text ended there (the other goes on)."""
    line: int | None
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "line": self.line, "text": self.text}


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first character where two calls' argument texts part, and the step on each side."""

    offset: int
    a: Place
    b: Place

    def swapped(self) -> Divergence:
        return Divergence(self.offset, self.b, self.a)

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "a": self.a.to_json(), "b": self.b.to_json()}


@dataclass(frozen=True, slots=True)
class Pair:
    """A call of A and its partner in B (either None when it has none), compared."""

    a: DiffCall | None
    b: DiffCall | None
    differences: tuple[Difference, ...]
    diverges: Divergence | None
    besides: tuple[Difference, ...]
    """How the call differs besides what it means: what this build's client path hands the
    application when the arguments mean the same, and the columns that grade it otherwise."""

    @property
    def same(self) -> bool:
        """Both sides have the call, and it means the same on both."""
        return self.a is not None and self.b is not None and not self.differences

    @property
    def name(self) -> Any:
        """The call's name (A's, else B's)."""
        call = self.a if self.a is not None else self.b
        return None if call is None else call.name

    def swapped(self) -> Pair:
        return Pair(
            self.b, self.a, tuple(d.swapped() for d in self.differences),
            None if self.diverges is None else self.diverges.swapped(),
            tuple(d.swapped() for d in self.besides),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """`{"a": CALL | null, "b": CALL | null, "same", "differences", "diverges", "besides"}`."""
        return {
            "a": None if self.a is None else self.a.to_json(),
            "b": None if self.b is None else self.b.to_json(),
            "same": self.same,
            "differences": [str(d) for d in self.differences],
            "diverges": None if self.diverges is None else self.diverges.to_json(),
            "besides": [str(d) for d in self.besides],
        }


@dataclass(frozen=True, slots=True)
class Diff:
    """Two streams' calls matched and compared, and how the streams differ besides."""

    a: Side
    b: Side
    pairs: tuple[Pair, ...]
    streams: tuple[Difference, ...]
    """How the streams differ in what is not their meaning (quirks, chunks, grades...)."""
    ids_compared: bool
    ids_why: str
    hop: Hop | None = None
    """What the gateway did, when A is what a gateway received and B what it sent."""

    @property
    def same(self) -> bool:
        """The streams mean the same calls."""
        return all(pair.same for pair in self.pairs)

    @property
    def twin(self) -> Twin | None:
        """With one side a non-stream answer: whether it agrees with the stream's meaning and
        with what each client received (`Twin`)."""
        return twin(self.a, self.b)

    @property
    def subject(self) -> str:
        """ "The streams", "The stream and the non-stream answer", "The answers"."""
        if self.a.answer and self.b.answer:
            return "The answers"
        if self.a.answer or self.b.answer:
            return "The stream and the non-stream answer"
        return "The streams"

    @property
    def summary(self) -> str:
        """One sentence: the same calls, or how many differ and how many have no partner."""
        matched = [pair for pair in self.pairs if pair.a is not None and pair.b is not None]
        if self.same:
            what = count(len(matched), "call") if matched else "no tool call"
            tail = ""
            if self.streams:
                tail = (f"; {self.subject.lower()} differ only in what does not change that "
                        f"({count(len(self.streams), 'difference')})")  # fmt: skip
            return f"{self.subject} mean the same calls: {what}{tail}."
        parts = []
        differing = sum(1 for pair in matched if pair.differences)
        if differing:
            parts.append(f"{differing} of {count(len(matched), 'matched call')} "
                         f"{'differs' if differing == 1 else 'differ'}")  # fmt: skip
        only_a = sum(1 for pair in self.pairs if pair.b is None)
        only_b = sum(1 for pair in self.pairs if pair.a is None)
        for alone, label in ((only_a, "A"), (only_b, "B")):
            if alone:
                parts.append(f"{count(alone, 'call')} only in {label}")
        return f"{self.subject} differ: {', '.join(parts)}."

    def swapped(self) -> Diff:
        """The diff of B and A."""
        return Diff(
            self.b,
            self.a,
            tuple(pair.swapped() for pair in self.pairs),
            tuple(d.swapped() for d in self.streams),
            self.ids_compared,
            self.ids_why,
        )  # fmt: skip  (a hop has a direction: swapped, it is none)

    def to_json(self) -> dict[str, Any]:
        """`{"a": {...}, "b": {...}, "calls": [...], "same", "summary", "streams", "ids",
        "twin"}`, and for a gateway's hop `"introduced"` (the quirk codes only B has),
        `"removed"` (only A's) and `"hop"` (the sentence: `webapp.triage.hop`)."""
        hop = {} if self.hop is None else self.hop.to_json()
        if hop:
            hop["hop"] = hop.pop("sentence")
        return {
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "calls": [pair.to_json() for pair in self.pairs],
            "same": self.same,
            "summary": self.summary,
            "streams": [str(d) for d in self.streams],
            "ids": {"compared": self.ids_compared, "why": self.ids_why},
            "twin": None if (found := self.twin) is None else found.to_json(),
            **hop,
        }


def diff(a: Side, b: Side, ids: IdsMode = "auto", hop: str | None = None) -> Diff:
    """Match the two streams' calls and compare them (see the module docstring); `hop`
    names the gateway ("" when it has no name) when A is what it received and B what it
    sent: B's verdict then files the quirks the gateway introduced with it."""
    compared, why = _ids(a, b, ids)
    if _key(a) <= _key(b):
        aligned = _align(a.calls, b.calls)
    else:
        aligned = [(i, j) for j, i in _align(b.calls, a.calls)]
    pairs = tuple(
        _pair(a, None if i is None else a.calls[i], b, None if j is None else b.calls[j], compared)
        for i, j in aligned
    )
    found = Diff(a, b, pairs, tuple(_streams(a, b)), compared, why)
    if hop is None:
        return found
    did = hop_of(found)
    gateway = Gateway(hop, frozenset(did.introduced))
    return replace(found, b=replace(b, verdict=through(b.verdict, gateway, b.model)), hop=did)


def _ids(a: Side, b: Side, mode: IdsMode) -> tuple[bool, str]:
    if mode == "compare":
        return True, "compared (asked for)"
    if mode == "ignore":
        return False, "not compared (asked for)"
    mine = {call.id for call in a.calls if call.id is not None}
    theirs = {call.id for call in b.calls if call.id is not None}
    if mine and theirs and not mine & theirs:
        return False, ("not compared: both streams carry ids and share none, so they are two "
                       "responses, whose ids differ by nature")  # fmt: skip
    if mine & theirs:
        return True, "compared: the streams share call ids (one response seen twice)"
    return True, "compared: at most one stream carries ids"


# Aligning the calls.


def _key(side: Side) -> tuple[tuple[str, str], ...]:
    """What the alignment reads of a side's calls, to put the two sides in a fixed order."""
    return tuple((repr(call.name), repr(call.id)) for call in side.calls)


def _score(a: DiffCall, b: DiffCall) -> int:
    """How well two calls agree: 0 (no match) unless the names or the ids are the same. One
    shared id outweighs any two pairs that share only a name and carry other ids."""
    same_id = a.id is not None and a.id == b.id
    if a.name == b.name:
        if same_id:
            return 8
        return 4 if a.id is None or b.id is None else 1
    return 4 if same_id else 0


def _align(
    first: Sequence[DiffCall], second: Sequence[DiffCall]
) -> list[tuple[int | None, int | None]]:
    """The calls of both sides in order, each with its partner or None."""
    n, m = len(first), len(second)
    matched = _greedy(first, second) if n * m > MAX_CELLS else _best(first, second)
    out: list[tuple[int | None, int | None]] = []
    i = j = 0
    for a, b in [*matched, (n, m)]:
        out.extend((k, None) for k in range(i, a))
        out.extend((None, k) for k in range(j, b))
        if a < n and b < m:
            out.append((a, b))
        i, j = a + 1, b + 1
    return out


def _best(first: Sequence[DiffCall], second: Sequence[DiffCall]) -> list[tuple[int, int]]:
    """The order-keeping matching of highest total score (dynamic programming)."""
    n, m = len(first), len(second)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            score = _score(first[i], second[j])
            best = max(below[j], row[j + 1])
            if score and below[j + 1] + score >= best:
                best = below[j + 1] + score
            row[j] = best
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        score = _score(first[i], second[j])
        if score and table[i][j] == table[i + 1][j + 1] + score:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _greedy(first: Sequence[DiffCall], second: Sequence[DiffCall]) -> list[tuple[int, int]]:
    """Each call of `first` with the best-scoring unmatched call among the next `LOOKAHEAD` of
    `second`: linear, for streams of very many calls."""
    pairs: list[tuple[int, int]] = []
    cursor = 0
    for i, call in enumerate(first):
        window = range(cursor, min(len(second), cursor + LOOKAHEAD))
        best = max(window, key=lambda j: (_score(call, second[j]), -j), default=None)
        if best is not None and _score(call, second[best]):
            pairs.append((i, best))
            cursor = best + 1
    return pairs


# Comparing two calls.


def _pair(a_side: Side, a: DiffCall | None, b_side: Side, b: DiffCall | None, ids: bool) -> Pair:
    if a is None or b is None:
        return Pair(a, b, (_alone(a, b),), None, ())
    found, delivered = _compare(a, b, ids)
    theirs = dict(b.grades)
    grades = [
        Difference(f"grade in {client}", mine or "not run", theirs[client] or "not run")
        for client, mine in a.grades
        if client in theirs and theirs[client] != mine
    ]
    return Pair(a, b, tuple(found), _divergence(a_side, a, b_side, b), (*delivered, *grades))


def _alone(a: DiffCall | None, b: DiffCall | None) -> Difference:
    """`call: (absent) vs get_time {}`: a call with no partner."""

    def shown(call: DiffCall | None) -> str:
        if call is None:
            return "(absent)"
        name = call.name if isinstance(call.name, str) else show(call.name)
        return f"{name} {show(call.value)}"

    return Difference("call", shown(a), shown(b))


def _compare(a: DiffCall, b: DiffCall, ids: bool) -> tuple[list[Difference], list[Difference]]:
    """How two calls differ in meaning (name, id, arguments, and what the application receives
    where that differs otherwise than the arguments do), and what the application receives
    when the arguments mean the same (a client path's doing, not the stream's meaning)."""
    out: list[Difference] = []
    if a.name != b.name:
        out.append(differ("name", a.name, b.name))
    if ids and a.id != b.id:
        out.append(differ("id", a.id, b.id))
    said = differences("arguments", a.value, b.value)
    out += said
    received = differences("receives", a.receives, b.receives)
    if not said:
        return out, received
    if _tails(received, "receives") != _tails(said, "arguments"):
        out += received
    return out, []


def _tails(found: Sequence[Difference], head: str) -> list[tuple[str, str, str, int]]:
    return [(d.path[len(head) :], d.a, d.b, d.more) for d in found]


def _divergence(a_side: Side, a: DiffCall, b_side: Side, b: DiffCall) -> Divergence | None:
    if a.sent == b.sent:
        return None
    offset = _common_prefix(a.sent, b.sent)
    return Divergence(offset, _place(a_side, a, offset), _place(b_side, b, offset))


def _place(side: Side, call: DiffCall, offset: int) -> Place:
    step = call.step_at(offset)
    line = None if step is None else side.trace.line_of(step)
    return Place(step, line, call.sent[offset : offset + TEXT_SHOWN])


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, compared a block at a time."""
    size = min(len(a), len(b))
    at, block = 0, 4096
    while at < size and a[at : at + block] == b[at : at + block]:
        at += block
    at = min(at, size)
    while at < size and a[at] == b[at]:
        at += 1
    return at


# How the streams differ besides.


def _streams(a: Side, b: Side) -> list[Difference]:
    out: list[Difference] = []
    if a.reading != b.reading:
        out.append(Difference("reading", a.reading_words, b.reading_words))
    if a.contract.codes != b.contract.codes:
        out.append(Difference("quirks", _codes(a.contract.codes), _codes(b.contract.codes)))
    mine, theirs = a.anomaly_counts(), b.anomaly_counts()
    for code in sorted(set(mine) | set(theirs)):
        if mine[code] != theirs[code]:
            out.append(Difference(f"anomaly {code}", str(mine[code]), str(theirs[code])))
    if a.finish_reason != b.finish_reason:
        out.append(differ("finish_reason", a.finish_reason, b.finish_reason))
    if a.model and b.model and a.model != b.model:
        out.append(differ("model", a.model, b.model))
    if a.answer or b.answer:  # an answer's chunks, grades and timing are not the provider's
        return out
    if a.trace.chunk_count != b.trace.chunk_count:
        out.append(Difference("chunks", str(a.trace.chunk_count), str(b.trace.chunk_count)))
    theirs_graded = {g.client: g for g in b.verdict.grades}
    for graded in a.verdict.grades:
        other = theirs_graded.get(graded.client)
        if other is not None and other.grade != graded.grade:
            out.append(Difference(f"grade in {graded.client}", graded.grade or "not run",
                                  other.grade or "not run"))  # fmt: skip
    if a.timing is not None and b.timing is not None:
        for field in ("first_call", "end"):
            mine_ms, theirs_ms = getattr(a.timing, field), getattr(b.timing, field)
            if mine_ms is not None and theirs_ms is not None and mine_ms != theirs_ms:
                out.append(Difference(f"timing {field}", f"{mine_ms:,.0f} ms",
                                      f"{theirs_ms:,.0f} ms"))  # fmt: skip
    return out


def _codes(codes: frozenset[str]) -> str:
    return ", ".join(sorted(codes)) or "none"


# The non-stream twin: does the provider's own answer to the request sent `"stream": false`
# agree with what the stream means, and with what each client received? The stream's calls
# (its intended reading; its adr-0019 assembly when it has none) and each graded column's
# (the client lenses that ran, this build's two policies) are held to the answer's in order,
# by name and by arguments as JSON, never by id (two responses' ids differ by nature):
# "same calls as ..." or "differs from ... at call 1, `arguments.city`".


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
    reading = Agreement(meant, *agreement(want, [(c.name, c.arguments) for c in stream.calls]))
    return Twin(letter, reading, tuple(_client(column, want) for column in stream.columns))


def _client(column: LensResult, want: Sequence[tuple[Any, str]]) -> Agreement:
    who = f"{column.client} ({BUILD})" if column.version == BUILD else (
        f"{column.client} {column.version}".strip())  # fmt: skip
    if column.status == "unavailable":
        return Agreement(who, None, "")
    if column.status == "error":
        return Agreement(f"{who}, which raised ({_short(column.error or '')})", False, "its end")
    got = [(call.name, call.arguments or "") for call in column.calls]
    return Agreement(f"what {who} received", *agreement(want, got))


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
