"""The compiled core is decided when the package is built (hatch_build.py, webapp/compiled.py):
all of it or none, never stale in a checkout, pure Python where nothing can be compiled, and
nothing chosen when `webapp` is imported."""

from __future__ import annotations

import importlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import zipfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType, SimpleNamespace

import httpx

import webapp
from tests.streamkit import on_sources
from tests.web.webkit import CONTINUATION
from webapp import compiled as core
from webapp.compiled import GROUP, MODULES, RECORD, current, extension, record, source, stale

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT = str(Path(webapp.__file__).resolve().parents[1])
"""The checkout whose package the tests import: this one, or the pure wheel's (`make pytest`)."""
SUFFIX = EXTENSION_SUFFIXES[0]
NAMES = ("webapp.core.fast", "webapp.core.sub.faster")


def is_compiled(module: ModuleType) -> bool:
    """Whether a loaded module is its compiled form."""
    return not (module.__file__ or "").endswith(".py")


def tree(root: Path, built: tuple[str, ...] = NAMES, what: str | None = "compiled") -> str:
    """A checkout with NAMES and one module that is not compiled, the compiled form of those
    `built`, and the build's record (`what` it made; None: no record)."""
    (root / "webapp" / "core" / "sub").mkdir(parents=True)
    (root / "webapp" / "__init__.py").write_text("", encoding="utf-8")
    (root / "webapp" / "core" / "other.py").write_text("LIMIT = 1\n", encoding="utf-8")
    for name in NAMES:
        Path(source(name, str(root))).write_text("x = 1\n", encoding="utf-8")
    for name in built:
        Path(source(name, str(root))[: -len(".py")] + SUFFIX).write_bytes(b"")
    if what is not None:
        (root / RECORD).write_text(record(what, str(root)), encoding="utf-8")
    return str(root)


def test_a_checkout_with_nothing_compiled_is_not_stale(tmp_path: Path) -> None:
    assert stale(tree(tmp_path, built=(), what=None), NAMES) is None


def test_the_core_compiled_from_its_sources_as_they_are_is_current(tmp_path: Path) -> None:
    root = tree(tmp_path)
    assert stale(root, NAMES) is None
    assert current(root, NAMES)


def test_a_source_edited_after_the_build_is_stale_whatever_its_file_time(tmp_path: Path) -> None:
    """The record holds digests, not times: an edit dated before the build is still seen."""
    root = tree(tmp_path)
    edited = Path(source("webapp.core.sub.faster", root))
    edited.write_text("x = 2\n", encoding="utf-8")
    os.utime(edited, (1_000, 1_000))
    assert stale(root, NAMES) == (
        f"{os.path.join('webapp', 'core', 'sub', 'faster.py')} changed since the core was compiled"
    )
    assert not current(root, NAMES)


def test_an_edit_to_a_module_the_compiled_ones_import_is_stale_too(tmp_path: Path) -> None:
    """mypyc writes the constants the compiled modules read from the rest of the core into
    them: every source of the core counts, compiled or not."""
    root = tree(tmp_path)
    (tmp_path / "webapp" / "core" / "other.py").write_text("LIMIT = 2\n", encoding="utf-8")
    assert "other.py changed since the core was compiled" in (stale(root, NAMES) or "")


def test_a_module_left_uncompiled_beside_compiled_ones_is_stale(tmp_path: Path) -> None:
    root = tree(tmp_path, built=("webapp.core.fast",))
    faster = os.path.join("webapp", "core", "sub", "faster.py")
    assert stale(root, NAMES) == f"{faster} not compiled beside the other compiled modules"


def test_compiled_modules_without_a_record_are_stale(tmp_path: Path) -> None:
    root = tree(tmp_path, what=None)
    assert stale(root, NAMES) == f"no record of the sources they were compiled from ({RECORD})"
    assert not current(root, NAMES)


def test_a_pure_build_is_current_only_with_no_compiled_module(tmp_path: Path) -> None:
    root = tree(tmp_path, built=(), what="pure Python: no C extension can be built here")
    assert current(root, NAMES) and stale(root, NAMES) is None
    for name in NAMES:
        Path(source(name, root)[: -len(".py")] + SUFFIX).write_bytes(b"")
    assert not current(root, NAMES)
    assert "says the build made no compiled modules" in (stale(root, NAMES) or "")


def test_an_editable_build_that_compiles_nothing_leaves_no_compiled_module(tmp_path: Path) -> None:
    """A compiler gone since the last build: the old compiled modules go, the record says
    why, and the checkout is current (pure Python)."""
    from hatch_build import put_in_place

    root = tree(tmp_path)
    older = Path(source("webapp.core.fast", root)[: -len(".py")] + ".abi3.so")
    older.write_bytes(b"")
    fake = SimpleNamespace(
        MODULES=NAMES, GROUP="webapp.core.compiled", RECORD=RECORD, extension=extension,
        record=record,
    )  # fmt: skip
    put_in_place(root, fake, [], "pure Python: no C extension can be built here (no cc)")  # type: ignore[arg-type]
    assert all(extension(name, root) is None for name in NAMES)
    assert (tmp_path / RECORD).read_text(encoding="utf-8").startswith("pure Python: no C")
    assert current(root, NAMES)


