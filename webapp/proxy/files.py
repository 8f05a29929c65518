"""The proxy's recorder into files, for `streamviz record`: each stream its own files.

Each event stream (or JSON chat completion) becomes `DIR/STAMP-MODEL-RECORDER-N.sse` (`.json`),
written as its batches arrive, and `.timing.json` beside it when it ends: the request's facts,
how it ended, and when each piece of its bytes arrived (ms since the request was sent). A kept
request body is written as `.request.json` too, its keys masked. RECORDER is random per process
and each stream file is created only if no file has its name (O_EXCL), so recorders sharing one
DIR never write over each other's files.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from webapp.storage.capture import Facts, Part

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class FileSink:
    """One recorded stream's files."""

    def __init__(self, path: Path, facts: Facts, announce: Callable[[str], None]) -> None:
        self.path = path
        self.stream_id = path.stem
        self.facts = facts
        self.announce = announce
        self.ends: list[int] = []
        self.ms: list[float] = []

    def write(self, seq: int, part: Part) -> None:
        """Append the batch to the stream's file."""
        with self.path.open("ab") as out:
            out.write(part.data)
        self.ends += part.ends
        self.ms += part.ms

    def end(self, state: str, detail: str) -> None:
        """Write `.timing.json` beside the stream."""
        facts = self.facts
        document = {
            "unit": "ms",
            "file": self.path.name,
            **facts.exchange_json(),
            "state": state,
            "detail": detail,
            "headers_ms": facts.headers_ms,
            "ends": self.ends,
            "ms": [round(t, 3) for t in self.ms],
        }
        if facts.request is not None and facts.request_masked is not None:
            document["request_masked"] = list(facts.request_masked)
        timing = self.path.with_suffix(".timing.json")
        timing.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        self.announce(f"recorded {self.path} ({self.ends[-1] if self.ends else 0} bytes, {state})")


class FileRecorder:
    """Opens a new file for each recorded stream, in `folder`."""

    def __init__(self, folder: Path, announce: Callable[[str], None]) -> None:
        self.folder = folder
        self.announce = announce
        self.recorder = secrets.token_hex(3)
        """This recorder's part of each name: another recorder on the folder has its own."""
        self._count = itertools.count(1)
        self._lock = threading.Lock()

    def open(self, facts: Facts, title: str, format: str) -> FileSink:
        """The files of a new stream (`format`: "sse" or "json"; a kept request's keys masked)."""
        facts = facts.masked()
        slug = _SLUG.sub("-", facts.model or "stream").strip("-")[:60] or "stream"
        path = self._create(slug, ".json" if format == "json" else ".sse")
        if facts.request is not None:
            with path.with_suffix(".request.json").open("xb") as out:
                out.write(facts.request)
        return FileSink(path, facts, self.announce)

    def _create(self, slug: str, suffix: str) -> Path:
        """A new empty stream file whose name no file had (the next number when one had)."""
        while True:
            with self._lock:
                number = next(self._count)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            path = self.folder / f"{stamp}-{slug}-{self.recorder}-{number}{suffix}"
            try:
                path.open("xb").close()
            except FileExistsError:
                continue
            # X.sse and X.json would share X.timing.json: the stem is taken by one of them.
            if not path.with_suffix(".json" if suffix == ".sse" else ".sse").exists():
                return path
            path.unlink()
