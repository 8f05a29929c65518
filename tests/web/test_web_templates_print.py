"""Templates print what the view models decided: short lines, few conditions, no functions.

A route hands its template a view model (`webapp.web.views`); the template lays it out. So no
template line runs past 160 characters (`scripts/template_lines.py` splits them where the page
cannot change), no template holds more than 25 conditions (`{% if` and `{% elif`; the few
above that today are capped where they are, to come down, never up), and a template calls
nothing but its macros, Jinja's own helpers and the anomaly table's `severity_of`: no story or
flow function, nor any other view model's.
"""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
from jinja2 import nodes

from webapp.web.http.templating import TEMPLATES, make_templates

LONGEST_LINE = 160
MOST_CONDITIONS = 25
CONDITIONS_TODAY = {"export.html": 44, "_clients_matrix.html": 33}
"""Templates over `MOST_CONDITIONS`, capped at their count: they may only come down."""
CALLABLE = {"range", "dict", "namespace", "lipsum", "cycler", "joiner", "severity_of"}
"""What a template may call besides its macros: Jinja's helpers, the anomaly table's lookup."""
CONDITION = re.compile(r"\{%-?\s*(?:el)?if\b")


def _templates() -> list[Path]:
    found = sorted(TEMPLATES.glob("*.html"))
    assert len(found) > 40, "the templates were found"
    return found


def long_lines(text: str) -> list[int]:
    """The numbers of the lines over `LONGEST_LINE` characters."""
    return [n for n, line in enumerate(text.splitlines(), 1) if len(line) > LONGEST_LINE]


def conditions(text: str) -> int:
    """How many `{% if` and `{% elif` tags the template holds."""
    return len(CONDITION.findall(text))


def calls(env: jinja2.Environment, text: str) -> set[str]:
    """The names a template calls that are not its own or imported macros."""
    tree = env.parse(text)
    macros = {macro.name for macro in tree.find_all(nodes.Macro)}
    for imported in tree.find_all(nodes.FromImport):
        macros |= {name if isinstance(name, str) else name[1] for name in imported.names}
    return {
        call.node.name
        for call in tree.find_all(nodes.Call)
        if isinstance(call.node, nodes.Name) and call.node.name not in macros
    }


def test_no_template_line_is_over_160_characters() -> None:
    found = {path.name: long_lines(path.read_text(encoding="utf-8")) for path in _templates()}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_no_template_holds_more_than_25_conditions() -> None:
    counts = {path.name: conditions(path.read_text(encoding="utf-8")) for path in _templates()}
    over = {
        name: count
        for name, count in counts.items()
        if count > CONDITIONS_TODAY.get(name, MOST_CONDITIONS)
    }
    assert over == {}
    assert counts["_state.html"] <= 23  # the state panel's words are its cards' (views/panels)


def test_templates_call_no_view_model_function() -> None:
    env = make_templates().env
    called = {path.name: calls(env, path.read_text(encoding="utf-8")) for path in _templates()}
    assert {name: names - CALLABLE for name, names in called.items() if names - CALLABLE} == {}
    offered = {
        name
        for name, value in env.globals.items()
        if getattr(value, "__module__", "").startswith("webapp.web.views")
    }
    assert offered == set()


def test_the_checks_see_a_long_line_a_condition_and_a_story_call() -> None:
    env = make_templates().env
    text = (
        '{% from "_macros.html" import clipped %}\n'
        "{% set story = story_of(links, 'timeline') %}{{ clipped(x) }}{{ severity_of('a') }}\n"
        "{% if a %}{%- elif b %}{% endif %}{% for x in y if x %}{% endfor %}\n" + "x" * 161
    )
    assert long_lines(text) == [4]
    assert conditions(text) == 2
    assert calls(env, text) == {"story_of", "severity_of"}
