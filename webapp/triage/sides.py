"""One stream read for a diff: the calls it means, its quirks, anomalies, finish, grades, timing.

A `Side`'s calls are the stream's intended reading (`webapp.core.contract`) when it has one,
else the adr-0019 client-path assembly's tool-call blocks; `Side.reading` says which and
`Side.why` why there is no intended reading. Each call carries its final arguments and their
value as JSON, what this build's client path hands the application for it (pi-ai's parse of
its block: `{}` for broken JSON), its grade in every column that ran (this build's two
policies, and the client lenses when they ran: `webapp.triage.verdict`), and its argument
text as it came, piece by piece with the step of each, to find where two calls part. A
non-stream `chat.completion` answer is a side too (`answer_side`, `Side.answer`): its calls
are those of its `message.tool_calls`, written as a clean stream's chunks to be read the same
way; its chunks, steps and grades are that stand-in's, so a diff shows none of them. Pure.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from webapp.core.assembler import assemble
from webapp.core.contract import Contract, contract_of
from webapp.core.contract.answer import Answer, answer_in, as_records
from webapp.core.contract.intended import Intended
from webapp.core.contract.quirks import ENTRY_TESTS, restating_runs
from webapp.core.contract.wire import STEPS_KEPT, Part, Wire, read_wire
from webapp.core.options import Options
from webapp.core.readers.timing import har_timing, timing_document
from webapp.core.records import ReadResult, Record
from webapp.core.trace import Block, Trace
from webapp.lenses.ours import trace_result
from webapp.lenses.results import LensResult
from webapp.triage.values import NotJson, meaning
from webapp.triage.verdict import Grade, Verdict, graded_calls, judge

if TYPE_CHECKING:
    from webapp.lenses.matrix import Matrix

Reading = Literal["intended", "adr-0019"]
ANOMALIES_SHOWN = 20
"""Anomalies listed per stream (all are counted)."""
FINISHES_SHOWN = 10


@dataclass(frozen=True, slots=True)
class DiffCall:
    """One call a stream means, as a diff compares it."""

    number: int
    """Its place among the stream's calls, in order of opening (from 0)."""
    block: int | None
    """The adr-0019 client-path block it is in."""
    id: Any
    """None when the stream gave it none."""
    name: Any
    arguments: str
    value: Any
    """The arguments as JSON (`webapp.triage.values.meaning`: `NotJson` when they do not parse)."""
    receives: Any
    """What this build's client path hands the application: pi-ai's parse of the block."""
    receives_error: str | None
    opened: int
    """The step that opened it."""
    grades: tuple[tuple[str, Grade | None], ...]
    """(column, this call's grade in it), for every column that ran."""
    sent: str
    """The argument text as it came (repairs applied), which `offsets` and `steps` cut."""
    offsets: tuple[int, ...]
    steps: tuple[int, ...]
    """The step of each piece of `sent`, which starts at the matching offset."""

    def step_at(self, offset: int) -> int | None:
        """The step whose piece holds character `offset` of `sent` (None past its end)."""
        if offset >= len(self.sent) or not self.offsets:
            return None
        return self.steps[max(0, bisect_right(self.offsets, offset) - 1)]

    def to_json(self) -> dict[str, Any]:
        """`{"number", "block", "id", "name", "arguments", "json", "value", "receives", ...}`."""
        parsed = not isinstance(self.value, NotJson)
        return {
            "number": self.number,
            "block": self.block,
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
            "json": parsed,
            "value": self.value if parsed else None,
            "receives": self.receives,
            "receives_error": self.receives_error,
            "opened_step": self.opened,
            "grades": dict(self.grades),
        }


@dataclass(frozen=True, slots=True)
class Timing:
    """When the stream's bytes came, in ms since the request: what the input told."""

    source: str
    first_byte: float | None
    first_call: float | None
    """When the chunk that opened the first call arrived."""
    finish: float | None
    """When the first chunk with a `finish_reason` arrived."""
    end: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": "ms",
            "source": self.source,
            "first_byte": self.first_byte,
            "first_call": self.first_call,
            "finish": self.finish,
            "end": self.end,
        }


