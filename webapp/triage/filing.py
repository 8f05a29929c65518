"""A report ready to file: each party's title, its text (at most `LONGEST` characters of plain
Markdown) and its link (`webapp.triage.trackers`).

The text says, in this order: what to file (the party's sentence), what the application
received and what the stream means, the quirks with their clauses and steps (or that there is
none), the versions, and a minimal repro (`webapp.triage.repro`: minimised, ids pseudonymised)
in a fenced block of `data:` lines. Each part but the repro is clipped to its own share; the
repro gets what is left, whole events only, and says how many it left out (an SSE comment
line, which every reader skips) when it does not fit.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from itertools import accumulate
from typing import TYPE_CHECKING

from webapp import __version__
from webapp.core.contract import QUIRK
from webapp.core.contract.quirks import CLAUSES
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.words import count
from webapp.lenses.pins import BY_CLIENT
from webapp.triage.report import fence
from webapp.triage.repro import Repro, repro
from webapp.triage.trackers import tracker_for

if TYPE_CHECKING:
    from webapp.triage.verdict import Graded, Party, Verdict

LONGEST = 2_000
"""The most characters a party's text holds (a tracker's form, a chat message)."""
SECONDS = 3.0
"""The minimiser's time for a report's repro (the CLI's `minimise` has no limit)."""
_SHARES = {"says": 350, "received": 350, "means": 220, "quirks": 520, "versions": 200}
"""The most characters each part but the repro may take."""
STEPS_SHOWN = 8
BY_MODEL = (
    "the model's maker, going by its name: file there if it served the stream, else with "
    "whoever did"
)
"""Said beside a provider's page: a model's name is no proof of who served it."""
_SCALES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.42, 0.35)
"""The parts' shares are tried at these scales, the largest first, until the repro fits whole."""


def filed(verdict: Verdict, records: Sequence[Record] | None, model: str | None = None) -> Verdict:
    """The verdict with each party's title, text and link; the repro from `records` (none
    without them)."""
    if not verdict.parties:
        return verdict
    made = repro(records, Options(), SECONDS) if records is not None else None
    parties = tuple(_filed(verdict, party, made, model) for party in verdict.parties)
    return replace(verdict, parties=parties)


def _filed(verdict: Verdict, party: Party, made: Repro | None, model: str | None) -> Party:
    title = _title(verdict, party, model)
    text = text_of(verdict, party, made, model)
    found = tracker_for(party.kind, party.name, model or verdict.contract.model)
    where = "the provider's support" if party.kind == "provider" else ""
    if found is not None:
        where = found.name if party.kind != "provider" or found.repo else _whose(found.name)
    url = found.link(title, text) if found is not None else None
    return replace(party, title=title, text=text, url=url, tracker=where,
                   prefilled=found is not None and found.prefills)  # fmt: skip


def _whose(name: str) -> str:
    return f"{name}'s support"


def _title(verdict: Verdict, party: Party, model: str | None) -> str:
    codes = ", ".join(dict.fromkeys(found.code for found in verdict.contract.quirks))
    if party.kind == "provider":
        who = model or verdict.contract.model
        head = f"Streamed tool calls break the chat-completions contract ({codes or 'an error'})"
        return head + (f": {who}" if who else "")
    if party.kind == "gateway":
        return f"Streamed tool calls changed on the way through {party.name} ({codes})"
    graded = _graded(verdict, party)
    what = {
        "damaged": "hands other tool calls than a valid stream means, without an error",
        "flagged": "raises on (or flags) the tool calls of a valid stream",
        "guessed": "guesses the tool calls of a stream",
    }.get(graded.grade or "", "mishandles a valid stream's tool calls") if graded else (
        "mishandles a valid stream's tool calls"
    )  # fmt: skip
    return f"Streaming: {party.name} {what}"


def text_of(verdict: Verdict, party: Party, made: Repro | None, model: str | None = None) -> str:
    """The party's text: at most `LONGEST` characters of Markdown (see the module docstring).
    When the repro does not fit whole, the other parts are clipped shorter, to a third at most."""
    text = ""
    for scale in _SCALES:
        share = {part: int(most * scale) for part, most in _SHARES.items()}
        parts = [
            _clip(party.says, share["says"]),
            _clip(f"**What the application received:** {_received(verdict, party)}",
                  share["received"]),
            _clip(f"**What the stream means:** {_means(verdict)}", share["means"]),
            _quirks(verdict, share["quirks"]),
            _clip(f"**Versions:** {_versions(verdict, party, model)}", share["versions"]),
        ]  # fmt: skip
        head = "\n\n".join(parts)
        if made is None:
            return head
        head = made.tokens.hide(head)  # the ids the messages quote, as the repro has them
        shown, whole = _repro(made, LONGEST - len(head) - 2)
        text = f"{head}\n\n{shown}"
        if whole:
            break
    return text


