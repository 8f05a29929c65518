"""A Markdown report of one stream, to paste into a bug tracker (`streamviz report`, report.md).

Plain data in, a string out: what was read, the traces under the chosen policy and the other
one, the notes left on steps, and, when the stream has a public page, its base URL and id for
step links. Everything taken from the stream is made inert: table cells have Markdown's
punctuation (`|` included) backslash-escaped and line breaks folded, and raw text goes in code
fences longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote as url_quote

from webapp.core.contract.answer import Answer, answer_or_none
from webapp.core.contract.intended import Call
from webapp.core.jsoncheck import dumps
from webapp.core.readers.writer import record_text
from webapp.core.records import ReadResult
from webapp.core.trace import Anomaly, Block, Trace
from webapp.core.words import count, number, visible
from webapp.triage.compare import outcome

if TYPE_CHECKING:  # the lenses are only described here, never run
    from webapp.lenses.matrix import Cell, Matrix
    from webapp.triage.verdict import Party, Verdict

STEPS_SHOWN = 12
"""At most this many steps are listed per quirk (each a link when the stream has a page)."""
CHUNKS_SHOWN = 8
"""At most this many offending chunks are shown, each clipped to `CHUNK_CLIP` characters."""
CHUNK_CLIP = 2_000
_PUNCTUATION = re.compile(r"([\\`*_\[\]<>#|~&])")
_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")
_TICKS = re.compile(r"`+")


@dataclass(frozen=True, slots=True)
class Note:
    """A note left on a step: the step, who wrote it (may be empty), and its text."""

    step: int
    author: str
    text: str


@dataclass(frozen=True, slots=True)
class Links:
    """Where the stream's page is: `{base}/s/{id}?step=N` links to a step (of HAR entry
    `har_entry`, when the report is of one)."""

    base: str
    stream_id: str
    har_entry: int | None = None

    def step(self, step: int) -> str:
        """The URL of a step of the stream's page."""
        entry = "" if self.har_entry is None else f"&har_entry={self.har_entry}"
        return (f"{self.base.rstrip('/')}/s/{url_quote(self.stream_id, safe='')}?step={step}"
                f"{entry}")  # fmt: skip


def cell(text: str) -> str:
    """Text that stays inert in a Markdown table cell or a line of prose (invisible and
    reordering characters shown as escapes, `webapp.core.words.visible`)."""
    return _PUNCTUATION.sub(r"\\\1", _BREAKS.sub(" ", visible(text)))


def fence(text: str, info: str = "") -> str:
    """A fenced code block whose fence is longer than any run of backticks in the text."""
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def render(
    source: ReadResult,
    trace: Trace,
    other: Trace,
    *,
    title: str,
    notes: Sequence[Note] = (),
    links: Links | None = None,
    clients: Matrix | None = None,
    judged: Verdict | None = None,
) -> str:
    """The whole report (see the module docstring); `trace` is the chosen policy's.

    `judged`, the verdict on the stream (`webapp.triage.verdict`: the clients graded, or only
    this build's policies), adds the grades and says where to file; without it the report
    says so from the quirks alone. `clients` (or `judged.matrix`), when the client libraries
    were run on the stream, adds their matrix.
    """
    answer = answer_or_none(source, trace.choice)
    if answer is not None:
        return _answer_report(source, trace, answer, title, notes, links)
    if judged is None:
        judged = _unjudged(trace)
    matrix = clients if clients is not None else judged.matrix if judged else None
    parts = [
        f"# {cell(title)}",
        _input(source, trace),
        f"**Verdict:** {cell(verdict(trace))}",
        *((f"**Whose fault:** {cell(judged.headline)}",) if judged else ()),
        "## Quirks",
        _quirks(trace, links),
        "## What the stream means",
        _intended(trace),
        "## Anomalies",
        _anomalies(trace, links),
        "## Offending chunks",
        _chunks(source, trace, links),
        "## Final calls",
        *(_calls(side) for side in (trace, other)),
        *(("## Grades", _grades(judged)) if judged and judged.grades else ()),
        *(("## Every client's view", _clients(matrix)) if matrix is not None else ()),
        *(("## Where to file", _file(judged, links)) if judged else ()),
        "## Notes",
        _notes(notes, links),
    ]
    return "\n\n".join(parts) + "\n"


