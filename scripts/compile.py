"""Compile the core's hot modules with mypyc, in place (`make compile`; `webapp/compiled.py`
says which and why).

Each module of `webapp.compiled.MODULES` gets its extension module beside its source, all of
them in one shared library (`webapp.compiled.GROUP`); the C sources and objects go to
build/mypyc. Nothing is done when every compiled module is newer than its source. Needs mypy
(the `compile` extra) and a C compiler with Python's headers; exits non-zero when the
compiler fails, leaving the sources to run interpreted.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ["STREAMVIZ_INTERPRETED"] = "1"  # importing webapp.compiled needs no compiled module

from webapp.compiled import GROUP, MODULES, changed, extension, source  # noqa: E402


def main() -> int:
    if all(extension(module) for module in MODULES) and not changed():
        return 0
    from mypyc.build import mypycify
    from setuptools import Distribution

    os.chdir(ROOT)
    paths = [os.path.relpath(source(module), ROOT) for module in MODULES]
    print(f"streamviz: compiling {len(paths)} core modules with mypyc", file=sys.stderr)
    modules = mypycify(paths, opt_level="3", group_name=GROUP, target_dir="build/mypyc")
    # A Distribution of its own: setup() would read pyproject.toml, which is hatchling's.
    distribution = Distribution({"name": "streamviz-core", "ext_modules": modules})
    build = distribution.get_command_obj("build_ext")
    build.inplace = True
    build.build_temp = "build/mypyc/objects"
    distribution.run_command("build_ext")
    # build_ext leaves an extension alone when mypyc wrote the same C again (a source touched,
    # or changed in a way that compiles the same): it is the source's compiled form all the same.
    for module in MODULES:
        path = extension(module)
        assert path is not None, f"{module} was not compiled"
        os.utime(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