@dataclass(frozen=True, slots=True)
class Side:
    """One stream: its calls, its contract, its adr-0019 trace, its grades, its timing."""

    label: str
    trace: Trace
    contract: Contract
    verdict: Verdict
    calls: tuple[DiffCall, ...]
    finishes: tuple[tuple[int, str], ...]
    timing: Timing | None
    format: str | None
    records: int
    model: str | None
    har_entry: int | None
    answer: bool = False
    """A non-stream `chat.completion` answer, read as a clean stream of the calls it holds
    (`webapp.core.contract.answer`): its chunks, steps and grades are not the provider's."""
    columns: tuple[LensResult, ...] = ()
    """The columns graded: the client lenses that ran, and this build's policies."""

    @property
    def reading(self) -> Reading:
        """Whose calls these are: the intended reading's, or (there is none) adr-0019's."""
        return "intended" if self.contract.intended is not None else "adr-0019"

    @property
    def finish_reason(self) -> str | None:
        """The first `finish_reason` the stream sent."""
        return self.finishes[0][1] if self.finishes else None

    @property
    def reading_words(self) -> str:
        """ "the intended reading" or "the adr-0019 assembly (no intended reading)"."""
        if self.answer:
            return "the non-stream answer"
        if self.reading == "intended":
            return "the intended reading"
        return "the adr-0019 assembly (no intended reading)"

    def anomaly_counts(self) -> Counter[str]:
        """Anomalies of the adr-0019 assembly, by code."""
        return Counter(anomaly.code for anomaly in self.trace.anomalies)

    def to_json(self) -> dict[str, Any]:
        """The stream's half of the diff document."""
        contract = self.contract
        return {
            "label": self.label,
            "kind": "answer" if self.answer else "stream",
            "format": self.format,
            "records": self.records,
            "har_entry": self.har_entry,
            "model": self.model,
            "reading": self.reading,
            "why": contract.why,
            "repairs": [] if contract.intended is None else list(contract.intended.repairs),
            "calls": len(self.calls),
            "quirks": [
                {"code": f.code, "steps": list(f.steps), "count": f.count, "message": f.message}
                for f in contract.quirks
            ],
            "anomalies": {
                "count": len(self.trace.anomalies),
                "codes": dict(sorted(self.anomaly_counts().items())),
                "first": [a.to_json() for a in self.trace.anomalies[:ANOMALIES_SHOWN]],
            },
            "finish_reason": self.finish_reason,
            "finishes": [{"step": s, "reason": r} for s, r in self.finishes[:FINISHES_SHOWN]],
            "chunks": self.trace.chunk_count,
            "steps": len(self.trace.steps),
            "timing": None if self.timing is None else self.timing.to_json(),
            "grades": [graded.to_json() for graded in self.verdict.grades],
            "verdict": self.verdict.headline,
        }


def side(
    result: ReadResult,
    *,
    label: str,
    choice: int = 0,
    lenses: Sequence[LensResult] = (),
    timing: Mapping[str, Any] | None = None,
    har_entry: int | None = None,
) -> Side:
    """A stream read (`webapp.core.readers.read`) made ready for a diff: assembled under both
    policies on the client path, its contract read, its columns graded. A non-stream answer
    is read as the calls it holds (`answer_side`); ReaderError when they cannot be read."""
    found = answer_in(result, choice)
    if found is not None:
        return answer_side(found, result, label=label, choice=choice, har_entry=har_entry)
    records = result.records
    traces = [
        assemble(records, Options(policy, "client", (), choice), contract=False)
        for policy in ("adr-0019", "exact-key")
    ]  # fmt: skip
    return side_of(
        records, traces[0], traces[1], label=label, source=result, lenses=lenses,
        timing=timing, har_entry=har_entry,
    )  # fmt: skip


def answer_side(
    found: Answer, source: ReadResult, *, label: str, choice: int = 0,
    har_entry: int | None = None,
) -> Side:  # fmt: skip
    """A non-stream answer as a diff's side: its calls as a clean stream's, marked an answer."""
    records = as_records(found, choice)
    adr = assemble(records, Options("adr-0019", "client", (), choice), contract=False)
    made = side_of(records, adr, None, label=label, source=source, har_entry=har_entry)
    return replace(made, answer=True, records=len(source.records), timing=None,
                   model=found.model or made.model)  # fmt: skip


def side_of(
    records: Sequence[Record],
    adr: Trace,
    exact: Trace | None,
    *,
    label: str,
    source: ReadResult | None = None,
    lenses: Sequence[LensResult] = (),
    timing: Mapping[str, Any] | None = None,
    har_entry: int | None = None,
) -> Side:
    """`side` from traces already assembled (the client path: adr-0019, and exact-key when at
    hand) and the records they were assembled from (read again for the contract)."""
    wire = read_wire(records, adr.choice, ENTRY_TESTS, STEPS_KEPT)
    contract = contract_of(wire)
    intended = contract.intended
    ours = [trace_result(trace) for trace in (adr, exact) if trace is not None]
    names = {column.client for column in lenses}
    columns = [*lenses, *(column for column in ours if column.client not in names)]
    model = (source.model if source is not None else None) or wire.model
    verdict = judge(contract, columns, model=model)
    calls = _calls(wire, intended, columns, verdict, adr)
    found = _timing(source, len(records)) if timing is None else timing
    return Side(
        label=label,
        trace=adr,
        contract=contract,
        verdict=verdict,
        calls=calls,
        finishes=tuple(wire.finishes),
        timing=_summary(found, calls, wire.finishes),
        format=None if source is None else source.format,
        records=len(records),
        model=model,
        har_entry=har_entry,
        columns=tuple(columns),
    )


