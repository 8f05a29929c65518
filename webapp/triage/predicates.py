"""What a minimised stream must still show: `anomaly:CODE`, `differs` or `rule:RULE`.

`parse_until` reads the `--until` text into a `Predicate`, a function of the records that
assembles them and answers yes or no. It refuses an unknown code or rule by name, so that a
typo is not taken for "the property does not hold".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from webapp.core.anomalies import KINDS
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import RULE_NAMES, Policy
from webapp.core.trace import Trace

Predicate = Callable[[Sequence[Record]], bool]


@dataclass(frozen=True, slots=True)
class Until:
    """A parsed `--until`: the predicate and how to say it in words."""

    text: str
    predicate: Predicate
    words: str


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


def parse_until(text: str, options: Options) -> Until:
    """Read `anomaly:CODE`, `differs` or `rule:RULE`; ValueError says what is accepted."""
    kind, _, name = text.partition(":")
    if text == "differs":
        return Until(text, policies_differ(options), "exact-key and adr-0019 differ")
    if kind == "anomaly" and name in KINDS:
        return Until(text, has_anomaly(name, options), f"a {name} anomaly under {options.policy}")
    if kind == "rule" and name in RULE_NAMES:
        return Until(text, took_rule(name, options), f"a fragment taking rule {name} under "
                     f"{options.policy}")  # fmt: skip
    if kind == "anomaly":
        raise ValueError(f"unknown anomaly code {name!r}: one of {', '.join(KINDS)}")
    if kind == "rule":
        raise ValueError(f"unknown rule {name!r}: one of {', '.join(RULE_NAMES)}")
    raise ValueError(f"{text!r}: give anomaly:CODE, differs or rule:RULE")
