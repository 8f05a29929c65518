"""The core imports no web code (house style 1): checked in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = [
    "webapp.core.assembler",
    "webapp.core.trace",
    "webapp.core.rules",
    "webapp.triage.compare",
    "webapp.triage.minimise",
]
CORE += [
    "webapp.triage.predicates",
    "webapp.core.readers.writer",
    "webapp.triage.report",
    "webapp.triage.expect",
]
OPTIONAL = ["webapp.core.readers", "webapp.core.redact", "webapp.core.redact.content"]
WEB = ["fastapi", "starlette", "jinja2"]

PROGRAM = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {web!r})))
"""


def _present(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def test_the_core_imports_no_web_code() -> None:
    modules = CORE + [name for name in OPTIONAL if _present(name)]
    assert "webapp.core.readers" in modules, "the readers are part of the core"
    for web in WEB:
        assert _present(web), f"{web} is installed, so importing it by accident would show"
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(web=set(WEB)), *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_the_check_would_see_a_web_import() -> None:
    """The same program does report web modules when they are imported."""
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(web=set(WEB)), "jinja2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "jinja2" in json.loads(result.stdout)