def _received(verdict: Verdict, party: Party) -> str:
    graded = _graded(verdict, party)
    if graded is not None:
        return f"{graded.label} {graded.grade}: {graded.detail}."
    shown = [g for g in verdict.grades if g.grade not in (None, "intact") and g.client in BY_CLIENT]
    if not shown:
        shown = [g for g in verdict.grades if g.grade is not None]
    if not shown:
        return "no client was run on the stream."
    return "; ".join(f"{g.label}: {g.grade}, {g.detail}" for g in shown) + "."


def _means(verdict: Verdict) -> str:
    contract = verdict.contract
    if contract.intended is None:
        return f"{contract.no_reading}: {contract.why}."
    repairs = contract.intended.repairs
    fixed = f" (repaired: {', '.join(repairs)})" if repairs else ""
    return f"{contract.intended.describe()}{fixed}."


def _quirks(verdict: Verdict, most: int) -> str:
    """Each quirk on a line with its clause (once per clause) and steps, as many as fit."""
    found = verdict.contract.quirks
    if not found and verdict.contract.end is not None:
        return "**Quirks:** none in what was recorded (its end was not)."
    if not found:
        return "**Quirks:** none: the stream keeps the contract."
    lines = ["**Quirks** (steps are chunks of the recorded stream, from 0):"]
    said: set[str] = set()
    for at, item in enumerate(found):
        clause = QUIRK[item.code].clause
        breaks = "" if clause in said else f" (breaks \u201c{CLAUSES[clause]}\u201d)"
        said.add(clause)
        steps = ", ".join(str(step) for step in item.steps[:STEPS_SHOWN])
        more = f" and {item.count - STEPS_SHOWN} more" if item.count > STEPS_SHOWN else ""
        where = "" if "step" in item.message else f", steps {steps}{more}"
        line = _clip(f"- `{item.code}`{breaks}: {item.message}{where}", 300)
        left = len(found) - at - 1
        tail = f"\n- and {count(left + 1, 'more quirk')} (the report lists them)"
        if len("\n".join([*lines, line])) + (len(tail) if left else 0) > most and at:
            lines.append(tail.strip("\n"))
            break
        lines.append(line)
    return "\n".join(lines)


def _versions(verdict: Verdict, party: Party, model: str | None) -> str:
    graded = _graded(verdict, party)
    ran = [graded] if graded is not None else [g for g in verdict.grades if g.grade is not None]
    libraries = [f"{BY_CLIENT[g.client].package} {g.version}" for g in ran if g.client in BY_CLIENT]
    who = model or verdict.contract.model
    parts = [*libraries, f"streamviz {__version__}", *([f"model {who}"] if who else [])]
    return ", ".join(parts) + "."


def _repro(made: Repro, room: int) -> tuple[str, bool]:
    """The repro's events that fit in `room` characters, whole, in a fence; and whether all
    of them did."""
    how = "minimised" if made.minimised else "whole"
    if made.left_out:
        how = f"its first {len(made.records)} records only, not minimised: it has more"
    head = (f"**Repro** ({how}, ids pseudonymised; `streamviz check repro.sse` reads it, "
            "`streamviz minimise FILE --pseudonymise` prints it):")  # fmt: skip
    events = [event for event in made.text.split("\n\n") if event]
    ends = list(accumulate(len(event) + 2 for event in events))
    most = bisect_right(ends, room)  # more than this many cannot fit: skip them unjoined
    for keep in range(most, 0, -1):
        body = "\n\n".join(events[:keep])
        if keep < len(events):
            body += f"\n\n: {count(len(events) - keep, 'more event')} left out here to fit"
        shown = f"{head}\n\n{fence(body, 'text')}"
        if len(shown) <= room:
            return shown, keep == len(events)
    return (f"{head[:-1]}: its {count(len(events), 'event')} are too long to quote here; "
            "`streamviz minimise FILE --pseudonymise` prints them."), False  # fmt: skip


def _graded(verdict: Verdict, party: Party) -> Graded | None:
    """The grade of the library a party names (`openai 3.57.0`), if it is one."""
    if party.kind != "library":
        return None
    for graded in verdict.grades:
        pin = BY_CLIENT.get(graded.client)
        if pin is not None and party.name == f"{pin.package} {graded.version}":
            return graded
    return next((g for g in verdict.grades if party.name.endswith(g.client)), None)


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "\u2026"
