"""The markup of what a page draws by the hundred: timeline rows and overview columns.

Everything else on a page is a Jinja template. These are template filters written in Python
(`timeline_rows`, `strip_cells`, and the rows' `badge`, registered by `templating`): a long
stream's page draws 60 rows (`Settings.timeline_window`; 120 then) and 300 columns, and Jinja's
cost is per printed value (an attribute lookup, the finalize hook, an escape and a `Markup`:
about 1 us each, a dozen a row): they were most of the page (`bench/README.md`, "Round three: a
long stream's full page"). A row here costs what one printed value does there.

They follow the templates' rules: every value from a view model is made printable (a lone
surrogate becomes U+FFFD, as `templating._finalize` does) and escaped as markupsafe escapes
(quotes too: any value may land in an attribute); only this module's own literals are markup.
They read the view models by attribute, as a template does (`webapp.web.views.timeline`'s
`TimelineRow`, `RunRow` and `Badge`; `webapp.web.backend.trace.overview.Cell`), and import none.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from functools import lru_cache
from typing import Any

from markupsafe import Markup

from webapp.core.words import count, number
from webapp.web.http.text import printable

_SWAP = (
    ' hx-boost="true" hx-target="#stage" hx-swap="outerHTML" hx-push-url="true"'
    ' hx-sync="#shell:replace"'
)
"""A row is a boosted link: htmx loads its href into the stage and pushes it to history."""
_GAP = "the time since the step before arrived"
_QUIRK = "provider quirk: the wire departs from the contract here"
_STALL = "the gap before this step is over the stall threshold"


def _text(value: Any) -> str:
    """A view model's value, printable and escaped (None prints as nothing)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else str(value)
    if text.isascii():  # no lone surrogate; most need no escape either (a search is cheaper)
        return _escape(text) if _SPECIAL.search(text) else text
    return _escape(printable(text))


_SPECIAL = re.compile("[&<>\"']")


def _escape(text: str) -> str:
    """As markupsafe (and so Jinja) escapes: the same entities as the rest of the page."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
    )


def timeline_rows(rows: Iterable[Any], noted: Collection[int] = ()) -> Markup:
    """The timeline's rows (`Window.rows`): a step's row, a collapsed run's row, or the
    heading of the expanded run that holds the selected step; `noted` steps are flagged."""
    out: list[str] = []
    for row in rows:
        if not row.is_run:
            out.append(_step_row(row, row.step in noted))
        elif row.expanded:
            out.append(_run_head(row))
        else:
            out.append(_run_row(row))
    return Markup("".join(out))


def _step_row(row: Any, noted: bool) -> str:
    kind = _text(row.kind)
    classes = f"row kind-{kind}"
    if row.anomalies:
        classes += " flagged"
    if not row.assembled:
        classes += " unassembled"
    if row.in_run and row.badges:
        classes += f" in-run rule-{_text(row.badges[0].rule)}"
    if row.stall:
        classes += " stalled"
    current = ' aria-current="step"' if row.selected else ""
    line = "" if row.line is None else f"L{number(row.line)}"
    gap = ""
    if row.gap:
        stall = " stall" if row.stall else ""
        title = f"a stall: {_GAP}" if row.stall else _GAP
        gap = f'<span class="gap{stall}" title="{title}">{_text(row.gap)}</span>'
    what = [_badge(item) for item in row.badges]
    if row.stall:
        what.append(f'<span class="mark stall-mark" title="{_STALL}">stall</span>')
    what += [f'<span class="mark">{_text(mark)}</span>' for mark in row.marks]
    if row.error:
        what.append(f'<span class="row-error">{_text(row.error)}</span>')
    what += [f'<span class="anomaly-flag">\u26a0 {_text(code)}</span>' for code in row.anomalies]
    what += [
        f'<span class="quirk-flag" title="{_QUIRK}">\u25c6 {_text(code)}</span>'
        for code in row.quirks
    ]
    if noted:
        what.append('<span class="note-flag" title="has notes">\u270e note</span>')
    return (
        f'<a class="{classes}" id="row-{int(row.step)}" href="{_text(row.url)}"{current}{_SWAP}>'
        f'<span class="n">{number(row.step)}</span> <span class="line">{line}</span>'
        f' <span class="kind">{kind}{gap}</span>'
        f' <span class="what">{" ".join(what)}</span></a>\n'
    )


def badge(item: Any) -> Markup:
    """One fragment of a step (`Badge`): its rule, the block it landed on, what it appended
    (the `badge` filter: the compare, playground and embed pages draw them too)."""
    return Markup(_badge(item))


def _badge(item: Any) -> str:
    rule = _text(item.rule)
    phantom = " phantom" if item.phantom else ""
    late = " <i>late</i>" if item.late else ""
    label = _text(item.label)
    badge = f'<span class="badge rule-{rule}{phantom}">{rule} <b>\u2192 {label}</b>{late}</span>'
    if item.appended:
        title = "the text this fragment appended"
        badge += f'<code class="appended" title="{title}">+{_text(item.appended)}</code>'
    return badge


def _run_row(row: Any) -> str:
    """A collapsed run of alike steps: one link that opens it."""
    phantom = " phantom" if row.phantom else ""
    what = f'<span class="run-label{phantom}">{_text(row.label)}</span>'
    if row.stall:
        what += f'<span class="stall-flag">{_text(row.stall)}</span>'
    if row.quirk_steps:
        title = f"provider quirks at {count(row.quirk_steps, 'step')} of this run"
        marked = count(row.quirk_steps, "quirk step")
        what += f'<span class="quirk-flag" title="{title}">\u25c6 {marked}</span>'
    steps = number(row.last - row.first + 1)
    return (
        f'<a class="row run rule-{_text(row.rule)}" id="run-{int(row.first)}"'
        f' href="{_text(row.url)}" title="Show these {steps} steps"{_SWAP}>'
        f'<span class="n">{number(row.first)}</span> <span class="line">\u25b8</span>'
        f' <span class="kind">run</span>'
        f' <span class="what">{what}<span class="run-show">show</span></span></a>\n'
    )


def _run_head(row: Any) -> str:
    """The heading of the expanded run (its steps follow as rows): a link past its end."""
    phantom = " phantom" if row.phantom else ""
    skip = ""
    if row.after_url:
        url = _text(row.after_url)
        skip = (
            f' <a id="skip-run-{int(row.first)}" class="step-link" href="{url}" hx-get="{url}"'
            ' hx-target="#stage" hx-swap="outerHTML" hx-push-url="true"'
            f' hx-sync="#shell:replace">skip to step {number(row.last + 1)} \u2192</a>'
        )
    return (
        f'<div class="run-head rule-{_text(row.rule)}" id="run-{int(row.first)}">'
        f'<span class="n">\u25be</span> <span class="what"><span class="run-label{phantom}">'
        f"{_text(row.label)}</span>{skip}</span></div>\n"
    )


def strip_cells(cells: Iterable[Any]) -> Markup:
    """The overview strip's columns (`Strip.cells`): each a link, coloured by its classes."""
    return Markup("".join(map(_cell, cells)))


CELLS_KEPT = 4096
"""The overview columns whose markup is kept (a dozen views' strips; about 600 bytes each)."""


@lru_cache(maxsize=CELLS_KEPT)
def _cell(cell: Any) -> str:
    # a view draws its strip's columns once for all its pages (`overview.strip`), so every
    # page after the first finds the same cells here: a dict lookup, not three escapes
    url, title = _text(cell.url), _text(cell.title)
    return f'<a class="{_text(cell.classes)}" href="{url}" title="{title}"></a>'
