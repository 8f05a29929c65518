"""Text view of every client's view: the headline, the grades, where to file, then each call's
cells."""

from __future__ import annotations

from collections.abc import Iterator

from webapp.cli.render import Painter, escape, input_lines, shorten
from webapp.core.records import ReadResult
from webapp.lenses.matrix import Cell
from webapp.lenses.pins import BY_CLIENT
from webapp.lenses.results import LensResult
from webapp.triage.filing import BY_MODEL
from webapp.triage.verdict import Party, Verdict

_STATUS_STYLE = {"ok": "green", "error": "red", "unavailable": "yellow", "skipped": "dim"}
_GRADE_STYLE = {"intact": "green", "damaged": "bold red", "flagged": "yellow", "guessed": "cyan"}
ARGUMENTS_SHOWN = 60


def clients_lines(verdict: Verdict, source: ReadResult | None, paint: Painter) -> Iterator[str]:
    """What `streamviz clients` prints: the headline first, each grade's detail, each party's
    sentence (report.md adds the evidence), then the calls."""
    matrix = verdict.matrix
    assert matrix is not None, "the clients ran"
    yield from input_lines(source, paint)
    yield f"{paint('verdict', 'bold')}  {escape(verdict.headline)}"
    width = max(len(column.client) for column in matrix.columns)
    yield paint("clients", "bold")
    for column in matrix.columns:
        yield "  " + _column_line(column, width, paint)
    yield paint("grades", "bold") + "  (against the calls the stream means)"
    for graded in verdict.grades:
        shown = graded.grade or "not run"
        grade = paint(f"{shown:<8}", _GRADE_STYLE.get(shown, "dim"))
        yield f"  {graded.client:<{width}}  {grade} {escape(graded.detail)}"
    contract = verdict.contract
    for found in contract.quirks:
        yield f"{paint('quirk', 'bold')}    {found.code}: {escape(found.message)}"
    if contract.intended is not None:
        yield f"{paint('means', 'bold')}    {escape(contract.intended.describe())}"
    else:
        yield f"{paint('means', 'bold')}    {contract.no_reading}: {escape(contract.why or '')}"
    for party in verdict.parties:
        yield f"{paint('file', 'bold')}     {escape(party.says)}"
        yield f"{paint('where', 'bold')}    {escape(_where(party))}"
    if not verdict.parties:
        yield f"{paint('file', 'bold')}     {escape(verdict.unfiled)}"
    yield f"{paint('compared', 'bold')} {escape(matrix.comparison)}"
    yield paint(f"         {matrix.legend}", "dim")
    for row in matrix.rows:
        yield ""
        yield paint(escape(row.label), "bold")
        for column, cell in zip(matrix.columns, row.cells, strict=True):
            yield f"  {column.client:<{width}}  {_cell_text(column, cell, paint)}"


def _where(party: Party) -> str:
    """Where to file, with the link when it is short (a prefilled one is long: the JSON and
    report.md carry it)."""
    if party.url is None:
        return party.tracker or f"the {party.kind}'s tracker (not in streamviz's table)"
    if party.prefilled:
        return f"{party.tracker}: a prefilled new issue (--format json and report have the link)"
    hedge = f" ({BY_MODEL})" if party.kind == "provider" else ""
    return f"{party.tracker}: {party.url}{hedge}"


def _column_line(column: LensResult, width: int, paint: Painter) -> str:
    pin = BY_CLIENT.get(column.client)
    package = f"{pin.package} {column.version}" if pin else column.version
    status = paint(f"{column.status:<11}", _STATUS_STYLE[column.status])
    line = f"{column.client:<{width}}  {status} {escape(package)}"
    if column.status in ("unavailable", "skipped"):
        line += f"  ({escape(column.error or '')})"
    elif column.error:
        line += f"  {escape(shorten(column.error, 160))}"
    return line


def _cell_text(column: LensResult, cell: Cell | None, paint: Painter) -> str:
    if cell is None:
        return paint("(not run)" if column.status == "skipped" else "(not installed)", "dim")
    if "error" in cell.differs:
        return paint("raised: " + shorten(column.error or "error", 100), "red")
    if cell.call is None:
        return paint("(no call)", "red") if cell.differs else paint("-", "dim")
    call = cell.call
    text = (
        f"{escape(call.id or '-')}  {escape(call.name or '(no name)')}  "
        f"{shorten(call.arguments if call.arguments is not None else 'null', ARGUMENTS_SHOWN)}"
    )
    if call.invalid:
        text += f"  [flagged: {shorten(call.invalid, 60)}]"
    if cell.differs:
        marks = paint("(" + ", ".join(cell.differs) + ")", "red")
        return f"{paint('≠', 'bold red')} {text}  {marks}"
    return f"= {text}"
