"""Retention: the streams stored more than `--retention-days` days ago, removed by a sweep at
start and every `RETENTION_EVERY` seconds after."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from starlette.concurrency import run_in_threadpool

from webapp.web.backend.service import Service

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


RETENTION_EVERY = 3600.0
"""Seconds between two sweeps of a server run with `--retention-days`."""


class Retention:
    """Removes the streams stored more than `days` days before the clock's now."""

    def __init__(
        self, service: Service, days: int, clock: Clock = _utcnow, every: float = RETENTION_EVERY
    ) -> None:
        self.service = service
        self.days = days
        self.clock = clock
        self.every = every

    async def start(self) -> asyncio.Task[None] | None:
        """Sweep once now, then every `every` seconds in a task (None when nothing expires)."""
        if self.days <= 0:
            return None
        await run_in_threadpool(self.sweep)
        return asyncio.create_task(self._periodically())

    async def _periodically(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await run_in_threadpool(self.sweep)
            except Exception:  # a store that is down now may be up at the next sweep
                log.exception("retention: the sweep failed")

    def sweep(self) -> list[str]:
        """Remove the streams past retention now; their ids."""
        if self.days <= 0:
            return []
        cutoff = (self.clock() - timedelta(days=self.days)).isoformat(timespec="seconds")
        removed = [
            stream_id
            for stream_id in self.service.storage.created_before(cutoff)
            if self.service.delete(stream_id, f"by retention, {self.days} days after it was stored")
        ]
        if removed:
            log.info("retention: removed %d streams older than %d days", len(removed), self.days)
        return removed