def _answer_report(
    source: ReadResult,
    trace: Trace,
    answer: Answer,
    title: str,
    notes: Sequence[Note],
    links: Links | None,
) -> str:
    """A non-stream answer's report: its calls, and no verdict of a stream (no chunk of one
    was read: no quirk, anomaly or client grade is about it)."""
    finish = f" (finish_reason {cell(answer.finish_reason)})" if answer.finish_reason else ""
    lines = [_call_line(call) for call in answer.calls]
    held = f"{count(len(lines), 'call')}{finish}:\n\n{fence(chr(10).join(lines))}"
    parts = [
        f"# {cell(title)}",
        _input(source, trace),
        "**Verdict:** this is a non-stream `chat.completion` answer, not a stream: nothing of a "
        "stream's assembly, quirks or clients applies to it. To hold it to the stream it "
        "answers, diff the two (`streamviz diff STREAM ANSWER`, or /diff).",
        "## Its calls",
        held if lines else f"No tool call{finish}.",
        "## Notes",
        _notes(notes, links),
    ]
    return "\n\n".join(parts) + "\n"


def _unjudged(trace: Trace) -> Verdict | None:
    """The verdict from the quirks alone (no client graded), when the trace has a contract."""
    if trace.contract is None:
        return None
    from webapp.triage.verdict import judge  # triage's own: the lenses' tables, nothing run

    return judge(trace.contract, ())


