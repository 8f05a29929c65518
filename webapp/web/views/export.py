"""View model of a stream as one self-contained HTML file (`/s/{id}/export.html`).

The file is what a teammate opens offline or attaches to a ticket: the summary, the anomalies,
the quirks and the intended reading, the notes, the blocks at the end, a timeline of the steps
and, for each step, its fragments (rule, reason, keys), events, anomalies, notes and the blocks
it changed. It needs no server: the stylesheet is inline, nothing is fetched, steps are
anchors (`#step-N`), and everything in it is escaped by the template. It is bounded: at most
`Settings.export_steps` steps (the first ones), each value clipped, each anomaly code's list
cut; `cut` says, in words, what was left out.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

from webapp.core.contract import QUIRK
from webapp.core.trace import Anomaly
from webapp.core.words import count, number
from webapp.storage.team import StoredNote
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.palette import RULES_CSS
from webapp.web.http.templating import STATIC
from webapp.web.http.text import Clipped, clipped
from webapp.web.views.panels import (
    BlockCard,
    FragmentDetail,
    State,
    detail,
    state,
    touched,
)
from webapp.web.views.timeline import Badge, Fact, badges, summary

VALUE_LIMIT = 300
"""A key's value, an event's field: characters kept (head and tail)."""
DELTA_LIMIT = 1_200
"""A step's delta as JSON: characters kept."""
ANOMALY_ITEMS = 50
"""The most anomalies listed under one code."""
QUIRK_STEPS = 20
"""The most steps listed for one quirk."""
NOTES_KEPT = 500
"""The most notes the file holds."""


@dataclass(frozen=True, slots=True)
class ExportStep:
    """One step: its row on the timeline, and what the detail and state panels show of it."""

    step: int
    line: int | None
    kind: str
    error: str | None
    note: str | None
    badges: tuple[Badge, ...]
    fragments: tuple[FragmentDetail, ...]
    """As the detail panel has them, each key's value clipped shorter."""
    events: tuple[str, ...]
    anomalies: tuple[Anomaly, ...]
    more_anomalies: tuple[tuple[str, int], ...]
    notes: tuple[StoredNote, ...]
    blocks: tuple[BlockCard, ...]
    """The blocks this step appended to, as of it."""
    delta: Clipped | None


@dataclass(frozen=True, slots=True)
class ExportGroup:
    """Every anomaly of one code (the first `ANOMALY_ITEMS`), and how many more there are."""

    code: str
    severity: str
    meaning: str
    items: tuple[Anomaly, ...]
    more: int


@dataclass(frozen=True, slots=True)
class ExportQuirk:
    """A place where the wire departs from the contract."""

    code: str
    meaning: str
    clause: str
    harm: str
    typically: str
    message: str
    steps: tuple[int, ...]
    more_steps: int


@dataclass(frozen=True, slots=True)
class Export:
    """Everything the file shows."""

    title: str
    where: str
    """The stream's page on the server it came from ("" when unknown)."""
    exported: str
    created: str
    policy: str
    path: str
    facts: tuple[Fact, ...]
    verdict: str
    headline: str
    """Both policies compared, their anomalies named."""
    intended: str
    groups: tuple[ExportGroup, ...]
    quirks: tuple[ExportQuirk, ...]
    notes: tuple[StoredNote, ...]
    final: State
    steps: tuple[ExportStep, ...]
    total_steps: int
    cut: tuple[str, ...]
    """What the file leaves out, in words (empty when it holds everything)."""

    @property
    def kept(self) -> frozenset[int]:
        """The steps the file holds (an anchor exists for each)."""
        return frozenset(step.step for step in self.steps)


