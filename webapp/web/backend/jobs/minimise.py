"""Minimise a stored stream from the page or the API: a bounded background job, kept in the store.

The search (`webapp.triage.minimise`) runs in a thread of the worker that was asked, at most
`Settings.minimise_jobs` at once per worker and for at most `Settings.minimise_seconds`; its
progress, a cancel request and the result live in the store (`webapp.storage.jobs`), so any
worker answers a poll. The result is stored as a new stream whose `parent` is the original.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from webapp.core.options import Options
from webapp.core.readers import read
from webapp.core.records import Record
from webapp.core.rules import POLICIES, Policy
from webapp.lenses.ours import trace_result
from webapp.storage.jobs import Job, Jobs
from webapp.storage.owners import gone, owner_tag
from webapp.triage.minimise import Progress, PropertyDoesNotHold, minimise
from webapp.triage.predicates import FINGERPRINT, Until, parse_until, traces_differ
from webapp.triage.verdict import grade
from webapp.web.backend.example_source import example_of
from webapp.web.backend.intake.ingest import Prepared
from webapp.web.backend.library import indexing
from webapp.web.backend.memory.inflight import Ticket
from webapp.web.backend.service import LIGHT_BELOW, Service
from webapp.web.backend.team.notes import Invalid
from webapp.web.backend.trace.view import TraceView
from webapp.web.http.text import as_sse, stream_title

log = logging.getLogger(__name__)
WRITE_EVERY = 0.5
"""A running job writes its progress to the store (and reads its cancel flag) this often, s."""
DIFFERS = "differs"
BUILT_IN = (
    "a built-in example is served from the package and cannot be minimised here: "
    "store a copy (edit a copy, then store it) or run `streamviz minimise`"
)
NO_BUG = (
    "nothing to minimise: this stream shows no quirk and no anomaly, and both policies read it "
    "as it means, so its fingerprint holds no bug to keep"
)
"""Why a clean stream's fingerprint is not offered, or refused (as `streamviz minimise` says)."""
Spawn = Callable[[Callable[[], None]], None]
MINIMISE_PER_BYTE = 44
"""Heap bytes a minimise job holds per stored byte of its stream, at most (measured: 2 jobs on
an 8.4 MB stream took a worker from 204 to 933 MB); a job takes that weight from the budget of
traces being made (`Gate.inflight`, `--cache-mb`) for as long as it runs."""


INTERRUPTED = (
    "interrupted: the server running it stopped (a restart?) before it ended; nothing was "
    "stored, start it again"
)


def interrupt_orphans(service: Service) -> int:
    """At a server's start: the jobs left running by this host's processes that are gone (the
    server stopped or crashed mid-job) end as interrupted, and say so on their page; another
    host's, or a live sibling worker's, are left alone. How many were ended."""
    jobs = Jobs(service.storage)
    host = socket.gethostname()
    stopped = [job_id for job_id, owner in jobs.owners(host).items() if gone(owner, host)]
    return jobs.interrupt(stopped, INTERRUPTED)


class Busy(RuntimeError):
    """This worker already runs as many minimise jobs as it may (a 503)."""


class _Cancelled(Exception):
    pass


def _thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="minimise", daemon=True).start()


def chunks_in(records: Sequence[Record]) -> int:
    """How many of the records are chunks."""
    return sum(1 for record in records if record.kind == "chunk")


@dataclass(frozen=True, slots=True)
class Checked:
    """A request to minimise that can run: the stream's records and the property to keep."""

    stream_id: str
    title: str
    records: Sequence[Record]
    until: Until
    policy: str
    har_entry: int | None = None
    """The HAR file's entry minimised (None: the reader's default)."""
    size: int = 0
    """The stored stream's bytes (what the job's weight is estimated from)."""


def check(
    service: Service,
    stream_id: str,
    until_text: object,
    policy: object,
    har_entry: int | None = None,
) -> Checked:
    """The request checked against the stream, or its HAR entry `har_entry` (NotFound, or
    Invalid saying what is wrong)."""
    info = service.info(stream_id)
    if example_of(stream_id) is not None:
        raise Invalid(BUILT_IN)
    if not isinstance(policy, str) or policy not in POLICIES:
        raise Invalid(f"policy must be one of {', '.join(POLICIES)}, not {policy!r}")
    if not isinstance(until_text, str) or not until_text:
        raise Invalid("say what to keep: until is fingerprint, anomaly:CODE, differs or rule:RULE")
    options = Options(policy=policy)
    if until_text != FINGERPRINT:
        try:
            parse_until(until_text, options)  # an unknown code or rule, in words
        except ValueError as error:
            raise Invalid(str(error)) from error
    _holds(service, stream_id, until_text, options, har_entry)
    records = service.reading(stream_id, har_entry).result.records
    try:
        until = parse_until(until_text, options, records)
    except ValueError as error:
        raise Invalid(str(error)) from error
    title = stream_title(info) + ("" if har_entry is None else f" (HAR entry {har_entry})")
    return Checked(stream_id, title, records, until, policy, har_entry, info.size)


