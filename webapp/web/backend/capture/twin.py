"""A captured stream's non-stream twin as a page and the API say it: its id, whether it holds
the calls the stream means, or how it failed (`webapp.proxy.twin` sends and records it).

The twin is held to the stream's intended reading (its adr-0019 assembly when it has none) by
`webapp.triage.values.agreement`: in order, by name and by arguments as JSON, never by id. A twin
that failed (an error status, no answer, an answer whose calls cannot be read) has no `same`
and says why; one still arriving or not yet sent is not there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from webapp.core.contract.answer import answer_in, is_answer
from webapp.core.options import Options
from webapp.core.records import ReaderError
from webapp.storage.capture import Capture, Captures
from webapp.storage.store import ENDINGS
from webapp.triage.values import agreement
from webapp.web.backend.service import NotFound, Service, Unreadable


@dataclass(frozen=True, slots=True)
class TwinSummary:
    """A stream's non-stream twin: its id and status, whether it agrees, where it does not."""

    id: str
    status: int
    same: bool | None
    """None when the twin failed (then `error` says how)."""
    where: str
    """Where it first differs from what the stream means ("" when the same or failed)."""
    error: str
    """How the twin failed, in words ("" when it did not)."""

    @property
    def words(self) -> str:
        """ "same calls", "differs at call 1, `arguments.city`" or how it failed."""
        if self.same is None:
            return f"failed: {self.error}"
        return "same calls" if self.same else f"differs at {self.where}"

    def to_json(self) -> dict[str, Any]:
        """`{"id", "same", "status", "where", "error"}` (`where` and `error` null when none)."""
        return {"id": self.id, "same": self.same, "status": self.status,
                "where": self.where or None, "error": self.error or None}  # fmt: skip


def twin_of(service: Service, stream_id: str) -> TwinSummary | None:
    """The stream's non-stream twin, held to what the stream means; None without one (not a
    capture, no `--twin`, or not recorded yet)."""
    found = Captures(service.storage).twin(stream_id)
    if found is None or found.live:
        return None
    failure = _failure(found)
    if failure and found.facts.status:
        said = _said(service.raw(found.stream_id))
        failure += f": {said}" if said else ""
    if failure:
        return TwinSummary(found.stream_id, found.facts.status, None, "", failure)
    try:
        answer = answer_in(service.reading(found.stream_id).result)
    except (ReaderError, Unreadable) as error:  # an answer that is not one: said, not raised
        return TwinSummary(found.stream_id, found.facts.status, None, "", str(error))
    if answer is None:
        return TwinSummary(found.stream_id, found.facts.status, None, "",
                           "the answer is not a chat.completion JSON")  # fmt: skip
    trace = service.view(stream_id, Options("adr-0019", "client")).trace
    contract = trace.contract
    if contract is not None and contract.intended is not None:
        meant = [(call.name, call.arguments) for call in contract.intended.calls]
    else:
        meant = [(b.name, b.text) for b in trace.blocks if b.kind == "toolCall"]
    same, where = agreement([(c.name, c.arguments) for c in answer.calls], meant)
    return TwinSummary(found.stream_id, found.facts.status, same, where, "")


def stored_answer(service: Service, stream_id: str, har_entry: int | None = None) -> bool:
    """Whether a stored stream (or its HAR entry) is a non-stream answer, which has no steps
    to compare, grade or export (its page lists its calls instead); False when it does not
    read (its route says why)."""
    try:
        if service.info(stream_id).format not in ("json", "jsonl", "har", "cassette"):
            return False
        return is_answer(service.reading(stream_id, har_entry).result.records)
    except (NotFound, Unreadable, ReaderError):
        return False


def _said(body: bytes) -> str:
    """The message of an OpenAI-shaped error body (`{"error": {"message"}}`), clipped."""
    try:
        value = json.loads(body[:65536])
    except ValueError:
        return ""
    error = value.get("error") if isinstance(value, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(message.split())[:200] if isinstance(message, str) else ""


def _failure(capture: Capture) -> str:
    """How a recorded twin failed, in words ("" when it answered 200 whole)."""
    status = capture.facts.status
    if status == 0:
        return capture.detail or "no answer"
    if not 200 <= status < 300:
        return f"status {status}" + (f" ({capture.detail})" if capture.detail else "")
    if capture.state != ENDINGS["complete"]:
        return f"its answer was {capture.state}" + (f": {capture.detail}" if capture.detail else "")
    return ""
