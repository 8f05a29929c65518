"""Minimise jobs in the store: started by one worker, polled, cancelled and finished from any.

A job is `running` until its thread writes `done`, `cancelled` or `failed`. At most one job per
(stream, HAR entry, property, policy) runs at a time: a unique index over the running rows says
so on SQLite and PostgreSQL alike, so two workers asked at once start one job. A running job
writes its progress (and so `updated`) every fraction of a second; one whose `updated` is older
than its budget plus `STALE_AFTER` belonged to a worker that died, and is marked `failed` before
the next job is started.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from webapp.storage.store import Storage

STALE_AFTER = 60
"""Seconds past its budget after which a running job with no news is taken for dead."""
_COLUMNS = (
    "id, stream_id, until_text, policy, status, phase, tests, records, total, chunks_before, "
    "chunks_after, budget, elapsed_ms, cancel, timed_out, result, error, started, updated, "
    "har_entry"
)


@dataclass(frozen=True, slots=True)
class Job:
    """A minimise job as the store has it."""

    id: str
    stream_id: str
    until: str
    policy: str
    status: str
    """running, done, cancelled, failed or interrupted (its process stopped: a restart)."""
    phase: str
    """The pass that last reported: records, fragments, arguments, ending, done."""
    tests: int
    records: int
    """Records in the smallest stream found so far (the result's, once done)."""
    total: int
    """Records in the input."""
    chunks_before: int
    chunks_after: int
    budget: int
    """The job stops after this many seconds with the smallest stream found."""
    elapsed_ms: int
    cancel: bool
    """Cancelling was asked for (the running thread stops at its next check)."""
    timed_out: bool
    result: str
    """The minimised stream's id ("" until done)."""
    error: str
    started: str
    updated: str
    har_entry: int | None = None
    """The HAR file's entry minimised (None: the reader's default, or not a HAR)."""

    @property
    def running(self) -> bool:
        """Still working."""
        return self.status == "running"


def _job(row: Sequence[Any]) -> Job:
    return Job(
        id=str(row[0]),
        stream_id=str(row[1]),
        until=str(row[2]),
        policy=str(row[3]),
        status=str(row[4]),
        phase=str(row[5]),
        tests=int(row[6]),
        records=int(row[7]),
        total=int(row[8]),
        chunks_before=int(row[9]),
        chunks_after=int(row[10]),
        budget=int(row[11]),
        elapsed_ms=int(row[12]),
        cancel=bool(row[13]),
        timed_out=bool(row[14]),
        result=str(row[15]),
        error=str(row[16]),
        started=str(row[17]),
        updated=str(row[18]),
        har_entry=int(row[19]) or None,
    )


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


class Jobs:
    """The minimise jobs of every stream (removed with their stream)."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def start(
        self,
        stream_id: str,
        until: str,
        policy: str,
        total: int,
        chunks: int,
        budget: int,
        har_entry: int | None = None,
        owner: str = "",
    ) -> tuple[Job, bool]:
        """A new running job, or the one already running for the same key; True when new.
        `owner` names the process running it (`interrupt` reads it)."""
        now = _now()
        self.sweep(budget)
        rows = self._run(
            f"INSERT INTO minimise_jobs ({_COLUMNS}, owner) "
            "VALUES (?, ?, ?, ?, 'running', '', 0, ?, ?, ?, 0, ?, 0, 0, 0, '', '', ?, ?, ?, ?) "
            f"ON CONFLICT DO NOTHING RETURNING {_COLUMNS}",
            (
                secrets.token_urlsafe(12),
                stream_id,
                until,
                policy,
                total,
                total,
                chunks,
                budget,
                _stamp(now),
                _stamp(now),
                har_entry or 0,
                owner,
            ),
        )
        if rows:
            return _job(rows[0]), True
        running = self.running(stream_id, until, policy, har_entry)
        if running is None:  # it finished in between: start again
            return self.start(stream_id, until, policy, total, chunks, budget, har_entry, owner)
        return running, False

    def sweep(self, budget: int) -> None:
        """Fail the running jobs that wrote nothing for `budget + STALE_AFTER` seconds."""
        self._run(
            "UPDATE minimise_jobs SET status = 'failed', error = ? "
            "WHERE status = 'running' AND updated < ?",
            (
                "the worker running it stopped (the server restarted?)",
                _stamp(_now() - timedelta(seconds=budget + STALE_AFTER)),
            ),
        )

    def owners(self, host: str) -> dict[str, str]:
        """The running jobs of processes on `host`: job id -> its owner ("host pid start")."""
        rows = self._run(
            "SELECT id, owner FROM minimise_jobs WHERE status = 'running' AND owner LIKE ?",
            (host.replace("%", "_") + " %",),
        )
        return {str(row[0]): str(row[1]) for row in rows}

    def interrupt(self, job_ids: Sequence[str], error: str) -> int:
        """Mark these running jobs interrupted (their process is gone); how many were."""
        ended = 0
        for job_id in job_ids:
            rows = self._run(
                "UPDATE minimise_jobs SET status = 'interrupted', phase = 'done', error = ?, "
                "updated = ? WHERE id = ? AND status = 'running' RETURNING id",
                (error, _stamp(_now()), job_id),
            )
            ended += len(rows)
        return ended

    def running(
        self, stream_id: str, until: str, policy: str, har_entry: int | None = None
    ) -> Job | None:
        """The job running for this stream (HAR entry), property and policy, or None."""
        rows = self._run(
            f"SELECT {_COLUMNS} FROM minimise_jobs WHERE stream_id = ? AND har_entry = ? "
            "AND until_text = ? AND policy = ? AND status = 'running'",
            (stream_id, har_entry or 0, until, policy),
        )
        return _job(rows[0]) if rows else None

    def get(self, job_id: str) -> Job | None:
        """The job, or None."""
        rows = self._run(f"SELECT {_COLUMNS} FROM minimise_jobs WHERE id = ?", (job_id,))
        return _job(rows[0]) if rows else None

    def running_for(self, stream_id: str) -> Job | None:
        """The newest job still running on this stream, or None."""
        rows = self._run(
            f"SELECT {_COLUMNS} FROM minimise_jobs WHERE stream_id = ? AND status = 'running' "
            "ORDER BY started DESC LIMIT 1",
            (stream_id,),
        )
        return _job(rows[0]) if rows else None

    def progress(self, job_id: str, phase: str, tests: int, records: int, elapsed_ms: int) -> bool:
        """Record where the search is; False when it should stop (cancelled, or gone)."""
        rows = self._run(
            "UPDATE minimise_jobs SET phase = ?, tests = ?, records = ?, elapsed_ms = ?, "
            "updated = ? WHERE id = ? AND status = 'running' RETURNING cancel",
            (phase, tests, records, elapsed_ms, _stamp(_now()), job_id),
        )
        return bool(rows) and not rows[0][0]

    def cancel(self, job_id: str) -> Job | None:
        """Ask a running job to stop; the job as it is now, or None when there is none."""
        self._run(
            "UPDATE minimise_jobs SET cancel = 1 WHERE id = ? AND status = 'running'", (job_id,)
        )
        return self.get(job_id)

    def finish(
        self,
        job_id: str,
        *,
        status: str,
        tests: int,
        records: int,
        elapsed_ms: int,
        chunks_after: int = 0,
        timed_out: bool = False,
        result: str = "",
        error: str = "",
    ) -> bool:
        """Mark a running job done, cancelled or failed; False when it is no longer there."""
        rows = self._run(
            "UPDATE minimise_jobs SET status = ?, phase = 'done', tests = ?, records = ?, "
            "elapsed_ms = ?, chunks_after = ?, timed_out = ?, result = ?, error = ?, updated = ? "
            "WHERE id = ? AND status = 'running' RETURNING id",
            (
                status,
                tests,
                records,
                elapsed_ms,
                chunks_after,
                int(timed_out),
                result,
                error,
                _stamp(_now()),
                job_id,
            ),
        )
        return bool(rows)
