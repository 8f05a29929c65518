"""The clients page's view model: the headline, every column graded, where to file, the matrix.

The verdict (`webapp.triage.verdict.Verdict`) is the one `streamviz clients` prints and the API
returns; this only arranges it for the page: the headline first (who broke the contract, each
grade's clients), one grade row per column (each client library with its package and version,
then this build's two policies) with what it gets, one section per party to file with and its
evidence, the quirks with their steps as links, what the stream means, and the matrix of calls
below with its comparison. Each says its own thing once.
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.core.words import count
from webapp.lenses.matrix import Matrix
from webapp.lenses.pins import BY_CLIENT, CLIENTS
from webapp.triage.verdict import BUILD, GRADES, Graded, Party, Verdict
from webapp.web.http.links import Links
from webapp.web.http.text import clipped_head, one_line
from webapp.web.views.quirks import QuirkPanel, panel

NOT_RUN = "not run"
DETAIL_SHOWN = 600
"""A grade's detail is clipped to this many characters on the page (the JSON has it whole)."""
EVIDENCE_SHOWN = 40
"""Lines of a party's evidence shown; the rest are counted (report.md has them all)."""


@dataclass(frozen=True, slots=True)
class GradeRow:
    """One column's grade as the page shows it."""

    client: str
    package: str
    """The package the lens runs (`@earendil-works/pi-ai`); "streamviz" for a policy."""
    version: str
    grade: str
    """intact, damaged, flagged, guessed, or "not run"."""
    meaning: str
    """What the grade means, in words."""
    detail: str
    """What the application gets (or why the client did not run)."""
    policy: bool


@dataclass(frozen=True, slots=True)
class FileWith:
    """One party to file with, and the evidence ready to paste."""

    kind: str
    name: str
    says: str
    evidence: str
    lines: int
    """How many lines the evidence holds (it is folded under its summary)."""
    url: str | None
    """The tracker's prefilled new-issue link, or the provider's support or status page."""
    tracker: str
    """Where the link leads, in words; "" when the party is not in the table."""
    prefilled: bool
    """Whether the link carries the text (else it opens the form with the title only)."""
    text: str
    """The text to file, whole (at most 2,000 characters)."""


@dataclass(frozen=True, slots=True)
class ClientsView:
    """The clients page once the lenses ran."""

    headline: str
    """At most 400 characters (`webapp.triage.headline`), the JSON's "verdict"."""
    grades: tuple[GradeRow, ...]
    parties: tuple[FileWith, ...]
    unfiled: str
    """Why there is nothing to file, when there is no party."""
    quirks: QuirkPanel
    matrix: Matrix | None
    comparison: str
    """The matrix's own line: which clients get which call wrong, against what the stream
    means (with no intended reading, how many different choices they make)."""
    legend: str
    """What the matrix's rows are and what `≠` marks."""


def clients_view(verdict: Verdict, links: Links) -> ClientsView:
    """The page's view of a verdict; step links under `links` (the HAR entry on screen)."""
    matrix = verdict.matrix
    return ClientsView(
        headline=one_line(verdict.headline),  # whole: the page, the CLI and the API agree
        grades=tuple(_row(graded) for graded in verdict.grades),
        parties=tuple(_party(party) for party in verdict.parties),
        unfiled=verdict.unfiled,
        quirks=panel(verdict.contract, links),
        matrix=matrix,
        comparison=one_line(matrix.comparison) if matrix is not None else "",
        legend=matrix.legend if matrix is not None else "",
    )


def _row(graded: Graded) -> GradeRow:
    pin = BY_CLIENT.get(graded.client)
    policy = graded.client not in CLIENTS
    package = pin.package if pin is not None else "streamviz"
    grade = graded.grade or NOT_RUN
    meaning = (
        GRADES[graded.grade]
        if graded.grade is not None
        else "it stopped at a limit streamviz sets, so it is not graded"
        if graded.limited
        else "it reads chat-completions streams, and this stream is another API's own, so it "
        "is not run"
        if graded.skipped
        else "the library is not installed"
    )
    version = graded.version if graded.version != BUILD else BUILD
    return GradeRow(graded.client, package, version, grade, meaning, _clip(graded.detail),
                    policy)  # fmt: skip


def _party(party: Party) -> FileWith:
    lines = [_clip(line) for line in party.evidence[:EVIDENCE_SHOWN]]
    if len(party.evidence) > EVIDENCE_SHOWN:
        more = len(party.evidence) - EVIDENCE_SHOWN
        lines.append(f"... and {count(more, 'more line')} (report.md has them all)")
    return FileWith(party.kind, party.name, _clip(party.says), "\n".join(lines),
                    len(party.evidence), party.url, party.tracker, party.prefilled,
                    party.text)  # fmt: skip


def _clip(text: str) -> str:
    cut = clipped_head(one_line(text), DETAIL_SHOWN)
    return cut.head + ("…" if cut.hidden else "")
