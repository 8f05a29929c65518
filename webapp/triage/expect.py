"""A trace against the one a regression fixture expects: equal, or the first difference.

Both sides are schema-1 trace documents (`Trace.to_json()`, or `streamviz trace --format json`,
whose "input" key is ignored: a replayed fixture is read from its own file). The first
difference is found walking the expected document in order, so it names the earliest step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from webapp.core.trace import SCHEMA
from webapp.core.words import quote

_IGNORED = frozenset({"input"})
_REQUIRED = ("policy", "path", "steps", "blocks", "anomalies", "summary")


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two trace documents first differ: a path such as `steps[3].fragments[0].rule`."""

    path: str
    expected: Any
    actual: Any
    step: int | None

    def describe(self) -> str:
        """E.g. `step 3: steps[3].fragments[0].rule: expected "continuation", got "new"`."""
        where = f"step {self.step}: " if self.step is not None else ""
        return f"{where}{self.path}: expected {_show(self.expected)}, got {_show(self.actual)}"


class _Missing:
    def __repr__(self) -> str:
        return "(nothing)"


_MISSING: Any = _Missing()


def not_a_trace(document: Any) -> str | None:
    """Why a document is not a schema-1 trace, or None when it is one."""
    if not isinstance(document, dict):
        return f"it is a JSON {type(document).__name__}, not a trace object"
    if document.get("schema") != SCHEMA:
        return f'its "schema" is {_show(document.get("schema", _MISSING))}, not {SCHEMA}'
    missing = [key for key in _REQUIRED if key not in document]
    if missing:
        return f"it has no {', '.join(repr(key) for key in missing)}: not a trace document"
    if not isinstance(document["steps"], list):
        return '"steps" is not a list'
    return None


def first_difference(expected: dict[str, Any], actual: dict[str, Any]) -> Difference | None:
    """The first place where `actual` differs from `expected`, or None when they are equal."""
    keep = {key: value for key, value in expected.items() if key not in _IGNORED}
    other = {key: value for key, value in actual.items() if key not in _IGNORED}
    found = _walk(keep, other, "")
    if found is None:
        return None
    path, want, got = found
    step = None
    if path.startswith("steps["):
        step = int(path[6 : path.index("]")])
    return Difference(path, want, got, step)


def _walk(expected: Any, actual: Any, path: str) -> tuple[str, Any, Any] | None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            found = _walk(value, actual.get(key, _MISSING), _join(path, key))
            if found is not None:
                return found
        extra = next((key for key in actual if key not in expected), None)
        return None if extra is None else (_join(path, extra), _MISSING, actual[extra])
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
            found = _walk(want, got, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            at = min(len(expected), len(actual))
            want = expected[at] if at < len(expected) else _MISSING
            got = actual[at] if at < len(actual) else _MISSING
            return f"{path}[{at}]", want, got
        return None
    same = type(expected) is type(actual) and expected == actual
    return None if same else (path, expected, actual)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _show(value: Any) -> str:
    """A value as the trace document writes it: JSON (null, true, 3, "text")."""
    if isinstance(value, str):
        return quote(value, 100)
    try:
        text = repr(value) if value is _MISSING else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
