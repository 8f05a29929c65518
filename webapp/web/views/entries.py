"""The streams a HAR file holds, offered on its timeline: one link per event-stream entry."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.web.backend.traceview import TraceView
from webapp.web.links import Links


@dataclass(frozen=True, slots=True)
class EntryLink:
    """One of the file's event-stream entries: its label, the link that reads it, if it is read."""

    number: int
    label: str
    detail: str
    url: str
    on: bool


def entries(view: TraceView, links: Links) -> tuple[EntryLink, ...]:
    """The HAR's event-stream entries when it has more than one (else nothing to choose)."""
    result = view.source.found
    listed = [entry for entry in result.entries if entry.number is not None]
    if len(listed) < 2:
        return ()
    current = result.meta.get("entry")
    return tuple(
        EntryLink(
            number=entry.number,
            label=entry.label,
            detail=entry.detail,
            url=links.with_entry(entry.number).step(0),
            on=entry.number == current,
        )
        for entry in listed
        if entry.number is not None
    )
