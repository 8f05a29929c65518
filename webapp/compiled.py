"""The core modules compiled with mypyc, and when their compiled form is not used.

`make` compiles the modules of `MODULES` in place (`scripts/compile.py`): each gets an
extension module beside its source, which Python imports instead of the source. They are the
same source: mypyc turns the typed code into C, and adds a check of every annotated type
where a value crosses a function or an attribute (a value of the wrong type is a `TypeError`
there, where the interpreter would go on). Without a C compiler nothing is compiled and
everything runs interpreted, as it does from a wheel.

The compiled modules are used all together or not at all: they call each other directly and
expect each other's classes, so one compiled module beside an interpreted one would mix an
old reading with a new one. `webapp/__init__.py` calls `choose()`, which loads every one of
them from its source when

- `STREAMVIZ_INTERPRETED` is set (to debug or profile the core with its line numbers, and the
  suite's second pass over the core's tests), or
- any of them has changed since it was compiled: an edit runs at once, interpreted, with a
  warning on stderr until `make compile` compiles it again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec, SourceFileLoader
from types import ModuleType

MODULES = (
    "webapp.core.assembler",
    "webapp.core.blocks",
    "webapp.core.columns",
    "webapp.core.contract.intended",
    "webapp.core.contract.quirks",
    "webapp.core.contract.wire",
    "webapp.core.jsoncheck",
    "webapp.core.rules",
    "webapp.core.stepsjson",
    "webapp.core.toolcalls",
    "webapp.core.tracejson",
)
"""What `scripts/compile.py` compiles: the assembler's loop, the contract's pass and the JSON
writer, with the classes they use at every fragment."""

GROUP = "webapp.core.compiled"
"""The name of the shared library the compiled modules live in (`GROUP` + `__mypyc`)."""

INTERPRETED = "STREAMVIZ_INTERPRETED"

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def source(module: str, root: str = _ROOT) -> str:
    """The path of a module's source file."""
    return os.path.join(root, *module.split(".")) + ".py"


def extension(module: str, root: str = _ROOT) -> str | None:
    """The path of a module's compiled form beside its source, if there is one."""
    stem = os.path.join(root, *module.split("."))
    for suffix in EXTENSION_SUFFIXES:
        if os.path.exists(stem + suffix):
            return stem + suffix
    return None


def changed(modules: Sequence[str] = MODULES, root: str = _ROOT) -> list[str]:
    """The compiled modules whose source is newer than their compiled form (or which have
    none while another has)."""
    built = {module: extension(module, root) for module in modules}
    if not any(built.values()):
        return []
    out = []
    for module, path in built.items():
        if path is None or os.stat(source(module, root)).st_mtime > os.stat(path).st_mtime:
            out.append(module)
    return out


class _FromSource:
    """A finder that loads the compiled modules from their source files."""

    def __init__(self, modules: Sequence[str], root: str) -> None:
        self.paths = {module: source(module, root) for module in modules}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        file = self.paths.get(fullname)
        if file is None:
            return None
        from importlib.util import spec_from_file_location  # only when the sources are used

        return spec_from_file_location(fullname, file, loader=SourceFileLoader(fullname, file))


def choose(root: str = _ROOT) -> str | None:
    """Load the compiled modules from their sources when asked to or when one has changed
    (see the module docstring); returns why, or None when the compiled forms (if any) are
    used."""
    if os.environ.get(INTERPRETED):
        why = f"{INTERPRETED} is set"
    else:
        stale = changed(MODULES, root)
        if not stale:
            return None
        names = ", ".join(os.path.relpath(source(module, root), root) for module in stale)
        why = f"{names} changed since compiled"
        print(
            f"streamviz: {why}: the core runs interpreted (`make compile` compiles it again)",
            file=sys.stderr,
        )
    sys.meta_path.insert(0, _FromSource(MODULES, root))
    return why
