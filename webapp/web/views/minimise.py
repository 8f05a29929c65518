"""View models of minimising on a stream's page: the section, the form's choices, a job's state.

The stream page shows a Minimise section that costs no assembly: a link (and, with htmx, a
fetch when it is opened) to the form, and the job running for the stream, if any. The form
(`control`) lists what a job can keep: first (the default) the stream's fingerprint, which
keeps the bug and not only its code (`webapp.triage.fingerprint`), then the anomalies under
each policy, the page's first, and the policies' difference when there is one. A job
minimises the HAR entry on screen. A job runs on the client path with the
default choice, so listing another policy's anomalies takes that view: for a small stream
it is made when the form is opened; a large one's is listed only when cached (a page never
makes a second large trace), else the form links to the page that lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from webapp.core.options import Options
from webapp.core.rules import POLICIES, Policy
from webapp.core.words import article, count
from webapp.storage.jobs import Job
from webapp.triage.predicates import FINGERPRINT
from webapp.web.backend.jobs.minimise import DIFFERS, NO_BUG, policies_differ, shows_a_bug
from webapp.web.backend.service import Service
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.links import Links
from webapp.web.http.query import DEFAULTS

PHASES = ("records", "fragments", "members", "ending", "done")
DIFFERS_CHECK_STEPS = 20_000
"""Up to this many steps the form compares the policies to offer "the policies differ"; a
larger stream offers it unchecked (starting checks it, from the same cached comparison)."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One property the control offers: `POLICY UNTIL` as the form sends it, and its label."""

    value: str
    label: str


@dataclass(frozen=True, slots=True)
class Group:
    """The choices under one policy (or the policies' difference)."""

    label: str
    choices: tuple[Choice, ...]


@dataclass(frozen=True, slots=True)
class Control:
    """The Minimise form of a stream page."""

    action: str
    groups: tuple[Group, ...]
    budget: int
    job: JobView | None
    listed_at: str = ""
    """The page that lists the anomalies a job can keep, when this one does not (a large stream
    shown on other options than a job's); empty when it does."""
    nothing: str = ""
    """Why the fingerprint is not offered when the stream holds no bug (`NO_BUG`); else empty."""


@dataclass(frozen=True, slots=True)
class JobView:
    """A job as the progress fragment shows it."""

    job: Job

    @property
    def url(self) -> str:
        """The fragment's own URL (polled while running)."""
        return Links(self.job.stream_id, DEFAULTS).job(self.job.id)

    @property
    def stream_url(self) -> str:
        """The original stream's page."""
        return Links(self.job.stream_id, DEFAULTS).base

    @property
    def cancel_url(self) -> str:
        """Where Cancel posts."""
        return Links(self.job.stream_id, DEFAULTS).job_cancel(self.job.id)

    @property
    def result_url(self) -> str:
        """The minimised stream's page, under the policy the property was kept under."""
        return Links(self.job.result, DEFAULTS).opened_under(self.job.policy)

    @property
    def what(self) -> str:
        """The property, in words (and the HAR entry minimised, when one was named)."""
        entry = "" if self.job.har_entry is None else f", of HAR entry {self.job.har_entry}"
        if self.job.until == DIFFERS:
            return f"exact-key and adr-0019 differ{entry}"
        if self.job.until == FINGERPRINT:
            return (f"the stream's fingerprint (its quirks, its anomalies under {self.job.policy} "
                    f"and both policies' grades){entry}")  # fmt: skip
        kind, _, name = self.job.until.partition(":")
        shown = (
            f"{article(name)} anomaly" if kind == "anomaly" else f"a fragment taking rule {name}"
        )
        return f"{shown} under {self.job.policy}{entry}"

    @property
    def removed(self) -> int:
        """Records removed so far."""
        return max(self.job.total - self.job.records, 0)

    @property
    def elapsed(self) -> float:
        """Seconds elapsed: as last written, or since the start while running (any worker)."""
        written = self.job.elapsed_ms / 1000
        if not self.job.running:
            return written
        try:
            started = datetime.fromisoformat(self.job.started)
        except ValueError:
            return written
        since = (datetime.now(UTC) - started).total_seconds()
        return max(written, min(since, float(self.job.budget)))

    @property
    def seconds(self) -> str:
        """Seconds elapsed, one decimal."""
        return f"{self.elapsed:.1f}"

    @property
    def phase_number(self) -> int:
        """The pass that last reported, 1 to 4."""
        phase = self.job.phase or "records"
        return min(PHASES.index(phase) + 1 if phase in PHASES else 1, 4)


