"""The view models of a capture's banners: a live one's (what has arrived, how the page keeps
up) and its non-stream twin's; and the page of a stored non-stream answer.

While a capture is live its page follows the latest chunk (the stage shows the last record,
the state after it, the timeline its last rows) unless the user chose a step (`step` in the
URL, or a row clicked): then it stays there while the rest keeps growing. The page polls
`Links.live` every `poll_ms` (htmx, sending the chosen step from `#live-pin`); without
JavaScript the banner's Refresh link does the same. Anomalies reported at the end step are
judged as if the stream ended where it has got to: the banner names them as provisional, and
the rest of the page leaves them out (`webapp.web.backend.capture.live.so_far`).

A capture's non-stream twin (`serve --twin`) is one line ("the non-stream twin: same calls",
where it differs, or how it failed) with links to the diff and to the twin
(`webapp.web.backend.capture.twin` holds it to the stream). A stored answer's page has no step
to follow: its calls, and the diff to read it in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from webapp.core.contract.answer import Answer, answer_in, is_answer
from webapp.core.records import ReaderError, ReadResult
from webapp.core.words import count, number
from webapp.storage.capture import Capture
from webapp.web.backend.capture.live import Live
from webapp.web.backend.capture.twin import TwinSummary
from webapp.web.http.links import Links, diff_url
from webapp.web.http.query import DEFAULTS
from webapp.web.views.timeline import RunRow, Window
from webapp.web.views.timing import duration


@dataclass(frozen=True, slots=True)
class LivePanel:
    """The live banner and the poll it drives."""

    upstream: str
    model: str
    started: str
    records: int
    size: int
    behind: int
    every: str
    """How often the view is made again, in words, when that is slower than the polls."""
    poll_url: str
    poll_ms: int
    refresh_url: str
    follow_url: str | None
    """The page following the latest chunk again (None when it already does)."""
    pinned: int | None
    provisional: tuple[str, ...]
    """The codes of the anomalies at the end step (judged as if the stream had ended), which
    the page does not show elsewhere."""

    @property
    def said(self) -> str:
        """What has arrived, in words."""
        if not self.size:
            return "waiting for the first bytes of the response"
        if not self.records:
            return f"{count(self.size, 'byte')} so far, no complete record yet"
        shown = f"{count(self.records, 'record')} so far ({count(self.size, 'byte')})"
        if self.behind:
            shown += f"; {number(self.behind)} more bytes have arrived, shown {self.every}"
        return shown


def following_step(live: Live) -> int:
    """The step a live page shows when the user chose none: the last record (the end step
    has not come yet), or step 0 before any."""
    return max(0, live.view.source.records - 1)


def live_panel(
    live: Live, links: Links, step: int, *, pinned: bool, poll_ms: int
) -> LivePanel | None:
    """The banner of a live capture's page (None when the stream is not live)."""
    capture = live.capture
    if capture is None or not live.live:
        return None
    view = live.view
    end = view.last
    provisional = tuple(sorted({anomaly.code for anomaly in view.anomalies_by_step.get(end, ())}))
    every = f"every {duration(live.every * 1000)}" if live.every * 1000 > poll_ms else "soon"
    return LivePanel(
        upstream=capture.facts.upstream,
        model=capture.facts.model,
        started=_shown(capture.started),
        records=view.source.records,
        size=live.size,
        behind=live.behind,
        every=every,
        poll_url=links.live(live.size),
        poll_ms=poll_ms,
        refresh_url=links.step(step) if pinned else links.following,
        follow_url=links.following if pinned else None,
        pinned=step if pinned else None,
        provisional=provisional,
    )


def waiting_panel(capture: Capture, links: Links, size: int, poll_ms: int) -> LivePanel:
    """The banner of a live capture none of whose `size` bytes read as a record yet."""
    return LivePanel(
        upstream=capture.facts.upstream,
        model=capture.facts.model,
        started=_shown(capture.started),
        records=0,
        size=size,
        behind=0,
        every="soon",
        poll_url=links.live(size),
        poll_ms=poll_ms,
        refresh_url=links.following,
        follow_url=None,
        pinned=None,
        provisional=(),
    )


def _shown(started: str) -> str:
    """`2026-12-05 01:36:39 UTC` (a capture's start is kept to the microsecond)."""
    return started[:19].replace("T", " ") + " UTC"


def unread_capture(capture: Capture, why: str) -> str:
    """What the page of an ended capture none of whose bytes read says: what the upstream
    answered, and why it is no stream (`why`: the reader's refusal)."""
    facts = capture.facts
    kind = facts.content_type or "no content type"
    return (
        f"This capture holds no stream streamviz can read: upstream {facts.upstream} answered "
        f"{facts.method} {facts.path} with {facts.status} ({kind}); the capture is "
        f"{capture.state}. {why[:1].upper()}{why[1:]}"
    )


def arriving(window: Window, live: bool) -> Window:
    """The timeline rows of a live stream without its provider quirks: they are judged on the
    whole stream (a call's arguments cut short, no finish_reason), whose end has not come."""
    if not live:
        return window
    rows = tuple(
        replace(row, quirk_steps=0) if isinstance(row, RunRow) else replace(row, quirks=())
        for row in window.rows
    )
    return replace(window, rows=rows)


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
