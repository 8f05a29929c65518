"""`webapp.web.http.links` builds every URL: no other web module or template writes one by hand.

A URL of a stream's pages or of the API (`/s/`, `/examples/`, `/embed/`, `/api/`, `?step=`)
found in an f-string, in a string that starts like one, or in a template attribute (literally,
or by gluing text to an expression) is one built by hand. Route paths (decorators) and
docstrings are not URLs built; the check runs on a made-up module too, so it can fail.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKS = ("/s/", "/examples/", "/embed/", "/api/", "?step=")
BUILDERS = {"links.py"}
"""The modules that build URLs (`webapp/web/http/links.py`)."""
_ATTRIBUTE = re.compile(r'(?:href|action|formaction|src|hx-get|hx-post)="([^"]*)"')


def _not_urls(tree: ast.AST) -> set[int]:
    """The ids of nodes that are docstrings or inside decorators (route paths)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for statement in node.body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    skipped.add(id(statement.value))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                skipped.update(id(inner) for inner in ast.walk(decorator))
    return skipped


def built_in_python(name: str, source: str) -> list[str]:
    """Each URL a module builds by hand (an f-string or a string literal naming a page)."""
    tree = ast.parse(source)
    skipped = _not_urls(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
            if any(mark in text for mark in MARKS):
                found.append(f"{name}:{node.lineno}")
                skipped.update(id(inner) for inner in ast.walk(node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text.startswith(("/s/", "/examples/", "/embed/", "?step=")):
                found.append(f"{name}:{node.lineno}")
    return found


def built_in_template(name: str, text: str) -> list[str]:
    """Each attribute of a template that names a page literally or glues a URL together."""
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _ATTRIBUTE.finditer(line):
            url = match.group(1)
            if any(mark in url for mark in MARKS) or re.search(r"\}\}\s*[/?&]|~", url):
                found.append(f"{name}:{number}")
    return found


def test_no_url_is_built_outside_links() -> None:
    found: list[str] = []
    for path in sorted((ROOT / "webapp" / "web").rglob("*.py")):
        if path.name not in BUILDERS:
            found += built_in_python(str(path.relative_to(ROOT)), path.read_text())
    for path in sorted((ROOT / "templates").glob("*.html")):
        found += built_in_template(path.name, path.read_text())
    assert found == []


def test_the_check_sees_urls_built_by_hand() -> None:
    source = '''"""Docstring: /s/{id}?step=1 is not a URL built."""
@router.get("/s/{stream_id}/notes")
def f(stream_id, note):
    """Nor is /examples/x here."""
    ok = "/rules#drop"
    a = f"/s/{stream_id}/notes"
    b = "/examples/continuation"
    return f"{base}?step={note.step}"
'''
    assert built_in_python("m", source) == ["m:6", "m:7", "m:8"]
    template = (
        '{# /s/ in a comment #}<a href="/rules">x</a>\n'
        '<form action="/examples/{{ key }}">\n'
        '<a href="{{ url }}?wait=true">\n<a href="{{ links.clients }}">\n'
        "<a href=\"{{ base ~ '/x' }}\">\n"
    )
    assert built_in_template("t.html", template) == ["t.html:2", "t.html:3", "t.html:5"]
