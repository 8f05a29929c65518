"""The rows and columns drawn in Python (`webapp.web.http.markup`) are what the templates drew.

`REFERENCE` is the Jinja the timeline rows, their badges and the overview's columns were until
they moved to Python for speed (a long stream's page draws 60 rows and 300 columns); rendered
by the app's own environment (autoescape, the finalize hook), it is the oracle: for any view
model values, lone surrogates and markup characters included, the filters' markup is the
template's, whitespace between tags aside (HTML renders a run of it as one space, and the
layout puts none where it would show).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from webapp.core.rules import RULE_NAMES
from webapp.web.backend.trace.overview import Cell
from webapp.web.http import markup
from webapp.web.http.templating import make_templates
from webapp.web.views.timeline import Badge, RunRow, TimelineRow

REFERENCE = """\
{% macro badge(item) -%}
<span class="badge rule-{{ item.rule }}{% if item.phantom %} phantom{% endif %}">{{ item.rule }} <b>→ {{ item.label }}</b>{% if item.late %} <i>late</i>
  {%- endif %}</span>{% if item.appended %}<code class="appended" title="the text this fragment appended">+{{ item.appended }}</code>{% endif %}
{%- endmacro %}
{% macro step_link(url, label, id, key) -%}
{% if url %}<a id="{{ id }}" class="step-link" href="{{ url }}" hx-get="
  {{- url }}" hx-target="#stage" hx-swap="outerHTML" hx-push-url="true" hx-sync="#shell:replace"{% if key %} aria-keyshortcuts="{{ key }}"{% endif %}>
  {{- label }}</a>{% else %}<span class="step-link off" aria-disabled="true">{{ label }}</span>{% endif %}
{%- endmacro %}
{% for row in rows %}
{% if row.is_run and not row.expanded %}
<a class="row run rule-{{ row.rule }}" id="run-{{ row.first }}" href="
  {{- row.url }}" title="Show these {{ (row.last - row.first + 1)|num }} steps" hx-boost="true" hx-target="#stage"
    {#- #} hx-swap="outerHTML" hx-push-url="true" hx-sync="#shell:replace">
  <span class="n">{{ row.first|num }}</span>
  <span class="line">▸</span>
  <span class="kind">run</span>
  <span class="what"><span class="run-label{% if row.phantom %} phantom{% endif %}">{{ row.label }}</span>{% if row.stall %}<span class="stall-flag">
    {{- row.stall }}</span>{% endif %}
    {%- if row.quirk_steps %}<span class="quirk-flag" title="provider quirks at {{ row.quirk_steps|plural('step') }} of this run">◆
      {#- #} {{ row.quirk_steps|plural("quirk step") }}</span>{% endif %}<span class="run-show">show</span></span>
</a>
{% elif row.is_run %}
<div class="run-head rule-{{ row.rule }}" id="run-{{ row.first }}">
  <span class="n">▾</span>
  <span class="what"><span class="run-label{% if row.phantom %} phantom{% endif %}">{{ row.label }}</span>
    {%- if row.after_url %} {{ step_link(row.after_url, "skip to step %s →" % ((row.last + 1)|num), "skip-run-%d" % row.first, "") }}{% endif %}</span>
</div>
{% else %}
<a class="row kind-{{ row.kind }}{% if row.anomalies %} flagged{% endif %}{% if not row.assembled %} unassembled{% endif %}{% if row.in_run %} in-run rule-
  {{- row.badges[0].rule }}{% endif %}{% if row.stall %} stalled{% endif %}" id="row-{{ row.step }}" href="{{ row.url }}"
  {%- if row.selected %} aria-current="step"{% endif %} hx-boost="true" hx-target="#stage" hx-swap="outerHTML" hx-push-url="true" hx-sync="#shell:replace">
  <span class="n">{{ row.step|num }}</span>
  <span class="line">{% if row.line is not none %}L{{ row.line|num }}{% endif %}</span>
  <span class="kind">{{ row.kind }}{% if row.gap %}<span class="gap{% if row.stall %} stall{% endif %}" title="
    {%- if row.stall %}a stall: {% endif %}the time since the step before arrived">{{ row.gap }}</span>{% endif %}</span>
  <span class="what">
    {% for item in row.badges %}
    {{ badge(item) }}
    {% endfor %}
    {% if row.stall %}<span class="mark stall-mark" title="the gap before this step is over the stall threshold">stall</span>{% endif %}
    {% for mark in row.marks %}<span class="mark">{{ mark }}</span>{% endfor %}
    {% if row.error %}<span class="row-error">{{ row.error }}</span>{% endif %}
    {% for code in row.anomalies %}<span class="anomaly-flag">⚠ {{ code }}</span>{% endfor %}
    {% for code in row.quirks %}<span class="quirk-flag" title="provider quirk: the wire departs from the contract here">◆ {{ code }}</span>{% endfor %}
    {% if row.step in noted %}<span class="note-flag" title="has notes">✎ note</span>{% endif %}
  </span>
</a>
{% endif %}
{% endfor %}
|{% for cell in cells %}<a class="{{ cell.classes }}" href="{{ cell.url }}" title="{{ cell.title }}"></a>{% endfor %}
"""  # noqa: E501  (the templates' own lines, as they were)

ENVIRONMENT = make_templates().env
ORACLE = ENVIRONMENT.from_string(REFERENCE)
FILTERS = ENVIRONMENT.from_string("{{ rows|timeline_rows(noted) }}|{{ cells|strip_cells }}")

# what a stream can put in a row: markup characters, quotes, lone surrogates, any text
texts = st.text(alphabet=st.characters(codec=None), max_size=12) | st.sampled_from(
    ["", "<b>&amp;", "\"'", "\ud800", "a\nb", "#0 get_weather"]
)
maybe_texts = st.none() | texts
steps = st.integers(0, 10**7)
rules = st.sampled_from(RULE_NAMES)

badges = st.builds(
    Badge, rule=rules, label=texts, phantom=st.booleans(), late=st.booleans(), appended=texts
)
step_rows = st.builds(
    TimelineRow,
    step=steps,
    line=st.none() | steps,
    kind=st.sampled_from(["chunk", "done", "invalid", "end"]),
    url=texts,
    selected=st.booleans(),
    assembled=st.booleans(),
    badges=st.lists(badges, min_size=1, max_size=3).map(tuple),
    marks=st.lists(texts, max_size=3).map(tuple),
    anomalies=st.lists(texts, max_size=2).map(tuple),
    error=maybe_texts,
    in_run=st.booleans(),
    gap=texts,
    stall=st.booleans(),
    quirks=st.lists(texts, max_size=2).map(tuple),
)


@st.composite
def run_rows(draw: st.DrawFn) -> RunRow:
    first = draw(steps)
    return RunRow(
        first=first,
        last=first + draw(st.integers(1, 10**6)),
        rule=draw(rules),
        label=draw(texts),
        url=draw(texts),
        after_url=draw(st.none() | texts),
        expanded=draw(st.booleans()),
        phantom=draw(st.booleans()),
        stall=draw(texts),
        quirk_steps=draw(st.integers(0, 3)),
    )


cells = st.builds(Cell, url=texts, classes=texts, title=texts, current=st.booleans())


def _collapsed(html: str) -> str:
    return re.sub(r"\s+", " ", html).replace("> <", "><").strip()


def _both(context: dict[str, Any]) -> tuple[str, str]:
    return _collapsed(ORACLE.render(context)), _collapsed(FILTERS.render(context))


@settings(max_examples=300)
@given(
    rows=st.lists(step_rows | run_rows(), max_size=6),
    cells=st.lists(cells, max_size=4),
    noted=st.frozensets(steps, max_size=2),
)
def test_the_rows_and_columns_are_the_templates_markup(
    rows: list[TimelineRow | RunRow], cells: list[Cell], noted: frozenset[int]
) -> None:
    noted = noted | {row.step for row in rows[:1] if isinstance(row, TimelineRow)}
    expected, drawn = _both({"rows": rows, "cells": cells, "noted": noted})
    assert drawn == expected


@given(item=badges)
def test_a_badge_is_the_macros_markup(item: Badge) -> None:
    oracle = ENVIRONMENT.from_string(REFERENCE.split("{% macro step_link")[0] + "{{ badge(item) }}")
    assert markup.badge(item) == Markup(oracle.render(item=item).strip())


def test_no_markup_from_a_stream_reaches_the_page_unescaped() -> None:
    hostile = '<script>"x"</script>\ud800'
    row = TimelineRow(
        1, 2, "chunk", f"/s?step=1&{hostile}", True, True,
        (Badge("new", hostile, False, False, hostile),), (hostile,), (hostile,), hostile,
        quirks=(hostile,), gap=hostile,
    )  # fmt: skip
    cell = Cell(hostile, hostile, hostile, False)
    drawn = str(markup.timeline_rows([row])) + str(markup.strip_cells([cell]))
    assert "<script>" not in drawn and "\ud800" not in drawn and '"x"' not in drawn
    # the row's url, label, appended text, mark, anomaly, error, quirk and gap; the cell's three
    assert drawn.count("&lt;script&gt;&#34;x&#34;&lt;/script&gt;\ufffd") == 11