def _calls(
    wire: Wire,
    intended: Intended | None,
    columns: Sequence[LensResult],
    verdict: Verdict,
    adr: Trace,
) -> tuple[DiffCall, ...]:
    """The side's calls: the intended reading's, graded per call, when there is one; else the
    adr-0019 assembly's tool blocks, graded per stream."""
    if intended is not None:
        graded = [(column.client, graded_calls(column, intended)) for column in columns]
        per_call = [
            tuple((client, grades[k]) for client, grades in graded)
            for k in range(len(intended.calls))
        ]
        return tuple(
            _intended_call(k, part, intended.calls[k].arguments, adr, per_call[k])
            for k, part in enumerate(wire.parts)
        )
    else:
        stream = tuple((column.client, verdict.grade_of(column.client)) for column in columns)
        tool_blocks = [block for block in adr.blocks if block.kind == "toolCall"]
        return tuple(_block_call(k, block, stream) for k, block in enumerate(tool_blocks))


def lens_results(matrix: Matrix | None) -> tuple[LensResult, ...]:
    """The columns of a clients matrix (`webapp.lenses.clients_view`), to grade a side by."""
    return () if matrix is None else matrix.columns


def _intended_call(
    number: int,
    part: Part,
    arguments: str,
    adr: Trace,
    grades: tuple[tuple[str, Grade | None], ...],
) -> DiffCall:
    pieces, steps = _kept(part)
    block = adr.blocks[part.block] if 0 <= part.block < len(adr.blocks) else None
    delivered = block.delivered if block is not None else None
    return DiffCall(
        number=number,
        block=part.block,
        id=_given(part.id),
        name=_given(part.name),
        arguments=arguments,
        value=meaning(arguments),
        receives=None if delivered is None else delivered.arguments,
        receives_error=None if delivered is None else delivered.error,
        opened=part.opened,
        grades=grades,
        **_cut(pieces, steps),
    )


def _block_call(
    number: int, block: Block, grades: tuple[tuple[str, Grade | None], ...]
) -> DiffCall:
    text = block.text
    if block.custom_input is not None:
        arguments = json.dumps({"input": "".join(block.custom_input)}, ensure_ascii=False)
    else:
        arguments = text
    delivered = block.delivered
    return DiffCall(
        number=number,
        block=block.number,
        id=_given(block.id),
        name=_given(block.name),
        arguments=arguments,
        value=meaning(arguments),
        receives=delivered.arguments,
        receives_error=delivered.error,
        opened=block.opened_step,
        grades=grades,
        **_cut(block.pieces, block.piece_steps),
    )


def _kept(part: Part) -> tuple[list[str], list[int]]:
    """The part's pieces and their steps as its intended text keeps them: a run of cumulative
    restatements as its last piece (`webapp.core.contract.quirks.repaired_text`)."""
    runs = restating_runs(part)
    if runs is None:
        return part.pieces, part.steps
    pieces: list[str] = []
    steps: list[int] = []
    position = 0
    for start, end in runs:
        pieces += part.pieces[position:start]
        steps += part.steps[position:start]
        pieces.append(part.pieces[end])
        steps.append(part.steps[end])
        position = end + 1
    pieces += part.pieces[position:]
    steps += part.steps[position:]
    return pieces, steps


def _cut(pieces: Sequence[str], steps: Sequence[int]) -> dict[str, Any]:
    offsets: list[int] = []
    at = 0
    for piece in pieces:
        offsets.append(at)
        at += len(piece)
    return {"sent": "".join(pieces), "offsets": tuple(offsets), "steps": tuple(steps)}


def _given(value: Any) -> Any:
    """An id or name as given: None when the stream gave none (absent, null or "")."""
    return None if value is None or value == "" else value


def _timing(source: ReadResult | None, records: int) -> dict[str, Any] | None:
    """The timing document an input carries itself: a cassette's arrivals, a HAR entry's
    `timings` (`webapp.core.readers.timing`)."""
    if source is None:
        return None
    per_record = source.meta.get("arrivals")
    if isinstance(per_record, list):
        return timing_document(records, per_record, source=source.format)
    first, end = har_timing(source.meta.get("timings"))
    if first is None:
        return None
    return timing_document(records, first_byte=first, end=end, source="har")


def _summary(
    found: Mapping[str, Any] | None,
    calls: Sequence[DiffCall],
    finishes: Sequence[tuple[int, str]],
) -> Timing | None:
    if not isinstance(found, Mapping):
        return None
    arrivals = found.get("arrivals")
    arrivals = arrivals if isinstance(arrivals, list) else []

    def at(step: int | None) -> float | None:
        if step is None or not 0 <= step < len(arrivals):
            return None
        value = arrivals[step]
        return float(value) if isinstance(value, int | float) else None

    first_call = at(min((call.opened for call in calls), default=None))
    timing = Timing(
        source=str(found.get("source") or "input"),
        first_byte=_ms(found.get("first_byte")),
        first_call=first_call,
        finish=at(finishes[0][0] if finishes else None),
        end=_ms(found.get("end")),
    )
    known = (timing.first_byte, timing.first_call, timing.finish, timing.end)
    return timing if any(value is not None for value in known) else None


def _ms(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