def _holds(
    service: Service, stream_id: str, until_text: str, options: Options, har_entry: int | None
) -> None:
    """Invalid unless the stream itself shows the property (from the cached traces)."""
    kind, _, name = until_text.partition(":")
    if until_text == DIFFERS:
        if not policies_differ(service, stream_id, har_entry):
            raise Invalid(
                "exact-key and adr-0019 agree on this stream (same steps, same calls): "
                "there is no difference to keep"
            )
        return
    view = service.view(stream_id, options, har_entry)
    if until_text == FINGERPRINT:
        if not shows_a_bug(service, stream_id, view, har_entry):
            raise Invalid(NO_BUG)
        return
    if kind == "anomaly":
        codes = sorted({anomaly.code for anomaly in view.trace.anomalies})
        if name not in codes:
            shown = ", ".join(codes) if codes else "none"
            raise Invalid(
                f"this stream shows no {name} anomaly under {options.policy} (it shows: {shown})"
            )
    elif not view.rule_steps.get(name):
        raise Invalid(f"no fragment of this stream takes rule {name} under {options.policy}")


def policies_differ(service: Service, stream_id: str, har_entry: int | None = None) -> bool:
    """exact-key and adr-0019 disagree on the stream (`webapp.triage.predicates.traces_differ`),
    judged from the two cached (or stored) trace views, not from a comparison."""
    left = service.view(stream_id, Options(policy="exact-key"), har_entry).trace
    right = service.view(stream_id, Options(policy="adr-0019"), har_entry).trace
    return traces_differ(left, right)


def shows_a_bug(
    service: Service, stream_id: str, view: TraceView, har_entry: int | None = None
) -> bool:
    """The stream's fingerprint holds something to keep: a quirk, an anomaly under the view's
    policy, or a policy that does not read it as it means (its two client-path views, cached)."""
    contract = view.trace.contract
    if view.trace.anomalies or (contract is not None and contract.quirks):
        return True
    intended = contract.intended if contract is not None else None
    for policy in POLICIES:
        trace = service.view(stream_id, Options(policy=policy), har_entry).trace
        if grade(trace_result(trace), intended).grade != "intact":
            return True
    return False


