"""A repro to paste: the stream minimised under its fingerprint, its ids pseudonymised, as SSE.

`streamviz minimise FILE --pseudonymise` prints it, and "Where to file" quotes it
(`webapp.triage.filing`), its ids' tokens numbered over the whole stream, so that the prose
about the stream names them alike (`Tokens.hide`). The minimiser keeps a candidate only if its
fingerprint (the quirk codes, the anomalies with their blocks' names, this build's two policies'
grades) is the input's, and pseudonymising keeps ids equal where they were equal, so the repro
loads back as the same bug. A stream whose fingerprint holds no bug (no quirk, no anomaly, both
policies intact: a client library alone mishandles it) is not minimised, since any stream would
keep that fingerprint: it is pseudonymised whole. Nor is one of more than `LONGEST` records
(each candidate assembles it): its first `EXCERPT` records are an excerpt, said to be one, and
the rest is never copied.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from webapp.core.options import Options
from webapp.core.readers.writer import to_sse
from webapp.core.records import Record
from webapp.triage.fingerprint import fingerprint, keeps
from webapp.triage.minimise import PropertyDoesNotHold, minimise
from webapp.triage.pseudonym import Tokens, collect, pseudonymise

LONGEST = 2_000
"""Streams of more records than this are not minimised for a report (the CLI still can)."""
EXCERPT = 100
"""How many records of such a stream are quoted (more never fit a report's text)."""


@dataclass(frozen=True, slots=True)
class Repro:
    """The records to paste, as SSE, and how they were made."""

    records: tuple[Record, ...]
    text: str
    """The records as SSE (`sse`)."""
    minimised: bool
    """False: the stream whole, or an excerpt (see the module docstring)."""
    timed_out: bool = False
    left_out: int = 0
    """How many of the stream's records an excerpt leaves out (0: none)."""
    tokens: Tokens = field(default_factory=Tokens)
    """The ids' tokens, numbered over the stream (or the excerpt) as a whole."""


def _made(records: Sequence[Record], tokens: Tokens, minimised: bool, timed_out: bool = False,
          left_out: int = 0) -> Repro:  # fmt: skip
    found = pseudonymise(records, tokens)
    return Repro(found, sse(found), minimised, timed_out, left_out, tokens)


def sse(records: Sequence[Record]) -> str:
    """The records as SSE, ending with `data: [DONE]` (added when the last record is not it)."""
    text = to_sse(records)
    return text if records and records[-1].kind == "done" else text + "data: [DONE]\n\n"


def repro(
    records: Sequence[Record], options: Options | None = None, seconds: float | None = None
) -> Repro:
    """The stream minimised under its fingerprint (for at most `seconds`), pseudonymised."""
    chosen = options or Options()
    if len(records) > LONGEST:
        excerpt = records[:EXCERPT]
        return _made(excerpt, collect(excerpt), False, left_out=len(records) - EXCERPT)
    tokens = collect(records)
    original = fingerprint(records, chosen)
    if not original.holds_a_bug:
        return _made(records, tokens, False)
    deadline = None if seconds is None else time.monotonic() + seconds
    try:
        found = minimise(records, keeps(original, chosen), deadline, options=chosen)
    except PropertyDoesNotHold:  # cannot happen for its own fingerprint; said, not hidden
        return _made(records, tokens, False)
    return _made(found.records, tokens, True, found.timed_out)
