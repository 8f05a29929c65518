"""The build hook that compiles the core with mypyc (hatchling's `custom` hook, pyproject.toml).

Hatchling runs it for every wheel it builds: `pip install` of the package, `pip wheel`, and the
editable install `make` makes (`webapp/compiled.py` says what is compiled and why).

- First it builds a small C extension, to see that this machine has a working C compiler and
  Python's headers. Without them it says so (`pip install -v` shows it; `make` prints the
  record's first line) and the wheel is the pure-Python one: the same code, interpreted.
- Otherwise mypyc compiles `MODULES` into one shared library (C and objects in build/mypyc).
  A failure there fails the build: it is the code, not the machine.
- A wheel carries the extension modules beside their sources and is tagged for this Python and
  platform. An editable install puts them in the checkout beside their sources, with the record
  of the sources they were made from (`RECORD`); when the record already matches the sources,
  it compiles nothing.

`HATCH_BUILD_NO_HOOKS=true` builds the pure-Python wheel on purpose (`make pytest`'s second
pass installs it to test the core interpreted).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sysconfig
from contextlib import chdir
from importlib.machinery import EXTENSION_SUFFIXES
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILD = os.path.join("build", "mypyc")
"""Where mypyc writes its C, and the C compiler its objects and libraries (under the root)."""

OPT_LEVEL = "3"

PROBE = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static struct PyModuleDef probe = {PyModuleDef_HEAD_INIT, "probe", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_probe(void) { return PyModule_Create(&probe); }
"""
"""A C extension that compiles wherever the core's would: a compiler and Python's headers."""


def _compiled(root: str) -> ModuleType:
    """webapp/compiled.py, loaded from its file (the package is not installed while it builds)."""
    path = os.path.join(root, "webapp", "compiled.py")
    spec = importlib.util.spec_from_file_location("_streamviz_compiled", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cannot_compile(root: str) -> str | None:
    """Why this machine cannot build the core's C extension, or None when it can."""
    try:
        import mypyc.build  # noqa: F401 (what compiles the core, from the `compile` extra)
        from setuptools import Distribution, Extension  # type: ignore[import-untyped]
        from setuptools.errors import (  # type: ignore[import-untyped]
            CCompilerError,
            ExecError,
            PlatformError,
        )
    except ImportError as error:
        return f"{error.name} is not installed"
    folder = os.path.join(root, BUILD, "probe")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "probe.c")
    with open(path, "w", encoding="utf-8") as file:
        file.write(PROBE)
    distribution = Distribution({"name": "probe", "ext_modules": [Extension("probe", [path])]})
    command: Any = distribution.get_command_obj("build_ext")
    command.build_lib = command.build_temp = folder
    command.force = True
    try:
        distribution.run_command("build_ext")
    except (CCompilerError, ExecError, PlatformError) as error:
        return str(error).strip() or type(error).__name__
    return None


def compile_core(root: str, compiled: ModuleType) -> list[tuple[str, str]]:
    """Compile the core (the working directory is `root`): each extension made, and its path
    in the package."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    paths = [os.path.relpath(compiled.source(module, root), root) for module in compiled.MODULES]
    modules = mypycify(paths, opt_level=OPT_LEVEL, group_name=compiled.GROUP, target_dir=BUILD)
    # A Distribution of its own: setup() would read pyproject.toml, which is hatchling's.
    distribution = Distribution({"name": "streamviz-core", "ext_modules": modules})
    command: Any = distribution.get_command_obj("build_ext")
    command.build_lib = os.path.join(BUILD, "lib")
    command.build_temp = os.path.join(BUILD, "objects")
    distribution.run_command("build_ext")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    made = []
    for name in (*compiled.MODULES, compiled.GROUP + "__mypyc"):
        relative = os.path.join(*name.split(".")) + suffix
        path = os.path.join(root, BUILD, "lib", relative)
        if not os.path.exists(path):
            raise RuntimeError(f"mypyc made no {relative}")
        made.append((path, relative))
    return made


def put_in_place(root: str, compiled: ModuleType, made: list[tuple[str, str]], what: str) -> None:
    """An editable install's compiled core: `made` beside the sources (each replaced whole, so
    a running process keeps the one it loaded), no other compiled form of them, the record."""
    record = os.path.join(root, compiled.RECORD)
    if os.path.exists(record):
        os.remove(record)  # until every file is in place, the tree is not what a record says
    kept = set()
    for path, relative in made:
        target = os.path.join(root, relative)
        shutil.copyfile(path, target + ".part")
        os.replace(target + ".part", target)
        kept.add(target)
    for name in (*compiled.MODULES, compiled.GROUP + "__mypyc"):
        stem = os.path.join(root, *name.split("."))
        for suffix in EXTENSION_SUFFIXES:
            if stem + suffix not in kept and os.path.exists(stem + suffix):
                os.remove(stem + suffix)
    with open(record + ".part", "w", encoding="utf-8") as file:
        file.write(compiled.record(what, root))
    os.replace(record + ".part", record)


class CoreBuild(BuildHookInterface[Any]):
    """Compile the core into the wheel, or say why the wheel is pure Python."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        compiled = _compiled(self.root)
        editable = version == "editable"
        count = len(compiled.MODULES)
        if editable and self._current(compiled):
            self.app.display_info(
                f"streamviz: the compiled core is its sources ({compiled.RECORD})"
            )
            return
        with chdir(self.root):
            why = cannot_compile(self.root)
            if why is None:
                self.app.display_info(f"streamviz: compiling {count} core modules with mypyc")
                made = compile_core(self.root, compiled)
        if why is not None:
            what = f"pure Python: no C extension can be built here ({why})"
            self.app.display_warning(f"streamviz: the core is {what}: it runs interpreted")
            if editable:
                put_in_place(self.root, compiled, [], what)
            return
        if editable:
            from mypy.version import __version__ as mypy_version

            put_in_place(
                self.root, compiled, made, f"compiled by mypyc {mypy_version}: {count} modules"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["force_include"].update(dict(made))

    def _current(self, compiled: ModuleType) -> bool:
        """Whether the checkout holds the compiled core of its sources as they are now (a
        pure-Python build is tried again: a compiler may have come since)."""
        found = compiled.recorded(self.root)
        return found is not None and found[0].startswith("compiled") and compiled.current(self.root)
