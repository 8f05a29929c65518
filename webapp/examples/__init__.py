"""Built-in example streams that teach decision 0019, looked up by key (never by a user's path).

Each example's story is kept beside its stream (`KEY.story.json`): the one line it tells, the
page it opens on (`timeline` or `compare`), the step that matters, a sentence or two for
each key step, and, for one taken from a public thread, its `origin` (title, URL, how it was
made from it). `TOUR` is the teaching order; `RECORD` is decision 0019's text, copied here
unchanged because the app cannot read the shared folder at run time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from webapp.core.options import Options

_FOLDER = Path(__file__).parent
Opens = Literal["timeline", "compare"]


@dataclass(frozen=True, slots=True)
class Origin:
    """The public thread an example comes from: its title, its URL, and how it was made."""

    title: str
    url: str
    note: str


@dataclass(frozen=True, slots=True)
class Story:
    """What an example tells: one line, the page and step it opens at, and per-step narration."""

    line: str
    opens: Opens
    start_step: int
    steps: MappingProxyType[int, str]
    origin: Origin | None = None

    def at(self, step: int) -> str | None:
        """The narration of `step`, or None when the story says nothing there."""
        return self.steps.get(step)


def _story(path: Path) -> Story:
    doc = json.loads(path.read_text(encoding="utf-8"))
    opens = doc["opens"]
    if opens not in ("timeline", "compare"):
        raise ValueError(f"{path.name}: opens must be timeline or compare")
    steps = {int(step): str(text) for step, text in doc["steps"].items()}
    origin = doc.get("origin")
    if origin is not None and not str(origin.get("url", "")).startswith("https://"):
        raise ValueError(f"{path.name}: an origin's url must be https://")
    found = None if origin is None else Origin(str(origin["title"]), str(origin["url"]),
                                               str(origin.get("note", "")))  # fmt: skip
    return Story(str(doc["story"]), opens, int(doc["start_step"]), MappingProxyType(steps), found)


@dataclass(frozen=True, slots=True)
class Example:
    """One example: its file, what it shows in one line, and the options it opens with."""

    key: str
    title: str
    shows: str
    filename: str
    options: Options = field(default_factory=Options)

    def data(self) -> bytes:
        """The example's bytes."""
        return (_FOLDER / self.filename).read_bytes()

    @property
    def story(self) -> Story:
        """The story kept beside the stream (`KEY.story.json`), read once."""
        return _read_story(self.key)


@cache
def _read_story(key: str) -> Story:
    return _story(_FOLDER / f"{key}.story.json")


_ALL = (
    Example(
        "clean",
        "A clean call",
        "One call: a header with index, id and name, then arguments by index; every rule is "
        "an exact match.",
        "clean.sse",
    ),
    Example(
        "continuation",
        "Continuation chunks",
        "Argument-only chunks with no index, id or name: one call under decision 0019, three "
        "phantom calls under exact-key.",
        "continuation.sse",
    ),
    Example(
        "dropped",
        "A continuation with nothing open",
        "A bare argument fragment arrives before any call opened: decision 0019 drops it "
        "instead of inventing a nameless call.",
        "dropped.sse",
    ),
    Example(
        "backfill",
        "A nameless header with an id",
        "A fragment with an id but no name opens a call (never a continuation); a later "
        "fragment with that id backfills its name.",
        "backfill.sse",
    ),
    Example(
        "interleaved",
        "Interleaved parallel calls",
        "Two calls on indexes 0 and 1, their arguments interleaved: exact-index keeps them apart.",
        "interleaved.sse",
    ),
    Example(
        "index-no-id",
        "Interleaved pieces with an index, no id",
        "Two calls open with ids, then each one's arguments come with only its index: "
        "exact-index places each piece; a rule that used only the most recently opened call "
        "would send both to the second (continuedev/continue #13223).",
        "index-no-id.sse",
    ),
    Example(
        "ambiguous",
        "A continuation with two calls open",
        "Two headers open get_weather and book_flight, then bare argument chunks arrive: "
        "decision 0019 sends them to book_flight, the most recently opened, and get_weather "
        "is called with {}. streamviz flags the guess.",
        "ambiguous.sse",
    ),
    Example(
        "same-index",
        "Parallel calls all on index 0",
        "A second call reuses index 0 with a new id: exact-index wins, so it lands on the first "
        "call (id and name conflicts) under either policy.",
        "same-index.sse",
    ),
    Example(
        "empty-ids",
        'Empty "" ids',
        'Continuation chunks carry "id": "", which counts as no id: continuations under '
        "decision 0019, phantom calls under exact-key.",
        "empty-ids.sse",
    ),
    Example(
        "server-late",
        "Server tools: a late fragment",
        "On the server-tools path a search call completes and folds; a late fragment with its "
        "index can no longer corrupt it and is flagged.",
        "server-late.sse",
        Options(path="server-tools", server_tools=("openrouter:*",)),
    ),
)

EXAMPLES: MappingProxyType[str, Example] = MappingProxyType({e.key: e for e in _ALL})
"""Every built-in example by key, in gallery order."""

TOUR: tuple[str, ...] = (
    "clean",
    "continuation",
    "dropped",
    "backfill",
    "empty-ids",
    "same-index",
    "interleaved",
    "index-no-id",
    "ambiguous",
    "server-late",
)
"""The examples in teaching order (the guided tour)."""


def decision() -> str:
    """Decision record 0019's Markdown text, as handed to the project."""
    return (_FOLDER / "decision-0019.md").read_text(encoding="utf-8")
