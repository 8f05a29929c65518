"""Text view of a diff of two streams: each side, each call side by side, then the streams."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webapp.cli.render import Painter, escape, shorten
from webapp.core.words import count, quote
from webapp.triage.diff import Diff, Pair
from webapp.triage.sides import DiffCall, Side
from webapp.triage.values import show

ARGUMENTS_SHOWN = 70


def diff_lines(diff: Diff, paint: Painter) -> Iterator[str]:
    """What `streamviz diff` prints."""
    for name, side in (("a", diff.a), ("b", diff.b)):
        yield f"{paint(name, 'bold')}      {_side_line(side)}"
        if side.contract.why:
            yield f"       {paint('no intended reading:', 'yellow')} {escape(side.contract.why)}"
    yield f"{paint('ids', 'bold')}    {escape(diff.ids_why)}"
    for number, pair in enumerate(diff.pairs, 1):
        yield ""
        yield from _pair_lines(number, pair, diff, paint)
    if diff.streams:
        yield ""
        yield paint("streams", "bold") + "  (how the streams differ besides: not in meaning)"
        for difference in diff.streams:
            yield f"  {escape(str(difference))}"
    yield ""
    yield from _twin_lines(diff, paint)
    yield from _grade_lines(diff, paint)
    for name, side in (("a", diff.a), ("b", diff.b)):
        for found in side.contract.quirks:
            yield f"{paint('quirk', 'bold')} {name}  {found.code}: {escape(found.message)}"
    verdict = paint("same", "bold green") if diff.same else paint("different", "bold red")
    yield f"{verdict}   {escape(diff.summary)}"
    if diff.hop is not None:
        yield f"{paint('hop', 'bold')}    {escape(diff.hop.sentence)}"


def _side_line(side: Side) -> str:
    parts = [escape(side.label)]
    what = f"{side.format}, " if side.format else ""
    parts.append(f"{what}{count(side.records, 'record')}")
    if side.model:
        parts.append(f"model {escape(side.model)}")
    parts.append(f"{side.reading_words}: {count(len(side.calls), 'call')}")
    parts.append(f"finish {escape(side.finish_reason or '(none)')}")
    if side.answer:
        return " | ".join(parts)
    parts.append(count(side.trace.chunk_count, "chunk"))
    anomalies = len(side.trace.anomalies)
    parts.append(count(anomalies, "anomaly", "anomalies") if anomalies else "no anomaly")
    timing = side.timing
    if timing is not None:
        shown = [f"{label} {ms:,.0f} ms" for label, ms in (
            ("first byte", timing.first_byte), ("first call", timing.first_call),
            ("finish", timing.finish), ("end", timing.end)) if ms is not None]  # fmt: skip
        parts.append(", ".join(shown))
    return " | ".join(parts)


def _pair_lines(number: int, pair: Pair, diff: Diff, paint: Painter) -> Iterator[str]:
    name = pair.name if isinstance(pair.name, str) else "(no name)"
    if pair.a is None or pair.b is None:
        mark = paint(f"only in {'B' if pair.a is None else 'A'}", "bold red")
    elif pair.same:
        mark = paint("= same", "green")
    else:
        mark = paint("≠ differs", "bold red")
    yield f"{paint(f'call {number}', 'bold')}  {escape(name)}  {mark}"
    for label, call, side in (("a", pair.a, diff.a), ("b", pair.b, diff.b)):
        if call is not None:
            yield f"  {label}  {_call_text(call, side.answer)}"
    if pair.a is not None and pair.b is not None:
        for difference in pair.differences:
            yield f"     {paint(escape(str(difference)), 'red')}"
    where = pair.diverges
    if where is not None:
        sides = ", ".join(
            f"{label} {'in the answer' if side.answer else _place(place.step, place.line)}"
            + (f" {escape(quote(place.text, 30))}" if place.text else "")
            for label, place, side in (("a", where.a, diff.a), ("b", where.b, diff.b))
        )
        yield f"     {paint('the argument text parts', 'dim')} at character {where.offset}: {sides}"
    for difference in pair.besides:
        yield f"     {paint(escape(str(difference)), 'yellow')}"


def _call_text(call: DiffCall, answer: bool) -> str:
    ident = escape(call.id) if isinstance(call.id, str) else show(call.id)
    text = f"#{call.number} {ident}  {shorten(call.arguments, ARGUMENTS_SHOWN)}"
    text += "  (in message.tool_calls)" if answer else f"  (opened step {call.opened})"
    if call.receives_error:
        text += f"  receives {escape(show(call.receives))}: {shorten(call.receives_error, 60)}"
    return text


def _place(step: int | None, line: int | None) -> str:
    if step is None:
        return "(its text ends there)"
    return f"step {step}" + (f" (line {line})" if line is not None else "")


def _twin_lines(diff: Diff, paint: Painter) -> Iterator[str]:
    """The non-stream answer held to the stream's meaning and to what each client received."""
    found = diff.twin
    if found is None:
        return
    yield paint("answer", "bold") + f"  ({found.answer}: the non-stream answer)"
    for agreement in found.agreements:
        style = "green" if agreement.same else ("dim" if agreement.same is None else "red")
        yield f"  {paint(escape(agreement.words), style)}"
    yield ""


def _grade_lines(diff: Diff, paint: Painter) -> Iterator[str]:
    if diff.a.answer or diff.b.answer:  # an answer is not graded: the lines above say it
        return
    mine = {g.client: g for g in diff.a.verdict.grades}
    theirs = {g.client: g for g in diff.b.verdict.grades}
    clients = list(mine) + [name for name in theirs if name not in mine]
    if not clients:
        return
    width = max(len(name) for name in clients)
    yield paint("grades", "bold") + "  a | b  (against the calls each stream means)"
    for name in clients:
        left, right = _grade(mine.get(name)), _grade(theirs.get(name))
        style = "" if left == right else "yellow"
        yield f"  {name:<{width}}  {paint(f'{left} | {right}', style)}"


def _grade(graded: Any) -> str:
    if graded is None:
        return "-"
    return str(graded.grade or "not run")
