"""The streams a HAR file holds, offered on its timeline: one link per event-stream entry, each
with its anomalies and quirks counted, and the entry a page opens on when its URL names none.

Counting an entry means reading and assembling it as its own page would (the service's views,
cached: a click on a counted entry reads nothing again). The first `COUNTED` entries are
counted, the rest are listed as not counted; the counts are cached per stream and options.
A page whose URL names no entry opens on the first entry with an error-level anomaly, else
the first with any anomaly or quirk, else the reader's default (the CLI and the API keep the
reader's default: a chat/completions entry with a body, the first).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from webapp.core.anomalies import severity_of
from webapp.core.words import count
from webapp.web.backend.memory.inflight import Busy
from webapp.web.backend.service import Service, Unreadable
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links

COUNTED = 12
"""Entries counted at most per file (each is read and assembled)."""


@dataclass(frozen=True, slots=True)
class Tally:
    """What an entry's trace holds: anomalies by severity and quirk codes; or why it was not
    counted."""

    errors: int = 0
    warnings: int = 0
    quirks: int = 0
    unread: str = ""

    @property
    def broken(self) -> bool:
        """Whether it has an anomaly or a quirk."""
        return bool(self.errors or self.warnings or self.quirks)

    @property
    def chips(self) -> tuple[tuple[str, str], ...]:
        """(class, words) of each count to show; none for a clean entry."""
        shown = (
            ("sev-error", self.errors, "error"),
            ("sev-warning", self.warnings, "warning"),
            ("quirk", self.quirks, "quirk"),
        )
        return tuple((kind, count(n, word)) for kind, n, word in shown if n)


@dataclass(frozen=True, slots=True)
class EntryLink:
    """One of the file's event-stream entries: its label, the link that reads it, if it is
    read, and its counts (None: not counted)."""

    number: int
    label: str
    detail: str
    url: str
    on: bool
    tally: Tally | None = None


@dataclass(frozen=True, slots=True)
class Picker:
    """The entries offered, how many were left uncounted, and why the one shown was opened
    (empty when the URL named it or it is the reader's default)."""

    links: tuple[EntryLink, ...]
    uncounted: int
    opened: str


def _listed(view: TraceView) -> list[tuple[int, str, str]]:
    """(number, label, detail) of the file's entries, when it has more than one."""
    found = [(e.number, e.label, e.detail) for e in view.source.found.entries if e.number]
    return found if len(found) > 1 else []


def _tally(view: TraceView) -> Tally:
    trace = view.trace
    severities = [severity_of(anomaly.code) for anomaly in trace.anomalies]
    errors = severities.count("error")
    quirks = len(trace.contract.codes) if trace.contract is not None else 0
    return Tally(errors, len(severities) - errors, quirks)


def tallies(service: Service, view: TraceView) -> dict[int, Tally]:
    """The first `COUNTED` entries' counts under the view's options (cached per stream); the
    entry `view` shows is counted from it."""
    info, options = view.source.info, view.options.canonical()
    key: Hashable = ("entry tallies", info.id, options, info.size)
    known = service.cache.peek(key)
    if isinstance(known, _Tallies):
        return known.found
    shown = view.source.found.meta.get("entry")
    found: dict[int, Tally] = {}
    complete = True
    for number, _, detail in _listed(view)[:COUNTED]:
        if detail:  # no body saved: nothing to read
            found[number] = Tally(unread=detail)
            continue
        try:
            entry = view if number == shown else service.view(info.id, options, number)
        except Unreadable:  # its own page says why, at length
            found[number] = Tally(unread="does not read: pick it to see why")
            continue
        except Busy:  # counted on a later visit, not kept as uncounted
            complete = False
            continue
        found[number] = _tally(entry)
    if complete:
        service.cache.get(key, lambda: _Tallies(found))
    return found


@dataclass(frozen=True, slots=True)
class _Tallies:
    found: dict[int, Tally]


def opening(service: Service, view: TraceView) -> int | None:
    """The entry a page whose URL names none opens on, when it is not the one `view` (the
    reader's default) shows: the first with an error, else the first with an anomaly or a
    quirk; None to stay."""
    if not _listed(view):
        return None
    found = tallies(service, view)
    errors = [n for n, tally in found.items() if tally.errors]
    broken = [n for n, tally in found.items() if tally.broken]
    chosen = (errors or broken)[:1]
    return chosen[0] if chosen and chosen[0] != view.source.found.meta.get("entry") else None


def picker(service: Service, view: TraceView, links: Links, named: bool) -> Picker | None:
    """The HAR's event-stream entries with their counts when it has more than one (else
    nothing to choose); `named`: whether the page's URL named the entry shown."""
    listed = _listed(view)
    if not listed:
        return None
    current = view.source.found.meta.get("entry")
    found = tallies(service, view)
    entry_links = tuple(
        EntryLink(
            number=number,
            label=label,
            detail=detail,
            url=links.with_entry(number).landing,  # each entry a stream: its findings first
            on=number == current,
            tally=found.get(number),
        )
        for number, label, detail in listed
    )
    return Picker(entry_links, len(listed) - len(found), _opened(entry_links, named))


def _opened(entries: tuple[EntryLink, ...], named: bool) -> str:
    """Why the entry shown was opened, when the page chose it for its anomalies."""
    shown = next((entry for entry in entries if entry.on), None)
    tally = shown.tally if shown is not None else None
    if named or shown is None or tally is None or not tally.broken:
        return ""
    before = [
        e for e in entries if e.number < shown.number and e.tally is not None and not e.tally.unread
    ]
    if not before:
        return ""
    what = "errors" if tally.errors else "anomalies or quirks"
    name = _name(shown)
    clean = [e for e in before if e.tally is not None and not e.tally.broken]
    if len(clean) == len(before):
        said = f"{_names(before)} {'is' if len(before) == 1 else 'are'} clean"
    else:
        said = f"{_names(before)} {'has' if len(before) == 1 else 'have'} no {what}"
    of = len(entries)
    return f"Showing {name}, the first of the {of} event streams with {what}; {said}."


def _name(entry: EntryLink) -> str:
    """The entry's name, its label up to the colon: `entry 3` (a cassette's `interaction 3`)."""
    return entry.label.split(":", 1)[0]


def _names(entries: list[EntryLink]) -> str:
    names = [_name(entry) for entry in entries]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