class Minimiser:
    """Starts minimise jobs in threads, bounded per worker; their state is in the store."""

    def __init__(
        self,
        service: Service,
        budget: int,
        at_once: int,
        spawn: Spawn = _thread,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.service = service
        self.jobs = Jobs(service.storage)
        self.budget = budget
        self.spawn = spawn
        self.clock = clock
        self._slots = threading.BoundedSemaphore(at_once)

    def start(self, checked: Checked) -> Job:
        """A new job (or the one already running for this stream, property and policy)."""
        return self.start_owned(checked, "")[0]

    def start_owned(self, checked: Checked, delete_hash: str) -> tuple[Job, bool]:
        """`start`, and whether the job is new: then its result is stored with `delete_hash`,
        so that whoever asked for it can delete it (the job already running keeps its own)."""
        self.jobs.sweep(self.budget)
        running = self.jobs.running(
            checked.stream_id, checked.until.text, checked.policy, checked.har_entry
        )
        if running is not None:
            return running, False
        if not self._slots.acquire(blocking=False):
            raise Busy("this server is already minimising as many streams as it may")
        try:
            ticket = self._weigh(checked)  # inflight.Busy (a 503) when the budget stays full
        except BaseException:
            self._slots.release()
            raise
        try:
            job, new = self.jobs.start(
                checked.stream_id,
                checked.until.text,
                checked.policy,
                len(checked.records),
                chunks_in(checked.records),
                self.budget,
                checked.har_entry,
                owner_tag(),
            )
        except BaseException:
            self._end(ticket)
            raise
        if not new:
            self._end(ticket)
            return job, False
        try:
            self.spawn(lambda: self._run(job.id, checked, delete_hash, ticket))
        except BaseException:
            self._end(ticket)
            self.jobs.finish(job.id, status="failed", tests=0, records=job.total, elapsed_ms=0,
                             error="could not start a thread")  # fmt: skip
            raise
        found = self.jobs.get(job.id)
        return (found if found is not None else job), True

    def _weigh(self, checked: Checked) -> Ticket | None:
        """The job's weight taken from the worker's budget for traces being made (None for a
        light stream, whose job takes milliseconds and little memory)."""
        if checked.size < LIGHT_BELOW:
            return None
        return self.service.gate.inflight.take(MINIMISE_PER_BYTE * checked.size)

    def _end(self, ticket: Ticket | None) -> None:
        """The job's place and weight given back."""
        if ticket is not None:
            ticket.release()
        self._slots.release()

    def _run(
        self, job_id: str, checked: Checked, delete_hash: str = "", ticket: Ticket | None = None
    ) -> None:
        try:
            self._search(job_id, checked, delete_hash)
        except Exception as error:  # the job fails in words; the worker goes on
            log.exception("minimising stream %s failed", checked.stream_id)
            self.jobs.finish(job_id, status="failed", tests=0, records=len(checked.records),
                             elapsed_ms=0, error=f"the minimiser failed: {error!r}")  # fmt: skip
        finally:
            self._end(ticket)

    def _search(self, job_id: str, checked: Checked, delete_hash: str) -> None:
        run = _Run(self, job_id, checked)
        deadline = run.started + self.budget
        try:
            options = Options(policy=cast("Policy", checked.policy))  # `check` made sure
            result = minimise(checked.records, run.predicate, deadline, run.progress, self.clock,
                              options=options)  # fmt: skip
        except _Cancelled:
            self.jobs.finish(job_id, status="cancelled", tests=run.tests, records=run.best,
                             elapsed_ms=run.elapsed_ms())  # fmt: skip
            return
        except PropertyDoesNotHold:
            self.jobs.finish(job_id, status="failed", tests=run.tests,
                             records=len(checked.records), elapsed_ms=run.elapsed_ms(),
                             error=f"the stream does not show {checked.until.words}")  # fmt: skip
            return
        if self.jobs.get(job_id) is None:  # the original was deleted meanwhile
            return
        text = as_sse(result.records)
        prepared = Prepared(text.encode("utf-8", "backslashreplace"), read(text, "sse"), ())
        info = indexing.store(
            self.service, prepared, title=f"minimised from {checked.title}", input_format="sse",
            parent=checked.stream_id, delete_hash=delete_hash,
        )  # fmt: skip
        done = self.jobs.finish(
            job_id,
            status="done",
            tests=result.tests,
            records=len(result.records),
            elapsed_ms=run.elapsed_ms(),
            chunks_after=chunks_in(result.records),
            timed_out=result.timed_out,
            result=info.id,
        )
        if not done:  # cancelled or deleted at the last moment: keep nothing
            self.service.delete(info.id)


class _Run:
    """One job's search as it goes: tests run, the fewest records that still show the
    property, its phase; written to the store every `WRITE_EVERY` seconds (where a cancel is
    seen)."""

    def __init__(self, minimiser: Minimiser, job_id: str, checked: Checked) -> None:
        self.minimiser, self.job_id, self.checked = minimiser, job_id, checked
        self.started = self.written = minimiser.clock()
        self.tests = 0
        self.best = len(checked.records)
        self.phase = "records"

    def elapsed_ms(self) -> int:
        return int((self.minimiser.clock() - self.started) * 1000)

    def tick(self) -> None:
        now = self.minimiser.clock()
        if now - self.written >= WRITE_EVERY:
            self.written = now
            jobs = self.minimiser.jobs
            if not jobs.progress(self.job_id, self.phase, self.tests, self.best, self.elapsed_ms()):
                raise _Cancelled

    def predicate(self, records: Sequence[Record]) -> bool:
        self.tick()  # before a test (a cancel stops it here) and after it (a slow test's news)
        held = self.checked.until.predicate(records)
        self.tests += 1
        if held and len(records) < self.best:
            self.best = len(records)
        self.tick()
        return held

    def progress(self, found: Progress) -> None:
        self.phase = found.phase


def minimiser(app_state: Any, service: Service, budget: int, at_once: int) -> Minimiser:
    """The app's minimiser (made on first use; a test may set `app.state.minimiser` first)."""
    with _MAKING:
        found: Minimiser | None = getattr(app_state, "minimiser", None)
        if found is None:
            found = app_state.minimiser = Minimiser(service, budget, at_once)
        return found


_MAKING = threading.Lock()


def job_json(job: Job) -> dict[str, Any]:
    """The job as the API answers it."""
    return {
        "job": job.id,
        "stream": job.stream_id,
        "until": job.until,
        "policy": job.policy,
        "har_entry": job.har_entry,
        "status": job.status,
        "phase": job.phase or "records",
        "tests": job.tests,
        "records": {"input": job.total, "kept": job.records},
        "chunks": {"input": job.chunks_before, "kept": job.chunks_after if job.result else None},
        "elapsed_seconds": job.elapsed_ms / 1000,
        "budget_seconds": job.budget,
        "timed_out": job.timed_out,
        "cancel_requested": job.cancel,
        "result": job.result or None,
        "error": job.error or None,
        "started": job.started,
    }
