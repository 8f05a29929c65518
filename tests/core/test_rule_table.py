"""The rules table (`webapp.core.rules`): its rows, its one decision, the words of each verdict,
and everything that reads the rows (the stylesheet, the palette, the flow diagram).

A sixth rule is a row and a branch of `decide` in `webapp/core/rules.py`, its cases here, its
branch in the spec's oracle (`tests/reference/oracle.py`), its colours in `static/app.css`
(the stylesheet test below says which lines are missing) and in `static/export.css` (kept equal
by `tests/web/test_web_share.py`), and an example where it fires for the /rules page's "see it"
link (`webapp/web/views/stories.SEE_IT`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.streamkit import chunk, frag, records, tool_stream
from webapp.cli.palette import RULE_COLOURS, rule_style
from webapp.core.assembler import assemble
from webapp.core.options import Options
from webapp.core.records import Record
from webapp.core.rules import POLICIES, RULE_NAMES, RULES, rules_for
from webapp.web.views.flow import rule_flow

CSS = Path(__file__).resolve().parents[2] / "static" / "app.css"
_HEX = re.compile(r"#[0-9a-f]{6}")


def _declared(block: str) -> dict[str, str]:
    return dict(re.findall(r"--rule-([a-z-]+):\s*(#[0-9a-fA-F]{6});", block))


def _schemes(css: str) -> tuple[str, str]:
    """The light `:root` block and the dark one (inside `prefers-color-scheme: dark`)."""
    light = css[css.index(":root {") : css.index("}", css.index(":root {"))]
    dark_start = css.index("@media (prefers-color-scheme: dark)")
    dark = css[dark_start : css.index("}", css.index(":root {", dark_start))]
    return light, dark


def test_the_stylesheet_carries_exactly_the_tables_colours() -> None:
    css = CSS.read_text(encoding="utf-8")
    light, dark = _schemes(css)
    assert _declared(light) == {rule.name: rule.colour.light for rule in RULES}
    assert _declared(dark) == {rule.name: rule.colour.dark for rule in RULES}
    classes = re.findall(r"^\.rule-([a-z-]+) \{ --rule: var\(--rule-\1\); \}$", css, re.M)
    assert classes == list(RULE_NAMES)
    # The overview's columns name a rule by its row: `.r<n>` and `.q<n>` for each.
    for n, name in enumerate(RULE_NAMES):
        assert f".r{n} {{ --a: var(--rule-{name}); }} .q{n} {{ --b: var(--rule-{name}); }}" in css
    assert not re.search(rf"\.[rq]{len(RULES)} ", css), "a row class past the table"


def test_every_row_is_filled_in_and_every_colour_is_its_own() -> None:
    for rule in RULES:
        assert rule.meaning and rule.example and rule.outcome and rule.policies
        assert _HEX.fullmatch(rule.colour.light) and _HEX.fullmatch(rule.colour.dark)
    for kind in ("terminal", "light", "dark"):
        assert len({getattr(rule.colour, kind) for rule in RULES}) == len(RULES), kind
    assert {policy for rule in RULES for policy in rule.policies} == set(POLICIES)
    assert [rule.name for rule in rules_for("exact-key")] == ["exact-index", "exact-id", "new"]


def test_the_palette_and_the_flow_diagram_read_the_rows() -> None:
    assert {name: colour.terminal for name, colour in RULE_COLOURS.items()} == {
        rule.name: rule.colour.terminal for rule in RULES
    }
    assert rule_style("exact-id") == "cyan" and rule_style("no-such-rule") == ""
    svg = str(rule_flow())
    boxes = re.findall(r'<g class="flow-rule rule-([a-z-]+)"', svg)
    assert boxes == list(RULE_NAMES)
    for rule in RULES:
        first_word = rule.outcome.split()[0]
        assert f">{first_word}" in svg, rule.name


# Each rule with each kind of miss: the rule `decide` names, and the words of its row.

SERVER = Options("adr-0019", "server-tools", ("web_search",))
FOLDED = tool_stream([[frag(0, "a", "web_search", "{}")], [frag(1, "b", "f", "{")]])[:2]
OPEN = tool_stream([[frag(0, "a", "f", "{")]])[:1]
CASES = [
    ("exact-index", OPEN, Options(), frag(0, args="}"), 'index 0 names block #0'),
    ("exact-id", OPEN, Options(), frag(id="a", args="}"), 'no index; id "a" names block #0'),
    ("exact-id", OPEN, Options(), frag(7, "a", args="}"),
     'no block under index 7; id "a" names block #0'),
    ("continuation", OPEN, Options(), frag(args="}"),
     "no index, no id, no name: continuation onto block #0, the most recently opened; "
     "no other block was waiting for arguments"),
    ("continuation", FOLDED, SERVER, frag(0, args="}"),
     "index 0 names only block #0 (folded), no id, no name: continuation onto block #1, the "
     "most recently opened candidate not yet folded; no other block was waiting for arguments"),
    ("drop", [], Options(), frag(args="{}"),
     "no index, no id, no name, and no open block to continue: dropped"),
    ("drop", [], SERVER, frag(3, args="{}"),
     "no block under index 3, no id, no name, and no candidate still pending to continue: "
     "dropped"),
    ("new", OPEN, Options("exact-key"), frag(args="}"),
     "no index; no name and no id: under exact-key matching this opens a phantom block"),
    ("new", OPEN, Options(), frag(1, "b", "g", "{"),
     'no block under index 1, no block under id "b"; name "g": opens a new block'),
    ("new", OPEN, Options(), frag(id="b"),
     'no index, no block under id "b"; id "b" without a name is a call header: opens a new '
     "block"),
    ("new", FOLDED[:1], SERVER, frag(0, "a", "g", "{"),
     'index 0 names only block #0 (folded), id "a" names only block #0 (folded); name "g": '
     "opens a new block"),
]  # fmt: skip


def _judged(stream: list[Record], options: Options, probe: dict[str, object]) -> tuple[str, str]:
    line = 2 * len(stream) + 1
    trace = assemble([*stream, Record("chunk", line, chunk(probe))], options)
    (fragment,) = trace.steps[len(stream)].fragments
    return fragment.rule, fragment.reason


@pytest.mark.parametrize(("rule", "stream", "options", "probe", "words"), CASES)
def test_each_rule_is_decided_and_worded_by_its_row(
    rule: str, stream: list[Record], options: Options, probe: dict[str, object], words: str
) -> None:
    assert _judged(stream, options, probe) == (rule, words)


def test_the_cases_cover_every_row() -> None:
    assert {rule for rule, *_ in CASES} == set(RULE_NAMES)


def test_a_continuation_names_the_other_blocks_that_were_waiting() -> None:
    stream = records([chunk(frag(0, "a", "f", "{")), chunk(frag(1, "b", "g", '{"x":'))], done=False)
    rule, words = _judged(stream, Options(), frag(args="1}"))
    assert rule == "continuation"
    assert words.endswith(
        "recently opened; block #0 f was also open, its arguments '{' not yet complete"
    )
