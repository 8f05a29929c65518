"""What a minimised stream must still show: `fingerprint` (the default), `anomaly:CODE`,
`differs` or `rule:RULE`.

`parse_until` reads the `--until` text into a `Predicate`, a function of the records that
assembles them and answers yes or no. It refuses an unknown code or rule by name, so that a
typo is not taken for "the property does not hold". The fingerprint
(`webapp.triage.fingerprint`) is the original stream's: the predicate keeps a candidate only
if its fingerprint is the same, so it needs the original records (`parse_until(..., records)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from webapp.core.anomalies import KINDS
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import RULE_NAMES, Policy
from webapp.core.trace import Trace
from webapp.core.words import article
from webapp.triage.fingerprint import Fingerprint, Predicate, fingerprint, keeps

if TYPE_CHECKING:
    from webapp.lenses.runner import Lens

FINGERPRINT = "fingerprint"
__all__ = ["FINGERPRINT", "Predicate", "Until", "keeps_fingerprint", "parse_until"]


@dataclass(frozen=True, slots=True)
class Until:
    """A parsed `--until`: the predicate and how to say it in words."""

    text: str
    predicate: Predicate
    words: str
    nothing: str = ""
    """Why the input holds nothing to keep, in words (a clean stream's fingerprint: no quirk,
    no anomaly, every column intact); empty when it holds something."""


def has_anomaly(code: str, options: Options) -> Predicate:
    """The trace under `options` reports an anomaly with this code."""

    def test(records: Sequence[Record]) -> bool:
        return any(anomaly.code == code for anomaly in assemble(records, options).anomalies)

    return test


def took_rule(rule: str, options: Options) -> Predicate:
    """Some fragment of the trace under `options` was resolved by this rule."""

    def test(records: Sequence[Record]) -> bool:
        return assemble(records, options).rule_counts.get(rule, 0) > 0

    return test


def policies_differ(options: Options) -> Predicate:
    """exact-key and adr-0019 disagree on some step, or end with different blocks."""

    def test(records: Sequence[Record]) -> bool:
        left, right = (assemble(records, replace(options, policy=name)) for name in COMPARED)
        return traces_differ(left, right)

    return test


COMPARED: tuple[Policy, Policy] = ("exact-key", "adr-0019")


def traces_differ(left: Trace, right: Trace) -> bool:
    """The same stream's traces under two policies disagree: on some fragment's rule or block
    (which is where their steps would differ, `webapp.triage.compare`), or on the final calls."""
    return not left.same_verdicts(right) or final_calls(left) != final_calls(right)


def final_calls(trace: Trace) -> list[tuple[object, object, str]]:
    """Each block's final id, name and arguments text."""
    return [(block.id, block.name, block.text) for block in trace.blocks]


def keeps_fingerprint(
    records: Sequence[Record], options: Options, lenses: Sequence[Lens] | None = ()
) -> Until:
    """The records' fingerprint, with the lenses' grades when `lenses` is not `()`."""
    original = fingerprint(records, options, lenses)
    with_lenses = " (with the client lenses)" if lenses != () else ""
    nothing = "" if original.holds_a_bug else _clean(original, options, lenses != ())
    return Until(FINGERPRINT, keeps(original, options, lenses),
                 f"the same fingerprint{with_lenses}: {original.describe()}", nothing)  # fmt: skip


def _clean(original: Fingerprint, options: Options, with_lenses: bool) -> str:
    """Why a clean stream's fingerprint holds nothing to keep, in words."""
    graded = ", ".join(f"{client} {shown or 'not run'}" for client, shown in original.grades)
    columns = "every client that ran" if with_lenses else "both policies"
    return (
        f"the input shows no quirk and no anomaly under {options.policy}, and {columns} read it "
        f"as it means ({graded}): its fingerprint holds no bug to keep"
    )


def parse_until(
    text: str,
    options: Options,
    records: Sequence[Record] = (),
    lenses: Sequence[Lens] | None = (),
) -> Until:
    """Read `fingerprint`, `anomaly:CODE`, `differs` or `rule:RULE`; ValueError says what is
    accepted. The fingerprint is that of `records` (with `lenses`' grades when given)."""
    kind, _, name = text.partition(":")
    if text == FINGERPRINT:
        return keeps_fingerprint(records, options, lenses)
    if text == "differs":
        return Until(text, policies_differ(options), "exact-key and adr-0019 differ")
    if kind == "anomaly" and name in KINDS:
        return Until(
            text, has_anomaly(name, options), f"{article(name)} anomaly under {options.policy}"
        )
    if kind == "rule" and name in RULE_NAMES:
        return Until(text, took_rule(name, options), f"a fragment taking rule {name} under "
                     f"{options.policy}")  # fmt: skip
    if kind == "anomaly":
        raise ValueError(f"unknown anomaly code {name!r}: one of {', '.join(KINDS)}")
    if kind == "rule":
        raise ValueError(f"unknown rule {name!r}: one of {', '.join(RULE_NAMES)}")
    raise ValueError(
        f"{text!r}: give anomaly:CODE, differs or rule:RULE (or fingerprint, the default)"
    )