def shorter(value: Clipped, limit: int) -> Clipped:
    """A clipped text clipped again to `limit` characters (head and tail)."""
    if not value.hidden:
        return clipped(value.head, limit)
    if len(value.head) + len(value.tail) <= limit:
        return value
    half = max(1, limit // 2)
    head, tail = value.head[:half], value.tail[-half:] if value.tail else ""
    hidden = value.hidden + len(value.head) - len(head) + len(value.tail) - len(tail)
    return Clipped(head, hidden, tail)


def _fragment(fragment: FragmentDetail) -> FragmentDetail:
    keys = tuple(replace(key, value=shorter(key.value, VALUE_LIMIT)) for key in fragment.keys)
    return replace(fragment, keys=keys)


def export_step(view: TraceView, step: int, notes: Sequence[StoredNote]) -> ExportStep:
    """One step of the file."""
    shown = detail(view, step)
    return ExportStep(
        step=step,
        line=shown.line,
        kind=shown.kind,
        error=shown.error,
        note=shown.note,
        badges=badges(view.trace, view.trace.steps[step]),
        fragments=tuple(_fragment(fragment) for fragment in shown.fragments),
        events=_events(view, step),
        anomalies=shown.anomalies,
        more_anomalies=shown.more_anomalies,
        notes=tuple(note for note in notes if note.step == step),
        blocks=touched(view, step),
        delta=None if shown.delta is None else shorter(shown.delta, DELTA_LIMIT),
    )


def _events(view: TraceView, step: int) -> tuple[str, ...]:
    """The step's events, each type once with how often it fired when more than once."""
    counts: dict[str, int] = {}
    for event in view.trace.steps[step].events:
        counts[event.type] = counts.get(event.type, 0) + 1
    return tuple(kind if n == 1 else f"{kind} \u00d7{number(n)}" for kind, n in counts.items())


def _groups(view: TraceView) -> tuple[ExportGroup, ...]:
    return tuple(
        ExportGroup(
            group.code,
            group.severity,
            group.meaning,
            group.items[:ANOMALY_ITEMS],
            max(0, len(group.items) - ANOMALY_ITEMS),
        )
        for group in view.anomaly_groups
    )


def _quirks(view: TraceView) -> tuple[ExportQuirk, ...]:
    contract = view.trace.contract
    if contract is None:
        return ()
    found = []
    for item in contract.quirks:
        quirk = QUIRK[item.code]
        found.append(
            ExportQuirk(
                code=item.code,
                meaning=quirk.meaning,
                clause=quirk.clause,
                harm=item.harm,
                typically=quirk.typically,
                message=item.message,
                steps=item.steps[:QUIRK_STEPS],
                more_steps=max(0, len(item.steps) - QUIRK_STEPS),
            )
        )
    return tuple(found)


def _intended(view: TraceView) -> str:
    contract = view.trace.contract
    if contract is None:
        return ""
    if contract.intended is not None:
        return f"The stream means: {contract.intended.describe()}"
    if contract.end is not None:
        return f"What this stream means is not read: {contract.why}"
    return f"The stream admits more than one reading: {contract.why}" if contract.why else ""


def export(
    view: TraceView,
    notes: Sequence[StoredNote],
    *,
    where: str,
    exported: str,
    verdict: str,
    headline: str,
    max_steps: int,
) -> Export:
    """The file's model: the first `max_steps` steps in full, everything else summarised."""
    total = len(view.trace.steps)
    kept = min(total, max_steps)
    cut = []
    if kept < total:
        cut.append(
            f"This file holds the first {count(kept, 'step')} of {number(total)}: steps "
            f"{number(kept)} to {number(total - 1)} are left out (the server's --export-steps "
            "bound); the blocks at the end, the anomalies and the quirks cover the whole stream."
        )
    groups = _groups(view)
    if any(group.more for group in groups):
        cut.append(f"Each anomaly code lists its first {number(ANOMALY_ITEMS)} places.")
    if len(notes) > NOTES_KEPT:
        cut.append(f"It holds the first {number(NOTES_KEPT)} of {count(len(notes), 'note')}.")
    head = summary(view)
    return Export(
        title=head.title,
        where=where,
        exported=exported,
        created=view.source.info.created,
        policy=view.options.policy,
        path=view.options.path,
        facts=head.facts,
        verdict=verdict,
        headline=headline,
        intended=_intended(view),
        groups=groups,
        quirks=_quirks(view),
        notes=tuple(notes[:NOTES_KEPT]),
        final=state(view, view.last),
        steps=tuple(export_step(view, step, notes) for step in range(kept)),
        total_steps=total,
        cut=tuple(cut),
    )


@cache
def stylesheet() -> str:
    """The file's own stylesheet, inlined in it: the rule colours
    (`webapp.web.http.palette`), then `static/export.css`."""
    return RULES_CSS + (STATIC / "export.css").read_text(encoding="utf-8")


def style_hash(css: str) -> str:
    """The CSP hash source (without its quotes) that allows exactly this inline stylesheet."""
    digest = hashlib.sha256(css.encode("utf-8")).digest()
    return f"sha256-{base64.b64encode(digest).decode('ascii')}"
