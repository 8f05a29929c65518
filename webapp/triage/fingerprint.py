"""A stream's fingerprint: what a minimal repro must keep for the bug to be the same bug.

The set of quirk codes, the set of (anomaly code, block name) under the chosen policy, and
every column's grade against the intended reading (`webapp.triage.verdict`): this build's two
policies always (they run in-process), each client lens too when asked (each lens is a
subprocess, seconds per candidate). The grades are what keeps the bug: an ambiguous stream
shrunk to an empty continuation keeps its anomaly code, but adr-0019 is no longer `guessed`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from webapp.core.assembler import assemble
from webapp.core.contract import Contract, read_contract
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.trace import Trace
from webapp.lenses.ours import trace_result
from webapp.lenses.runner import TIMEOUT
from webapp.triage.verdict import grade

if TYPE_CHECKING:
    from webapp.lenses.runner import Lens

Predicate = Callable[[Sequence[Record]], bool]
"""A function of the records, as `webapp.triage.predicates` has them."""


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The quirk codes, the (anomaly code, block name) pairs, and each column's grade."""

    quirks: frozenset[str]
    anomalies: frozenset[tuple[str, str | None]]
    grades: tuple[tuple[str, str | None], ...]
    """(column, grade) in column order; a grade of None: the column did not run."""

    @property
    def holds_a_bug(self) -> bool:
        """A quirk, an anomaly, or a column that ran and does not read the stream as it means:
        else a repro would have nothing to keep."""
        graded = (shown for _, shown in self.grades if shown is not None)
        return bool(self.quirks or self.anomalies) or any(shown != "intact" for shown in graded)

    def describe(self) -> str:
        """In words, for a message: quirks, anomalies, grades."""
        quirks = ", ".join(sorted(self.quirks)) or "no quirk"
        anomalies = ", ".join(
            code if name is None else f"{code} on {name or '(no name)'}"
            for code, name in sorted(self.anomalies, key=lambda pair: (pair[0], pair[1] or ""))
        )
        grades = ", ".join(f"{client} {shown or 'not run'}" for client, shown in self.grades)
        return f"quirks: {quirks}; anomalies: {anomalies or 'none'}; grades: {grades}"

    def to_json(self) -> dict[str, Any]:
        return {
            "quirks": sorted(self.quirks),
            "anomalies": sorted([list(pair) for pair in self.anomalies], key=str),
            "grades": dict(self.grades),
        }


def fingerprint(
    records: Sequence[Record],
    options: Options | None = None,
    lenses: Sequence[Lens] | None = (),
    *,
    timeout: float = TIMEOUT,
) -> Fingerprint:
    """The stream's fingerprint under `options` (its policy and path); `lenses` adds each
    client lens's grade (`()`: none, the default; None: every default lens)."""
    chosen = options or Options()
    records = tuple(records)
    contract = read_contract(records, chosen.choice)
    traces = _policy_traces(records, chosen, contract)
    trace = traces[chosen.policy] if chosen.path == "client" else assemble(records, chosen)
    anomalies = frozenset((a.code, _block_name(trace, a.block)) for a in trace.anomalies)
    columns = [trace_result(traces[policy]) for policy in ("adr-0019", "exact-key")]
    grades = [(column.client, grade(column, contract.intended).grade) for column in columns]
    if lenses is None or lenses:
        from webapp.triage.verdict import clients_verdict

        verdict = clients_verdict(records, lenses, timeout=timeout, contract=contract, repro=False)
        grades = [(g.client, g.grade) for g in verdict.grades]
    return Fingerprint(contract.codes, anomalies, tuple(grades))


def keeps(
    original: Fingerprint,
    options: Options,
    lenses: Sequence[Lens] | None = (),
    *,
    timeout: float = TIMEOUT,
) -> Predicate:
    """A predicate: the records' fingerprint equals `original`."""

    def test(records: Sequence[Record]) -> bool:
        return fingerprint(records, options, lenses, timeout=timeout) == original

    return test


def _policy_traces(
    records: Sequence[Record], chosen: Options, contract: Contract
) -> dict[str, Trace]:
    """Both policies' client-path traces, each assembled once, the contract read once."""
    client = replace(chosen, path="client", server_tools=())
    return {
        policy: replace(
            assemble(records, replace(client, policy=policy), contract=False), contract=contract
        )
        for policy in ("adr-0019", "exact-key")
    }


def _block_name(trace: Trace, block: int | None) -> str | None:
    if block is None or not 0 <= block < len(trace.blocks):
        return None
    name = trace.blocks[block].name
    return name if isinstance(name, str) else str(name)


__all__ = ["Fingerprint", "Predicate", "fingerprint", "keeps"]
