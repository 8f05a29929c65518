"""The core modules compiled with mypyc, and the record of the sources they were compiled from.

The package's build compiles the modules of `MODULES` (`hatch_build.py`, the hook hatchling
runs for every wheel: `pip install`, and the editable install `make` makes): each gets an
extension module beside its source, which Python imports instead of the source. They are the
same source: mypyc turns the typed code into C, and adds a check of every annotated type
where a value crosses a function or an attribute (a value of the wrong type is a `TypeError`
there, where the interpreter would go on). Without a working C compiler the build says so and
makes the pure-Python package, the same code interpreted. Which one runs is decided when the
package is built: nothing here runs when `webapp` is imported.

The compiled modules are built all together or not at all: they call each other directly and
expect each other's classes, and mypyc writes into them the constants they read from the rest
of the core. An editable install's build writes `RECORD` beside them: a digest of every source
they were made from (`sources`). `stale` compares it with the sources as they are now: the
tests refuse to run on a stale compiled core, and `make` builds it again (make's own check of
file times, at build time).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES

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
"""What the build compiles: the assembler's loop, the contract's pass and the JSON writer,
with the classes they use at every fragment."""

GROUP = "webapp.core.compiled"
"""The name of the shared library the compiled modules live in (`GROUP` + `__mypyc`)."""

RECORD = os.path.join("webapp", "core", "compiled.sha256")
"""Where an editable install's build records what it made (relative to the checkout): a line
saying what (compiled, or pure Python and why), then `sha256  path` for every source."""

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


def sources(root: str = _ROOT) -> list[str]:
    """The files the compiled core is made from, relative to `root`: the build hook, the base
    modules and every module of the core (mypy reads them all, and mypyc copies their
    constants)."""
    found = [name for name in ("hatch_build.py",) if os.path.exists(os.path.join(root, name))]
    package = os.path.join(root, "webapp")
    found += [
        os.path.join("webapp", name) for name in sorted(os.listdir(package)) if name.endswith(".py")
    ]
    for folder, dirs, files in os.walk(os.path.join(package, "core")):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def digests(root: str = _ROOT) -> dict[str, str]:
    """Each of `sources` with the SHA-256 of its bytes."""
    out = {}
    for path in sources(root):
        with open(os.path.join(root, path), "rb") as file:
            out[path] = hashlib.sha256(file.read()).hexdigest()
    return out


def record(what: str, root: str = _ROOT) -> str:
    """The text of `RECORD` for a build that made `what`."""
    lines = [what, *(f"{digest}  {path}" for path, digest in digests(root).items())]
    return "\n".join(lines) + "\n"


def recorded(root: str = _ROOT) -> tuple[str, dict[str, str]] | None:
    """What `RECORD` says was made, and the digests it holds; None when there is none."""
    try:
        with open(os.path.join(root, RECORD), encoding="utf-8") as file:
            what, *lines = file.read().splitlines()
    except (OSError, ValueError):
        return None
    pairs = (line.split("  ", 1) for line in lines if "  " in line)
    return what, {path: digest for digest, path in pairs}


def _changed(root: str, then: dict[str, str]) -> list[str]:
    """The sources whose digest is not the one recorded (or that were added or removed)."""
    now = digests(root)
    return sorted(path for path in then.keys() | now.keys() if then.get(path) != now.get(path))


def stale(root: str = _ROOT, modules: Sequence[str] = MODULES) -> str | None:
    """Why the compiled modules in this checkout are not its sources compiled; None when none
    is compiled (the sources run) or when they were compiled from the sources as they are."""
    built = {module: extension(module, root) for module in modules}
    if not any(built.values()):
        return None
    missing = [
        os.path.relpath(source(name, root), root) for name, path in built.items() if not path
    ]
    if missing:
        return f"{', '.join(missing)} not compiled beside the other compiled modules"
    found = recorded(root)
    if found is None:
        return f"no record of the sources they were compiled from ({RECORD})"
    what, then = found
    if not what.startswith("compiled"):
        return f"{RECORD} says the build made no compiled modules ({what})"
    changed = _changed(root, then)
    if changed:
        return f"{', '.join(changed)} changed since the core was compiled"
    return None


def current(root: str = _ROOT, modules: Sequence[str] = MODULES) -> bool:
    """Whether the checkout holds what its build recorded (every module compiled, or none),
    made from its sources as they are: `make` builds again when it does not."""
    found = recorded(root)
    if found is None or _changed(root, found[1]):
        return False
    built = [extension(module, root) is not None for module in modules]
    return all(built) if found[0].startswith("compiled") else not any(built)


def copy_sources(destination: str, root: str = _ROOT) -> str:
    """Copy the package's Python sources, without their compiled forms, into `destination`
    (the package as the pure-Python wheel installs its code); returns the folder to put on
    `sys.path`."""

    def left_out(folder: str, names: list[str]) -> list[str]:
        return [
            name
            for name in names
            if name in ("__pycache__", "node_modules")
            or (not name.endswith(".py") and not os.path.isdir(os.path.join(folder, name)))
        ]

    shutil.copytree(
        os.path.join(root, "webapp"), os.path.join(destination, "webapp"), ignore=left_out
    )
    return destination