def test_the_core_s_modules_are_all_compiled_or_all_interpreted_as_make_asked() -> None:
    """`make pytest` runs the suite on the compiled core (STREAMVIZ_CORE=compiled), then the
    core's tests on the pure-Python wheel's package (interpreted); by hand, never mixed."""
    kinds = {is_compiled(importlib.import_module(name)) for name in MODULES}
    assert len(kinds) == 1, "some core modules are compiled and some are not"
    wanted = os.environ.get("STREAMVIZ_CORE")
    if wanted is not None:
        assert kinds == {wanted == "compiled"}, f"the core is not {wanted}: run `make compile`"


def test_this_checkout_s_compiled_core_is_its_sources() -> None:
    """The conftest refuses a stale compiled core; this says so in the suite's results too."""
    assert stale(CHECKOUT) is None


def test_importing_the_package_chooses_nothing() -> None:
    """What the build made is what runs: no finder is put before the compiled modules, and
    the switch of old (STREAMVIZ_INTERPRETED) no longer switches anything."""
    code = (
        "import sys\n"
        "before = list(sys.meta_path)\n"
        "import webapp.core.assembler as a\n"
        "print(sys.meta_path == before, a.__file__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": CHECKOUT, "STREAMVIZ_INTERPRETED": "1"},
        timeout=60,
        check=True,
    )
    module = "webapp.core.assembler"
    expected = extension(module, CHECKOUT) or source(module, CHECKOUT)
    assert done.stdout.split() == ["True", expected]
    assert not hasattr(core, "choose")


def test_an_interpreter_on_the_sources_runs_them() -> None:
    code = (
        "import webapp.core.assembler as a, webapp.core.rules as r\n"
        "print(a.__file__.endswith('assembler.py'), r.__file__.endswith('rules.py'))\n"
    )
    assert on_sources(code).split() == ["True", "True"]


def test_make_run_builds_the_core_and_serves_it_as_the_cli_runs_it() -> None:
    """`make run` checks the build first and starts the server with the core it made: no
    switch to the sources (from `make -n`: nothing is run)."""
    dry = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "run"], capture_output=True, text=True, check=True
    ).stdout
    serve = next(line for line in dry.splitlines() if "streamviz serve" in line)
    assert serve.split()[0].endswith("/streamviz"), serve
    assert "STREAMVIZ_INTERPRETED" not in dry
    assert "c.current()" in dry


def _make_run_s_server(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """The command `make run` starts the server with (from `make -n`: nothing is run), on a
    store in `tmp_path`, and its environment: this one with what the recipe sets, and without
    the pure pass's PYTHONPATH (`make run` is run from a shell, not from the tests)."""
    dry = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "--no-print-directory", "run",
         f"DB={tmp_path / 'run.sqlite3'}", f"LENS_LOG={tmp_path / 'lenses.log'}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    lines = iter(dry.splitlines())
    recipe = [next(line for line in lines if "streamviz serve" in line)]
    while recipe[-1].endswith("\\"):
        recipe[-1] = recipe[-1][:-1]
        recipe.append(next(lines))
    words = shlex.split(" ".join(recipe))
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return words, env


def _mapped(pid: int) -> set[str]:
    """The files a process has mapped: the extension modules it imported among them."""
    text = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8")
    fields = (line.split(maxsplit=5) for line in text.splitlines())
    return {words[5] for words in fields if len(words) == 6}


def test_make_run_s_server_imports_the_compiled_core_the_cli_runs(tmp_path: Path) -> None:
    """The server `make run` starts, given a stream to trace, has imported the compiled
    modules the build made (the same files the CLI loads), or none where the build made none.
    It serves on a socket this test bound (`--fd`), so requests wait for it in the backlog."""
    command, env = _make_run_s_server(tmp_path)
    path = tmp_path / "serve.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    fd = listener.fileno()
    server = subprocess.Popen(
        [*command, "--fd", str(fd)], cwd=ROOT, env=env, pass_fds=(fd,),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    listener.close()  # the server holds its own copy
    try:
        transport = httpx.HTTPTransport(uds=str(path))
        with httpx.Client(transport=transport, timeout=120) as client:
            posted = client.post("http://localhost/api/streams", json={"text": CONTINUATION})
            assert posted.status_code == 201, posted.text
            url = f"http://localhost/api/streams/{posted.json()['id']}/trace"
            assert client.get(url).status_code == 200
        mapped = _mapped(server.pid)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
    # What tracing the stream surely imported: the assembler, the JSON writer, and the shared
    # library of the whole compiled core (the other modules load as the pages need them).
    used = ("webapp.core.assembler", "webapp.core.tracejson", GROUP + "__mypyc")
    forms = [extension(name, str(ROOT)) for name in used]
    loaded = {name for name in mapped if name.startswith(str(ROOT / "webapp"))}
    if extension(MODULES[0], str(ROOT)) is not None:
        built = {str(Path(form).resolve()) for form in forms if form is not None}
        assert len(built) == len(used) and built <= loaded, sorted(loaded)
    else:
        assert not {name for name in loaded if name.endswith(SUFFIX)}, sorted(loaded)


def test_without_a_c_compiler_the_wheel_is_pure_python_and_says_so(tmp_path: Path) -> None:
    """The build hook tries a small C extension first: with a compiler that fails (CC=false)
    the wheel is the pure-Python one, tagged for any platform, and the build says why."""
    code = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "CC": "false"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    wheel = done.stdout.split()[-1]
    assert wheel == "streamviz-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(tmp_path / wheel) as archive:
        names = archive.namelist()
    assert "webapp/core/assembler.py" in names
    assert not [name for name in names if name.endswith((".so", ".pyd"))]
    said = done.stdout + done.stderr
    assert "the core is pure Python: no C extension can be built here" in said
    assert "false' failed with exit code 1" in said
