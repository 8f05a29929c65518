"""What a stream page shows of the team's work: the title form, the notes (the page's list, the
step's own with the add-note form) and the marks of the noted steps."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from webapp.storage.team import Notes, StoredNote
from webapp.triage.report import verdict
from webapp.web.appstate import service_of, settings_of
from webapp.web.backend.team.notes import (
    MAX_AUTHOR,
    MAX_NOTE,
    no_room,
    note_bounds,
    note_url,
)
from webapp.web.backend.team.owners import author_token, may_delete_note, may_edit_note, owned
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS

NOTES_LISTED = 100
"""The most notes the stream page lists (by step); the report lists every one."""


@dataclass(frozen=True, slots=True)
class Header:
    """The title form, when the stream was created, and whether this browser may delete it."""

    stream_id: str
    title: str
    created: str
    step: int
    can_delete: bool
    parent: str
    parent_title: str = ""
    """The parent's title; "" when it was deleted."""

    @property
    def parent_url(self) -> str:
        """The page of the stream this one was minimised from."""
        return Links(self.parent, DEFAULTS).base


@dataclass(frozen=True, slots=True)
class ShownNote:
    """A note with its link, and whether this browser may edit or delete it."""

    note: StoredNote
    url: str
    mine: bool = False
    """This browser left it (its author token): it may edit and delete it."""
    removable: bool = False
    """This browser may delete it (its author, or the stream's owner)."""

    @property
    def edit_url(self) -> str:
        """Where the edit form posts."""
        return Links(self.note.stream_id, DEFAULTS).note(self.note.id)

    @property
    def delete_url(self) -> str:
        """Where the delete button posts."""
        return Links(self.note.stream_id, DEFAULTS).note_deletion(self.note.id)


@dataclass(frozen=True, slots=True)
class Team:
    """The page's title form, its notes, the unfurl text and the timeline's note marks."""

    header: Header
    all_notes: tuple[ShownNote, ...]
    notes_total: int
    noted: frozenset[int]
    unfurl: str
    team_links: dict[str, str]


@dataclass(frozen=True, slots=True)
class StepNotes:
    """The notes on one step, the add-note form's URL and limits, and the step's own link."""

    step_notes: tuple[ShownNote, ...]
    step_link: str
    add_note_url: str
    note_limits: dict[str, int]
    note_room: str | None
    """Why no note can be added on this step now, or None."""


def _shown(
    request: Request, stream_id: str, notes: list[StoredNote], delete_hash: str | None = None
) -> tuple[ShownNote, ...]:
    token = author_token(request)
    owner = owned(request).get(stream_id)
    return tuple(
        ShownNote(
            note,
            note_url(stream_id, note),
            may_edit_note(token, note.author_hash),
            may_delete_note(token, note.author_hash, owner, delete_hash),
        )
        for note in notes
    )


def notes_of(request: Request, view: TraceView) -> list[StoredNote]:
    """The stream's notes, read once for everything a page shows of them (each read of the
    store is a wait for the GIL while another thread computes)."""
    return Notes(service_of(request).storage).of(view.source.info.id)


def team_of(
    request: Request, view: TraceView, links: Links, step: int, notes: list[StoredNote]
) -> Team:
    """The title, the notes list (`notes`: the stream's), the unfurl text and the timeline's
    note marks."""
    info = view.source.info
    storage = service_of(request).storage
    parent = storage.info(info.parent) if info.parent else None
    header = Header(
        info.id,
        info.title or "Untitled stream",
        info.created.replace("T", " ").replace("+00:00", " UTC"),
        step,
        info.id in owned(request),
        info.parent,
        (parent.title or "Untitled stream") if parent is not None else "",
    )
    return Team(
        header=header,
        all_notes=_shown(request, info.id, notes[:NOTES_LISTED]),
        notes_total=len(notes),
        noted=frozenset(note.step for note in notes),
        unfurl=verdict(view.trace),
        team_links=_team_links(links),
    )


def step_notes_of(
    request: Request, view: TraceView, links: Links, step: int, notes: list[StoredNote]
) -> StepNotes:
    """The notes on this step (of `notes`, the stream's), the add-note form and the step's
    shareable link."""
    stream_id = view.source.info.id
    service = service_of(request)
    here = [note for note in notes if note.step == step]
    owner = bool(here) and stream_id in owned(request)
    delete_hash = service.storage.delete_hash(stream_id) if owner else None
    return StepNotes(
        step_notes=_shown(request, stream_id, here, delete_hash),
        step_link=links.step(step),
        add_note_url=links.notes,
        note_limits={"text": MAX_NOTE, "author": MAX_AUTHOR},
        note_room=no_room(len(notes), len(here), note_bounds(settings_of(request))),
    )


def noted_steps(request: Request, stream_id: str) -> frozenset[int]:
    """The steps that carry notes (for the timeline rows' marks)."""
    return frozenset(note.step for note in Notes(service_of(request).storage).of(stream_id))


def _team_links(links: Links) -> dict[str, str]:
    return {
        "report": links.report,
        "fixture": links.fixture,
        "delete": links.deletion,
        "title": links.title,
        "notes": links.notes,
    }