@dataclass(frozen=True, slots=True)
class Section:
    """The Minimise section of a stream page: where its form is, and the job running."""

    form_url: str
    job: JobView | None


def section(links: Links, running: Job | None) -> Section | None:
    """The page's section (None on a built-in example, which cannot be minimised here)."""
    if links.example:
        return None
    return Section(links.page.minimise_form, JobView(running) if running is not None else None)


def control(
    service: Service, view: TraceView, links: Links, budget: int, running: Job | None
) -> Control:
    """The Minimise form for the page of `view`: its choices, grouped."""
    stream_id = view.source.info.id
    entry = view.source.har_entry
    large = len(view.trace.steps) > DIFFERS_CHECK_STEPS
    first = view.options.policy
    groups = []
    unseen = False
    kept, nothing = _fingerprint_group(service, view, first, large)
    if kept is not None:
        groups.append(kept)
    for policy in [first] if large else [first, *(p for p in POLICIES if p != first)]:
        # A job runs on the client path with the default choice: this page's own view when it
        # is that one; else the view of those options, made here only for a small stream (a
        # large one is taken only if cached, so a page never assembles a second large trace).
        seen = _view_for(service, view, policy, large)
        if seen is None:
            unseen = True
            continue
        choices = tuple(
            Choice(f"{policy} anomaly:{group.code}", f"{group.code} ({group.severity}, "
                   f"{count(len(group.items), 'time')})")
            for group in seen.anomaly_groups
        )  # fmt: skip
        if choices:
            groups.append(Group(f"an anomaly under {policy}", choices))
    if large or policies_differ(service, stream_id, entry):
        differs = Choice(f"{first} {DIFFERS}", "exact-key and adr-0019 differ")
        groups.append(Group("the policies' difference", (differs,)))
    return Control(
        action=links.minimise,
        groups=tuple(groups),
        budget=budget,
        job=JobView(running) if running is not None else None,
        listed_at=Links(stream_id, Options(policy=first), entry).landing if unseen else "",
        nothing=nothing,
    )


def _view_for(service: Service, view: TraceView, policy: Policy, large: bool) -> TraceView | None:
    """The client-path view under `policy` a job would see, of the page's HAR entry."""
    wanted = Options(policy=policy)
    entry = view.source.har_entry
    if view.options.canonical() == wanted:
        return view
    if large:
        return service.cached_view(view.source.info.id, wanted, entry)
    return service.view(view.source.info.id, wanted, entry)


def _fingerprint_group(
    service: Service, view: TraceView, policy: Policy, large: bool
) -> tuple[Group | None, str]:
    """The first choice: the fingerprint (the bug, not only its code), when it holds one; else
    why not, in words, when the stream is known to hold no bug."""
    seen = _view_for(service, view, policy, large)
    if seen is None:
        return None, ""
    contract = seen.trace.contract
    quirks = sorted(contract.codes) if contract is not None else []
    anomalies = sorted({anomaly.code for anomaly in seen.trace.anomalies})
    if not large and not shows_a_bug(service, view.source.info.id, seen, view.source.har_entry):
        return None, NO_BUG
    parts = [f"quirks {', '.join(quirks)}" if quirks else "no quirk"]
    parts.append(f"anomalies {', '.join(anomalies)}" if anomalies else "no anomaly")
    label = f"the fingerprint: {'; '.join(parts)}; both policies' grades"
    return Group("the bug itself (the default)", (Choice(f"{policy} {FINGERPRINT}", label),)), ""
