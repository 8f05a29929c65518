"""The core's compiled modules (`webapp/compiled.py`): used all together or not at all, never
when a source changed since it was compiled, never with `STREAMVIZ_INTERPRETED` set."""

from __future__ import annotations

import importlib
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

from tests.streamkit import on_sources
from webapp.compiled import INTERPRETED, MODULES, changed, choose, source

SUFFIX = EXTENSION_SUFFIXES[0]
NAMES = ("pkg.fast", "pkg.sub.faster")


def compiled(module: ModuleType) -> bool:
    """Whether a loaded module is its compiled form."""
    return not (module.__file__ or "").endswith(".py")


def tree(root: Path, built: tuple[str, ...] = NAMES, newer: tuple[str, ...] = ()) -> Path:
    """Sources for NAMES, a compiled form for those `built`, and the sources of `newer` edited
    after it was made."""
    for name in NAMES:
        path = root.joinpath(*name.split("."))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".py").write_text("x = 1\n", encoding="utf-8")
        os.utime(path.with_suffix(".py"), (1_000, 1_000))
        if name in built:
            binary = path.parent / (path.name + SUFFIX)
            binary.write_bytes(b"")
            os.utime(binary, (2_000, 2_000))
        if name in newer:
            os.utime(path.with_suffix(".py"), (3_000, 3_000))
    return root


def test_nothing_has_changed_when_nothing_is_compiled(tmp_path: Path) -> None:
    assert changed(NAMES, str(tree(tmp_path, built=()))) == []


def test_nothing_has_changed_when_every_compiled_form_is_newer(tmp_path: Path) -> None:
    assert changed(NAMES, str(tree(tmp_path))) == []


def test_a_source_edited_after_compiling_has_changed(tmp_path: Path) -> None:
    assert changed(NAMES, str(tree(tmp_path, newer=("pkg.sub.faster",)))) == ["pkg.sub.faster"]


def test_a_module_left_uncompiled_beside_compiled_ones_has_changed(tmp_path: Path) -> None:
    assert changed(NAMES, str(tree(tmp_path, built=("pkg.fast",)))) == ["pkg.sub.faster"]


def test_with_a_changed_source_the_sources_are_found_first_and_it_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(tmp_path, newer=("pkg.fast",))
    monkeypatch.setattr("webapp.compiled.MODULES", NAMES)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delenv(INTERPRETED, raising=False)
    assert choose(str(root)) == f"{os.path.join('pkg', 'fast.py')} changed since compiled"
    assert (
        "pkg/fast.py changed since compiled: the core runs interpreted" in capsys.readouterr().err
    )
    finder = sys.meta_path[0]
    for name in NAMES:  # the unchanged one too: all together or not at all
        spec = finder.find_spec(name, None)
        assert spec is not None and spec.origin == source(name, str(root))
    assert finder.find_spec("pkg.other", None) is None


def test_with_nothing_changed_the_finders_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("webapp.compiled.MODULES", NAMES)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delenv(INTERPRETED, raising=False)
    before = list(sys.meta_path)
    assert choose(str(tree(tmp_path))) is None
    assert sys.meta_path == before


def test_asked_to_the_sources_are_found_first_even_when_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("webapp.compiled.MODULES", NAMES)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setenv(INTERPRETED, "1")
    assert choose(str(tree(tmp_path))) == f"{INTERPRETED} is set"
    spec = sys.meta_path[0].find_spec("pkg.fast", None)
    assert spec is not None and spec.origin == source("pkg.fast", str(tmp_path))


def test_the_core_s_modules_are_all_compiled_or_all_interpreted_as_make_asked() -> None:
    """`make pytest` runs the suite on the compiled core (STREAMVIZ_CORE=compiled), then the
    core's tests on its sources (interpreted); run by hand, the two must not be mixed."""
    kinds = {compiled(importlib.import_module(name)) for name in MODULES}
    assert len(kinds) == 1, "some core modules are compiled and some are not"
    wanted = os.environ.get("STREAMVIZ_CORE")
    if wanted is not None:
        assert kinds == {wanted == "compiled"}, f"the core is not {wanted}: run `make compile`"


def test_an_interpreter_asked_for_the_sources_runs_them() -> None:
    code = (
        "import webapp.core.assembler as a, webapp.core.rules as r\n"
        "print(a.__file__.endswith('assembler.py'), r.__file__.endswith('rules.py'))\n"
    )
    assert on_sources(code).split() == ["True", "True"]
