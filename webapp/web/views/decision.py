"""Decision record 0019 as HTML: Markdown rendered safely, its terms linked to what shows them.

markdown-it-py renders with raw HTML off (CommonMark, so any `<...>` in the text is escaped);
one core rule then turns the first occurrence of each term in plain text (never in code) into
a link to its rule on /rules or to the example that shows that consequence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markupsafe import Markup

from webapp.examples import decision
from webapp.web.http.links import example_page


@dataclass(frozen=True, slots=True)
class Term:
    """A phrase of the decision record and where it is shown."""

    phrase: str
    url: str
    title: str


TERMS: tuple[Term, ...] = (
    Term("assembled by exact key", "/rules#exact-index", "The exact-index and exact-id rules"),
    Term("continuation chunks", example_page("continuation"), "Example: continuation chunks"),
    Term(
        "a phantom call",
        example_page("continuation", on_compare=True),
        "Phantom calls under exact-key",
    ),
    Term("server-tools pending-candidate path", "/rules#server-tools", "The server-tools path"),
    Term("most recently opened tool-call block", "/rules#continuation", "The continuation rule"),
    Term(
        "not-yet-folded pending candidate", example_page("server-late"), "Example: a late fragment"
    ),
    Term("is dropped", "/rules#drop", "The drop rule"),
    Term("Exact-key matching stays primary", example_page("same-index"), "Example: index 0 twice"),
    Term("whose name is backfilled", example_page("backfill"), "Example: a nameless header"),
    Term(
        "single real call",
        example_page("continuation", on_compare=True),
        "Example: one call, not four",
    ),
    Term(
        "silently dropped",
        example_page("dropped", on_compare=True),
        "Example: a dropped continuation",
    ),
)
"""The linked phrases, in the order they first occur (a phrase is linked once)."""


def _link_terms(state: StateCore) -> None:
    """Split text tokens around each term's first occurrence and wrap it in a link."""
    pending = {term.phrase: term for term in TERMS}
    pattern = re.compile("|".join(re.escape(phrase) for phrase in pending))
    for token in state.tokens:
        if token.type != "inline" or not token.children:
            continue
        children: list[Token] = []
        for child in token.children:
            if child.type != "text":
                children.append(child)
                continue
            children.extend(_split(child.content, pattern, pending))
        token.children = children


def _split(text: str, pattern: re.Pattern[str], pending: dict[str, Term]) -> list[Token]:
    out: list[Token] = []
    at = 0
    for found in pattern.finditer(text):
        term = pending.pop(found.group(0), None)
        if term is None:
            continue
        out.append(_text(text[at : found.start()]))
        link = Token("link_open", "a", 1)
        link.attrs = {"href": term.url, "title": term.title, "class": "term"}
        out.extend((link, _text(found.group(0)), Token("link_close", "a", -1)))
        at = found.end()
    out.append(_text(text[at:]))
    return [token for token in out if token.type != "text" or token.content]


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


@cache
def rendered_decision() -> Markup:
    """The decision record's HTML (safe: raw HTML in the Markdown is escaped, never passed on)."""
    md = MarkdownIt("commonmark", {"html": False})
    md.core.ruler.push("link_terms", _link_terms)
    return Markup(md.render(decision()))  # markdown-it escapes the text itself
