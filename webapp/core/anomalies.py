"""The anomaly codes a trace can report, as one table: how severe each is and what it means.

`check` exits 1 on an `error` (with `--strict`, on any anomaly); the pages colour and group
anomalies by this table, and the tests check that every code the assembler reports is here.
Section 6 of the spec lists the codes, section 7 their severities and where they fire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class AnomalyKind:
    """One row of the table."""

    code: str
    severity: Severity
    meaning: str


ANOMALY_KINDS: tuple[AnomalyKind, ...] = (
    AnomalyKind(
        "ambiguous-continuation", "error",
        "A continuation landed on the most recently opened block while another block's "
        "arguments were not yet one complete JSON value: decision 0019 guessed here.",
    ),
    AnomalyKind(
        "invalid-arguments", "error",
        "A block's arguments stopped being the start of any valid JSON here.",
    ),
    AnomalyKind(
        "incomplete-arguments", "error",
        "A block's final arguments are the start of a JSON value, never finished.",
    ),
    AnomalyKind(
        "phantom-call", "error",
        "A tool call whose name is still empty at the end (exact-key's continuation bug).",
    ),
    AnomalyKind(
        "dropped-fragment", "error",
        "A continuation with arguments arrived while no block was open: it was dropped.",
    ),
    AnomalyKind("name-conflict", "error", "A fragment named a block that already had a name."),
    AnomalyKind(
        "id-conflict", "error", "A fragment matched by index carried another block's id."
    ),
    AnomalyKind("invalid-chunk", "error", "A record that is not JSON: upstream stops there."),
    AnomalyKind(
        "missing-finish-reason", "error",
        "No chunk carried a finish_reason: upstream ends the stream with an error.",
    ),
    AnomalyKind("provider-error", "error", "The provider sent an error instead of a chunk."),
    AnomalyKind(
        "late-fragment", "error",
        "Server-tools path: a fragment named a candidate that had already folded.",
    ),
    AnomalyKind(
        "malformed-fragment", "error",
        "A fragment's keys have types upstream reads in surprising ways.",
    ),
    AnomalyKind(
        "malformed-delta", "error", "delta.tool_calls is not an array: it was ignored."
    ),
    AnomalyKind(
        "non-object-arguments", "warning",
        "A call's final arguments parse, but not to an object: upstream hands the tool {}.",
    ),
    AnomalyKind(
        "empty-arguments", "warning",
        "A named call ended with no arguments at all: upstream hands the tool {}.",
    ),
    AnomalyKind(
        "after-done", "warning",
        "Records after [DONE]: listed, not assembled, since a client stops reading there.",
    ),
    AnomalyKind(
        "other-choices", "warning",
        "The stream carries other choices (n > 1): upstream reads choices[0] whatever its index.",
    ),
)  # fmt: skip

KINDS: dict[str, AnomalyKind] = {kind.code: kind for kind in ANOMALY_KINDS}


def severity_of(code: str) -> Severity:
    """`error` or `warning`; a code missing from the table counts as an error."""
    kind = KINDS.get(code)
    return "error" if kind is None else kind.severity
