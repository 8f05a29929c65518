"""Anomalies grouped by code, built once per trace view (pure: no web imports)."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.core.anomalies import KINDS, Severity
from webapp.core.trace import Anomaly, Trace


@dataclass(frozen=True, slots=True)
class Group:
    """Every anomaly of one code, by step."""

    code: str
    severity: Severity
    meaning: str
    items: tuple[Anomaly, ...]
    blocks: tuple[int, ...]
    """The distinct blocks named, in order."""


def groups(trace: Trace) -> tuple[Group, ...]:
    """The trace's anomalies grouped by code: errors first, then by the step each first fires."""
    by_code: dict[str, list[Anomaly]] = {}
    for anomaly in trace.anomalies:
        by_code.setdefault(anomaly.code, []).append(anomaly)
    found = []
    for code, items in by_code.items():
        items.sort(key=lambda a: (a.step, -1 if a.block is None else a.block))
        kind = KINDS.get(code)
        found.append(
            Group(
                code=code,
                severity=items[0].severity,
                meaning=kind.meaning if kind else "",
                items=tuple(items),
                blocks=tuple(sorted({a.block for a in items if a.block is not None})),
            )
        )
    found.sort(key=lambda g: (g.severity != "error", g.items[0].step, g.code))
    return tuple(found)
