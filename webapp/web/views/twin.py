"""The view model of a captured stream's non-stream twin on its page: one line, "the
non-stream twin: same calls" or where it differs or how it failed, with links to the diff and
to the twin itself (`webapp.web.backend.capture.twin` holds it to the stream)."""

from __future__ import annotations

from dataclasses import dataclass

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