def _quirks(trace: Trace, links: Links | None) -> str:
    contract = trace.contract
    if contract is None:
        return "Not read."
    if not contract.quirks and contract.end is not None:
        return "None in what was recorded (its end was not)."
    if not contract.quirks:
        return "None: the stream keeps the contract."
    rows = ["| quirk | harm | steps | blocks | what the wire shows | seen in |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for found in contract.quirks:
        steps = ", ".join(_step(step, links) for step in found.steps[:STEPS_SHOWN])
        if len(found.steps) > STEPS_SHOWN:
            steps += f" and {number(found.count - STEPS_SHOWN)} more"
        blocks = ", ".join(f"b{block}" for block in found.blocks)
        seen = ", ".join(  # autolinks: no step-style `](` link where there is no public page
            f"{cell(item.thread or item.by)} <{item.url}>" if item.url else cell(item.by)
            for item in found.quirk.seen
        )
        rows.append(f"| {cell(found.code)} | {found.harm} | {steps} | {blocks} | "
                    f"{cell(found.message)} | {seen} |")  # fmt: skip
    return "\n".join(rows)


def _intended(trace: Trace) -> str:
    contract = trace.contract
    if contract is None:
        return "Not read."
    if contract.intended is None:
        return f"{contract.no_reading.capitalize()}: {cell(contract.why or '')}"
    lines = [_call_line(call) for call in contract.intended.calls]
    body = fence("\n".join(lines)) if lines else "No tool call."
    repairs = "".join(f"\n- {cell(repair)}" for repair in contract.intended.repairs)
    return body + (f"\n\nRepaired:{repairs}" if repairs else "")


def _call_line(call: Call) -> str:
    """`"call_1" get_weather {"city": "Paris"}`: a call's id, name and arguments text."""
    name = call.name if isinstance(call.name, str) else "(no name)"
    return f"{'(no id)' if call.id is None else dumps(call.id).decode()} {name} {call.arguments}"


def _grades(judged: Verdict) -> str:
    rows = ["| client | version | grade | what the application gets |", "|---|---|---|---|"]
    for graded in judged.grades:
        rows.append(f"| {cell(graded.client)} | {cell(graded.version)} | "
                    f"{graded.grade or 'not run'} | {cell(graded.detail)} |")  # fmt: skip
    return "\n".join(rows)


def _file(judged: Verdict, links: Links | None) -> str:
    if not judged.parties:
        shown = judged.grades or judged.contract.end or judged.contract.stopped
        return cell(judged.unfiled) if shown else (
            "Nothing to file from the quirks alone: run the clients (`--clients`) to see "
            "whether any of them mishandles the stream."
        )  # fmt: skip
    sections = []
    for party in judged.parties:
        sections.append(f"### {cell(party.name)}\n\n{cell(party.says)}\n\n{_where(party)}\n\n"
                        f"{fence(chr(10).join(party.evidence))}")  # fmt: skip
        if party.text:
            sections.append(f"Text to file ({count(len(party.text), 'character')}):\n\n"
                            f"{fence(party.text, 'markdown')}")  # fmt: skip
    return "\n\n".join(sections)


def _where(party: Party) -> str:
    """Where to file: the tracker's prefilled link, the support page, or in words."""
    from webapp.triage.filing import BY_MODEL  # it minimises: loaded when a party is shown

    if party.url is None:
        known = cell(party.tracker) if party.tracker else f"the {party.kind}'s tracker"
        return f"**Where:** {known} (not in streamviz's table of trackers)."
    label = "a new issue, prefilled" if party.prefilled else "open"
    hedge = f" ({BY_MODEL})" if party.kind == "provider" and not party.prefilled else ""
    return f"**Where:** {cell(party.tracker)}: [{label}]({party.url}){hedge}"


def verdict(trace: Trace) -> str:
    """One line: the counts, then what the first error (or warning) says, with its step."""
    if not trace.anomalies:
        calls = outcome(trace).calls
        return f"no anomalies under {trace.policy}: {count(calls, 'call')} assembled cleanly"
    errors = sum(1 for anomaly in trace.anomalies if anomaly.severity == "error")
    warnings = len(trace.anomalies) - errors
    counts = ", ".join(
        count(n, word) for n, word in ((errors, "error"), (warnings, "warning")) if n
    )
    first = next((a for a in trace.anomalies if a.severity == "error"), trace.anomalies[0])
    gist = _gist(first)
    said = re.search(rf"\bstep {first.step}\b", gist) is not None  # "... at step 3"
    return f"{counts}: {gist}" if said else f"{counts}: {gist} (step {first.step})"


def _gist(anomaly: Anomaly) -> str:
    """The message up to its first explanation (the part after ": "), clipped."""
    gist = anomaly.message.split(": ", 1)[0] if ": " in anomaly.message[20:] else anomaly.message
    return gist if len(gist) <= 200 else gist[:197] + "..."


def _input(source: ReadResult, trace: Trace) -> str:
    lines = [
        f"- **Input:** {cell(source.format)}, {count(len(source.records), 'record')}"
        + (f", model {cell(source.model)}" if source.model else ""),
        f"- **Assembly:** policy {trace.policy}, path {trace.path}, choice {trace.choice}"
        + (f", server tools {cell(', '.join(trace.server_tools))}" if trace.server_tools else ""),
        f"- **Steps:** {number(len(trace.steps))}, {count(trace.fragment_count, 'fragment')}, "
        f"{count(len(trace.blocks), 'block')}, stop {cell(str(trace.stop_reason))}",
    ]
    lines += [f"- **Reader note:** {cell(note)}" for note in source.notes[:5]]
    return "\n".join(lines)


def _step(step: int, links: Links | None) -> str:
    return f"[{step}]({links.step(step)})" if links else str(step)


def _anomalies(trace: Trace, links: Links | None) -> str:
    if not trace.anomalies:
        return "None."
    rows = ["| severity | code | step | line | block | message |", "|---|---|---|---|---|---|"]
    for anomaly in trace.anomalies:
        line = trace.line_of(anomaly.step)
        block = "" if anomaly.block is None else f"b{anomaly.block}"
        rows.append(
            f"| {anomaly.severity} | {cell(anomaly.code)} | {_step(anomaly.step, links)} | "
            f"{'' if line is None else line} | {block} | {cell(anomaly.message)} |"
        )
    return "\n".join(rows)


def _chunks(source: ReadResult, trace: Trace, links: Links | None) -> str:
    steps = [step for step in trace.anomalies_by_step() if step < len(source.records)]
    if not trace.anomalies:
        return "None."
    if not steps:
        return "None: the anomalies are about the stream as a whole (its end)."
    shown: list[str] = []
    for step in steps[:CHUNKS_SHOWN]:
        record = source.records[step]
        text = record.text or record_text(record)
        if len(text) > CHUNK_CLIP:
            text = text[:CHUNK_CLIP] + f"... ({number(len(text) - CHUNK_CLIP)} more characters)"
        where = f"line {record.line}" if record.line is not None else "no line"
        info = "json" if record.kind == "chunk" else ""
        shown.append(f"Step {_step(step, links)} ({where}):\n\n{fence(text, info)}")
    if len(steps) > CHUNKS_SHOWN:
        shown.append(f"... and {count(len(steps) - CHUNKS_SHOWN, 'more step')} with anomalies.")
    return "\n\n".join(shown)


def _calls(trace: Trace) -> str:
    lines = list(_call_lines(trace.blocks))
    body = fence("\n".join(lines)) if lines else "No tool calls."
    return f"### {trace.policy}\n\n{cell(outcome(trace).describe())}\n\n{body}"


def _call_lines(blocks: Sequence[Block]) -> Iterator[str]:
    for block in blocks:
        name = block.name or "(no name)"
        yield f"b{block.number} {name} id={dumps(block.id).decode()}"
        yield f"  arguments: {dumps(block.text).decode()}"
        delivered = block.delivered
        complaint = f"  ({delivered.error})" if delivered.error else ""
        yield f"  upstream's client delivers: {dumps(delivered.arguments).decode()}{complaint}"


def _notes(notes: Sequence[Note], links: Links | None) -> str:
    if not notes:
        return "No notes."
    return "\n".join(
        f"- Step {_step(note.step, links)}"
        + (f", {cell(note.author)}" if note.author else "")
        + f": {cell(note.text)}"
        for note in sorted(notes, key=lambda note: note.step)
    )


def _clients(matrix: Matrix) -> str:
    """One row per call, one column per client and policy; `≠` marks a cell unlike the row's
    call (what the stream means, or with no intended reading adr-0019's guess)."""
    heads = [f"{column.client} {column.version}".strip() for column in matrix.columns]
    lines = [
        f"**{cell(matrix.comparison)}**",
        "",
        cell(matrix.legend),
        "",
        "| call | " + " | ".join(cell(head) for head in heads) + " |",
        "|---" * (len(heads) + 1) + "|",
    ]
    for row in matrix.rows:
        cells = [_client_cell(column.status, column.error, found) for column, found in
                 zip(matrix.columns, row.cells, strict=True)]  # fmt: skip
        lines.append(f"| {cell(row.label)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _client_cell(status: str, error: str | None, found: Cell | None) -> str:
    if status == "skipped":
        return "not run"
    if status == "unavailable" or found is None:
        return "unavailable"
    if "error" in found.differs:
        return cell(f"raised: {(error or '')[:80]}")
    if found.call is None:
        return "≠ no call" if found.differs else "-"
    text = found.call.arguments if found.call.arguments is not None else ""
    shown = text if len(text) <= 60 else text[:57] + "..."
    mark = "≠ " if found.differs else ""
    return cell(f"{mark}{shown}")
