"""A trace view as bytes kept beside its stream, so that another worker (or this one after a
restart) opens the stream by loading them instead of reading and assembling it again.

Layout, integers little-endian:

    b"SVZVIEW\\0"  u32 FORMAT  u32 head length  head (JSON, UTF-8)
    per rule the head names (`rules`): u64 length, the steps it fired at (`array('q')` bytes)
    the trace (`webapp.storage.tracefile.dump`)

The head holds what the reader found but the records (format, notes, model, tools, entries,
meta), how many records there were, and the view's indexes that cost a pass over the steps
(the overview's buckets, the runs), and the rules table's names in order, so that a new rule
needs no new format (a head without them was stored with the five rules of the time). Anything
else is a `StoredError`, and the caller assembles again. The artefact's kind names `FORMAT` and
`tracefile.VERSION` (`kind`), so a new release never even reads an old layout.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from dataclasses import dataclass
from typing import Any

from webapp.core.records import Entry, ReadResult
from webapp.core.rules import RULE_NAMES
from webapp.core.trace import Trace
from webapp.storage import tracefile
from webapp.web.backend.trace.overview import Bucket
from webapp.web.backend.trace.runs import Run, Runs

MAGIC = b"SVZVIEW\0"
FORMAT = 3
"""3: its runs fold a text's and a thought's pieces too (`Trace.quiet_runs`); 2: a view is made
only of input that holds a stream, and a capture cut short is judged without its end (issue
31). A view of an older format is made again."""
_HEAD = struct.Struct("<8sII")
_LENGTH = struct.Struct("<Q")


_FIVE = ("exact-index", "exact-id", "continuation", "drop", "new")
"""The rules, in order, of a view stored before its head named them."""


class StoredError(ValueError):
    """The bytes are not a stored view this version reads."""


@dataclass(frozen=True, slots=True)
class Stored:
    """What `unpack` gives back: enough to build the view without reading the stream."""

    found: ReadResult
    """What the reader found, with no records."""
    records: int
    trace: Trace
    rule_steps: dict[str, array[int]]
    buckets: tuple[Bucket, ...]
    runs: Runs


def kind(har_entry: int | None) -> str:
    """The artefact kind of a stored view (its formats in the name; the HAR entry read)."""
    entry = "" if har_entry is None else f".har{har_entry}"
    return f"view.v{FORMAT}.t{tracefile.VERSION}{entry}"


def found_json(found: ReadResult) -> dict[str, Any]:
    """What the reader found but the records, as JSON."""
    return {
        "format": found.format,
        "notes": list(found.notes),
        "model": found.model,
        "tools": list(found.tools),
        "others": [[e.label, e.detail, e.number] for e in found.others],
        "entries": [[e.label, e.detail, e.number] for e in found.entries],
        "meta": found.meta,
    }


def found_from(head: dict[str, Any]) -> ReadResult:
    """`found_json` read back."""
    return ReadResult(
        format=head["format"],
        records=(),
        notes=tuple(head["notes"]),
        model=head["model"],
        tools=tuple(head["tools"]),
        others=tuple(Entry(*entry) for entry in head["others"]),
        entries=tuple(Entry(*entry) for entry in head["entries"]),
        meta=dict(head["meta"]),
    )


def pack(
    found: ReadResult,
    records: int,
    trace: Trace,
    rule_steps: dict[str, array[int]],
    buckets: tuple[Bucket, ...],
    runs: Runs,
) -> bytes | None:
    """The view as bytes; None when what the reader found does not survive JSON unchanged."""
    try:
        head_json = found_json(found)
        text = json.dumps(head_json, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if found_from(json.loads(text)) != found:
        return None  # a tuple in `meta`, say: stored, it would come back as a list
    head = {
        "found": head_json,
        "records": records,
        "buckets": [[b.first, b.last, b.target, b.rules, b.errors, b.warnings] for b in buckets],
        "runs": [[r.first, r.last, r.rule, r.block, r.fragments] for r in runs.runs],
        "rules": list(RULE_NAMES),
    }
    data = json.dumps(head, ensure_ascii=False).encode("utf-8", "surrogatepass")
    out = [_HEAD.pack(MAGIC, FORMAT, len(data)), data]
    for name in RULE_NAMES:
        steps = rule_steps.get(name, array("q"))
        if sys.byteorder == "big":
            steps = array("q", steps)
            steps.byteswap()
        raw = steps.tobytes()
        out += [_LENGTH.pack(len(raw)), raw]
    out += tracefile.dump_parts(trace)
    return b"".join(out)


def unpack(data: bytes) -> Stored:
    """The view `pack` wrote; StoredError on anything else (a damaged or older artefact)."""
    view = memoryview(data)
    try:
        magic, version, size = _HEAD.unpack_from(view)
        if magic != MAGIC or version != FORMAT:
            raise StoredError(f"not a version-{FORMAT} stored view")
        offset = _HEAD.size
        head = json.loads(bytes(view[offset : offset + size]).decode("utf-8", "surrogatepass"))
        offset += size
        rule_steps: dict[str, array[int]] = {name: array("q") for name in RULE_NAMES}
        for name in head.get("rules", _FIVE):
            (length,) = _LENGTH.unpack_from(view, offset)
            offset += _LENGTH.size
            steps = array("q")
            steps.frombytes(view[offset : offset + length])
            if sys.byteorder == "big":
                steps.byteswap()
            rule_steps[name] = steps
            offset += length
        trace = tracefile.load(view[offset:])  # not copied
        return Stored(
            found=found_from(head["found"]),
            records=int(head["records"]),
            trace=trace,
            rule_steps=rule_steps,
            buckets=tuple(
                Bucket(first, last, target, tuple((str(r), int(n)) for r, n in rules), e, w)
                for first, last, target, rules, e, w in head["buckets"]
            ),
            runs=Runs(Run(*run) for run in head["runs"]),
        )
    except StoredError:
        raise
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as error:
        raise StoredError(f"a damaged stored view: {error!r}") from None
