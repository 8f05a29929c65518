"""What the client lenses handed over on a stored stream, kept so that no worker runs them twice.

One row per (stream, HAR entry, lenses): `lenses` names each client at the version that ran
(`client=version`, or `client=-` when it was not installed), so a library installed or upgraded
since is a new key. The results are `LensResult.to_json()` objects; deleting the stream deletes
them, and `forget` drops a stream's rows when its page asks to compute again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime

from webapp.lenses.results import LensResult
from webapp.storage.store import Storage

log = logging.getLogger(__name__)


class LensResults:
    """The lens results of every stream (removed with their stream)."""

    def __init__(self, storage: Storage) -> None:
        self._run = storage.backend.run

    def get(
        self, stream_id: str, har_entry: int | None, lenses: str
    ) -> tuple[LensResult, ...] | None:
        """The results kept for this stream, entry and lenses, or None (none kept, or a row
        this version does not read)."""
        rows = self._run(
            "SELECT results FROM lens_results WHERE stream_id = ? AND har_entry = ? AND lenses = ?",
            (stream_id, har_entry or 0, lenses),
        )
        if not rows:
            return None
        try:
            values = json.loads(rows[0][0])
            if not isinstance(values, list):
                raise ValueError("not a list")
            return tuple(LensResult.from_json(value) for value in values)
        except ValueError as error:
            log.warning("stream %s: its kept lens results do not read (%s)", stream_id, error)
            return None

    def put(
        self, stream_id: str, har_entry: int | None, lenses: str, results: Sequence[LensResult]
    ) -> bool:
        """Keep the results (replacing older ones under the same key); False when the stream
        is not stored (a built-in example, or deleted meanwhile)."""
        text = json.dumps([result.to_json() for result in results], ensure_ascii=True)
        rows = self._run(
            "INSERT INTO lens_results (stream_id, har_entry, lenses, results, created) "
            "SELECT id, ?, ?, ?, ? FROM streams WHERE id = ? "
            "ON CONFLICT (stream_id, har_entry, lenses) DO UPDATE SET results = excluded.results, "
            "created = excluded.created RETURNING stream_id",
            (har_entry or 0, lenses, text, _now(), stream_id),
        )
        return bool(rows)

    def forget(self, stream_id: str, har_entry: int | None) -> int:
        """Drop every result kept for this stream's entry (whatever lenses ran); how many."""
        rows = self._run(
            "DELETE FROM lens_results WHERE stream_id = ? AND har_entry = ? RETURNING stream_id",
            (stream_id, har_entry or 0),
        )
        return len(rows)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
