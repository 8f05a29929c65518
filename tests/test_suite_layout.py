"""The suite's own layout: the browser tests apart, so the fast suites need no browser."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imports(path: Path) -> set[str]:
    """The top-level names of the modules a file imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_only_the_browser_tests_import_playwright() -> None:
    outside = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("*.py")
        if "node_modules" not in path.parts
        and path.parts[len(TESTS.parts)] != "browser"
        and "playwright" in imports(path)
    ]
    assert outside == []
    assert list((TESTS / "browser").glob("test_*.py"))
    assert not list(TESTS.glob("[!b]*/*browser*.py"))  # none left beside the fast tests
