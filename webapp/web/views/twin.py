"""The view models of the non-stream twin: on a captured stream's page, one line ("the
non-stream twin: same calls", where it differs, or how it failed) with links to the diff and to
the twin (`webapp.web.backend.capture.twin` holds it to the stream); and the page of a stored
non-stream answer itself, which has no step to follow: its calls, and the diff to read it in."""

from __future__ import annotations

import json
from dataclasses import dataclass

from webapp.core.contract.answer import Answer, answer_in, is_answer
from webapp.core.records import ReaderError, ReadResult
from webapp.web.backend.capture.twin import TwinSummary
from webapp.web.http.links import Links, diff_url
from webapp.web.http.query import DEFAULTS


@dataclass(frozen=True, slots=True)
class TwinPanel:
    """The line on the stream's page."""

    twin: TwinSummary
    diff_url: str
    """The stream and its twin side by side."""
    twin_url: str
    """The twin's own page (its bytes, its status)."""

    @property
    def state(self) -> str:
        """ "same", "differs" or "failed": the line's class."""
        if self.twin.same is None:
            return "failed"
        return "same" if self.twin.same else "differs"


def twin_panel(twin: TwinSummary | None, links: Links) -> TwinPanel | None:
    """The stream's twin line (None without a twin)."""
    if twin is None:
        return None
    return TwinPanel(twin, diff_url(links.stream_id, twin.id), Links(twin.id, DEFAULTS).base)


@dataclass(frozen=True, slots=True)
class AnswerPage:
    """The page of a stored non-stream answer: its calls, and the diff it is read in."""

    title: str
    answer: Answer | None
    why: str
    """Why its calls cannot be read ("" when they can)."""
    stream_url: str
    """The stream it is the twin of ("" when it is none's)."""
    diff_url: str
    """That stream and this answer side by side, else the page that picks a stream."""
    raw_url: str

    def pretty(self, arguments: str) -> str:
        """A call's arguments as indented JSON (as they came when they do not parse)."""
        try:
            return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
        except ValueError:
            return arguments


def answer_page(title: str, result: ReadResult, links: Links, twin_of: str) -> AnswerPage | None:
    """The page of a reading that is a non-stream answer (None when it is a stream)."""
    if not is_answer(result.records):
        return None
    try:
        answer, why = answer_in(result), ""
    except ReaderError as error:
        answer, why = None, str(error)
    stream = Links(twin_of, DEFAULTS).base if twin_of else ""
    diff = diff_url(twin_of, links.stream_id) if twin_of else links.compare_with
    return AnswerPage(title, answer, why, stream, diff, links.raw)
