"""The layers of `webapp/` are folders, and each imports only itself and the layers below it.

Bottom to top: the base (`webapp/__init__.py`, `compiled.py`, `settings.py`, `tuning.py`),
`core/`, `examples/`, `lenses/`, `triage/`, `storage/`, `proxy/`, `web/`, `cli/`. The recording
proxy is a wing below the web: `serve` mounts it in the web app, `record` serves it alone, and
it imports nothing of the web (nor of the CLI). Inside `web/`: the
shared request and response helpers (`http/`, `appstate.py`) and `backend/` at the bottom (they
may use each other), then `views/`, then `routes/`, then `web/app.py`, the factory, which may
import anything in the web; no route module imports another (a page's parts come from a view
model). The backend is rooms by noun, at most 8 modules directly in it. Every import counts:
those inside functions and under `if TYPE_CHECKING:` too. No web module reads the trace's
columns (`webapp.core.columns`): it asks the `Trace` instead. No core module imports
itself round a cycle, however long (an import only for types counts). The core is also imported in a
fresh interpreter, which must load neither the web stack nor the storage (house style 1 and 6);
so are the proxy wing and `record`, which must load no module of the web.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "webapp"
LAYERS = ("base", "core", "examples", "lenses", "triage", "storage", "proxy", "web", "cli")
"""Bottom to top; `base` is the modules directly in `webapp/`."""
BASE = ("webapp", "webapp.compiled", "webapp.settings", "webapp.tuning")
WEB_LEVELS = {"http": 0, "backend": 0, "views": 1, "routes": 2, "app": 3}
"""Inside `web/`, bottom to top; any other `web/*.py` (`appstate.py`) is at level 0."""
MOST_IN_A_FOLDER = 20
MOST_AT_THE_TOP = 12
MOST_IN_THE_BACKEND = 8
"""Modules directly in `web/backend/` (its `__init__.py` aside): the rest are in rooms."""


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "node_modules" in parts:
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def rank(name: str) -> tuple[int, int]:
    """(layer, level inside the web) of a module; LookupError for a module in no layer."""
    parts = name.split(".")
    if name in BASE:
        return (0, 0)
    if len(parts) < 2 or parts[1] not in LAYERS[1:]:
        raise LookupError(f"{name} is in no layer: {', '.join(LAYERS)}")
    layer = LAYERS.index(parts[1])
    if parts[1] != "web" or len(parts) == 2:
        return (layer, 0)
    return (layer, WEB_LEVELS.get(parts[2], 0))


def layer_name(name: str) -> str:
    """`core`, `web/views`, `web/ (shared)`, ...: the module's layer, for the messages."""
    layer = LAYERS[rank(name)[0]]
    if layer != "web" or len(name.split(".")) == 2:
        return layer
    part = name.split(".")[2]
    return f"web/{part}" if part in WEB_LEVELS else "web/ (shared)"


def imports(
    name: str, source: str, known: set[str], packages: set[str]
) -> Iterator[tuple[int, str]]:
    """(line, module) for every webapp module the source imports, anywhere in it. `from M
    import x` imports `M.x` when that is a module, else `M`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                here = name.split(".") if name in packages else name.split(".")[:-1]
                base = here[: len(here) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            for alias in node.names:
                full = f"{module}.{alias.name}"
                yield node.lineno, full if full in known else module


def violations(sources: Mapping[str, str], packages: Collection[str] = ()) -> list[str]:
    """Each import of a module from a higher layer (or of an unknown webapp module)."""
    known = set(sources)
    found: list[str] = []
    for name, source in sources.items():
        for line, target in imports(name, source, known, set(packages)):
            if target != "webapp" and not target.startswith("webapp."):
                continue
            if target not in known:
                found.append(f"{name}:{line} imports {target}, which does not exist")
            elif rank(target) > rank(name):
                found.append(
                    f"{name}:{line} ({layer_name(name)}) imports {target} ({layer_name(target)})"
                )
    return found


def real_sources() -> tuple[dict[str, str], set[str]]:
    files = module_files()
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    return {name: path.read_text(encoding="utf-8") for name, path in files.items()}, packages


def test_every_module_is_in_a_layer() -> None:
    misplaced = []
    for name in module_files():
        try:
            rank(name)
        except LookupError as error:
            misplaced.append(str(error))
    assert misplaced == []


def test_each_layer_imports_only_itself_and_those_below() -> None:
    sources, packages = real_sources()
    assert len(sources) > 100, "the package was found"
    assert violations(sources, packages) == []


def test_the_check_sees_an_upward_import_added_to_the_package() -> None:
    """The real package with one upward import more, inside a function: exactly that one."""
    sources, packages = real_sources()
    sources["webapp.core.assembler"] += (
        "\n\ndef _upward() -> None:\n    from webapp.web.app import create_app  # noqa\n"
    )
    lines = len(sources["webapp.core.assembler"].splitlines())
    assert violations(sources, packages) == [
        f"webapp.core.assembler:{lines} (core) imports webapp.web.app (web/app)"
    ]


def test_the_check_knows_the_web_levels_and_every_way_to_import() -> None:
    sources = {
        "webapp": "",
        "webapp.settings": "",
        "webapp.core": "",
        "webapp.core.trace": "from webapp import settings\n",
        "webapp.storage": "import webapp.core.trace\n",
        "webapp.web": "",
        "webapp.web.http.text": "from webapp.web import backend\n",
        "webapp.web.backend": "",
        "webapp.web.backend.service": "from webapp.web.http.text import printable\n",
        "webapp.web.backend.jobs": "from webapp.web import routes\n",
        "webapp.web.views": "",
        "webapp.web.views.timeline": "from webapp.web.backend import service\n",
        "webapp.web.views.panels": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from webapp.web.routes.pages import page\n"
        ),
        "webapp.web.routes": "",
        "webapp.web.routes.pages": "from . import api\nfrom ..views import timeline\n",
        "webapp.web.routes.api": "import webapp.web.app as factory\n",
        "webapp.web.app": "from webapp.web.routes import pages\nfrom webapp.cli import main\n",
        "webapp.cli": "from webapp.web.app import create_app\nfrom webapp.nowhere import x\n",
        "webapp.cli.record": "from webapp.proxy.app import recording_app\n",
        "webapp.proxy": "",
        "webapp.proxy.app": "from webapp.proxy.mount import ProxyRoutes\n",
        "webapp.proxy.mount": (
            "from webapp.storage import Storage\nfrom ..web.backend import service\n"
        ),
        "webapp.proxy.store": "from webapp.cli import record\n",
        "webapp.web.backend.recording": "from webapp.proxy.store import StoreRecorder\n",
        "webapp.examples": "from webapp.triage.report import report\n",
        "webapp.triage": "",
        "webapp.triage.report": "",
    }
    packages = {
        "webapp.web.routes",
        "webapp.web.views",
        "webapp.web.backend",
        "webapp.web",
        "webapp.proxy",
    }
    assert violations(sources, packages) == [
        "webapp.web.backend.jobs:1 (web/backend) imports webapp.web.routes (web/routes)",
        "webapp.web.views.panels:3 (web/views) imports webapp.web.routes.pages (web/routes)",
        "webapp.web.routes.api:1 (web/routes) imports webapp.web.app (web/app)",
        "webapp.web.app:2 (web/app) imports webapp.cli (cli)",
        "webapp.cli:2 imports webapp.nowhere, which does not exist",
        "webapp.proxy.mount:2 (proxy) imports webapp.web.backend.service (web/backend)",
        "webapp.proxy.store:1 (proxy) imports webapp.cli.record (cli)",
        "webapp.examples:1 (examples) imports webapp.triage.report (triage)",
    ]


def cycles(sources: Mapping[str, str], packages: Collection[str] = ()) -> list[list[str]]:
    """Each group of modules that import one another round a cycle, sorted (every import
    counts, as for the layers: one under `if TYPE_CHECKING:` too)."""
    known = set(sources)
    graph = {
        name: {t for _, t in imports(name, source, known, set(packages)) if t in known} - {name}
        for name, source in sources.items()
    }
    reach: dict[str, set[str]] = {}
    for name in graph:
        seen, todo = set(), list(graph[name])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph[module])
        reach[name] = seen
    groups = {
        tuple(sorted({name} | {other for other in reach[name] if name in reach[other]}))
        for name in graph
        if name in reach[name]
    }
    return sorted(list(group) for group in groups)


def test_no_core_module_imports_itself_round_a_cycle() -> None:
    sources, packages = real_sources()
    core = {name: source for name, source in sources.items() if name.startswith("webapp.core")}
    assert {"webapp.core.trace", "webapp.core.tracejson", "webapp.core.stepsjson"} <= set(core)
    assert cycles(core, packages) == []


def test_the_check_sees_a_cycle_of_any_length_and_any_kind_of_import() -> None:
    sources = {
        "webapp.core": "",
        "webapp.core.a": "from webapp.core import b\n",
        "webapp.core.b": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import webapp.core.c\n"
        ),
        "webapp.core.c": "def f() -> None:\n    from webapp.core.a import x  # noqa\n",
        "webapp.core.d": "from webapp.core import a, e\n",
        "webapp.core.e": "from . import d\n",
        "webapp.core.f": "from webapp.core import a\nimport webapp.core.f\n",
    }
    assert cycles(sources, {"webapp.core"}) == [
        ["webapp.core.a", "webapp.core.b", "webapp.core.c"],
        ["webapp.core.d", "webapp.core.e"],
    ]


ROUTES = "webapp.web.routes"
"""The route modules: each parses its requests, asks the view models, renders; none imports
another (a page's parts are a view model's, `webapp.web.views.stream`; shared helpers are in
`web/http/`, `web/backend/` or `appstate.py`)."""


def route_to_route(sources: Mapping[str, str], packages: Collection[str] = ()) -> list[str]:
    """Each import of a route module (or of the routes package) by a route module."""
    known = set(sources)
    found: list[str] = []
    for name, source in sources.items():
        if not name.startswith(ROUTES + "."):
            continue
        for line, target in imports(name, source, known, set(packages)):
            if target == ROUTES or target.startswith(ROUTES + "."):
                found.append(f"{name}:{line} imports {target}")
    return found


def test_no_route_module_imports_another() -> None:
    sources, packages = real_sources()
    assert len([name for name in sources if name.startswith(ROUTES + ".")]) >= 10
    assert route_to_route(sources, packages) == []


def test_the_check_sees_a_route_module_import_another() -> None:
    sources = {
        "webapp.web.routes": "",
        "webapp.web.routes.pages": "from webapp.web.routes.share import share_menu\n",
        "webapp.web.routes.embed": "from . import pages\n",
        "webapp.web.routes.api": (
            "def f():\n    import webapp.web.routes.clients as c\n    return c\n"
        ),
        "webapp.web.routes.share": "from webapp.web.views.share import share\n",
        "webapp.web.routes.clients": "from webapp.web.appstate import client_jobs\n",
        "webapp.web.views.share": "",
        "webapp.web.appstate": "",
        "webapp.web.app": "from webapp.web.routes import pages, share\n",
    }
    assert route_to_route(sources, {"webapp.web.routes"}) == [
        "webapp.web.routes.pages:1 imports webapp.web.routes.share",
        "webapp.web.routes.embed:1 imports webapp.web.routes.pages",
        "webapp.web.routes.api:2 imports webapp.web.routes.clients",
    ]


COLUMNS = "webapp.core.columns"
"""The trace's internal arrays: only the core reads them; the web asks `Trace` instead."""


def trace_internals(sources: Mapping[str, str], packages: Collection[str] = ()) -> list[str]:
    """Each import of the trace's columns and each read of an attribute named `columns`, in a
    module under `webapp/web` (no web object but a trace has one, so the name is enough)."""
    known = set(sources)
    found: list[str] = []
    for name, source in sources.items():
        if not name.startswith("webapp.web"):
            continue
        for line, target in imports(name, source, known, set(packages)):
            if target == COLUMNS or target.startswith(COLUMNS + "."):
                found.append(f"{name}:{line} imports {target}")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Attribute) and node.attr == "columns":
                found.append(f"{name}:{node.lineno} reads .columns")
    return found


def test_no_web_module_reads_the_traces_columns() -> None:
    sources, packages = real_sources()
    assert COLUMNS in sources
    assert trace_internals(sources, packages) == []


def test_the_check_sees_the_columns_read_from_the_web() -> None:
    sources = {
        "webapp.core.columns": "",
        "webapp.core.trace": "from webapp.core.columns import Columns\n",
        "webapp.web.backend.trace.runs": "from webapp.core import columns\n",
        "webapp.web.views.timeline": "import webapp.core.columns as c\n",
        "webapp.web.backend.service": "def f(trace):\n    return trace.columns.step_kind[0]\n",
        "webapp.web.views.panels": "def f(view):\n    return view.trace.steps[0]\n",
    }
    assert trace_internals(sources) == [
        "webapp.web.backend.trace.runs:1 imports webapp.core.columns",
        "webapp.web.views.timeline:1 imports webapp.core.columns",
        "webapp.web.backend.service:2 reads .columns",
    ]


def _modules_in(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("*.py"))


def test_no_folder_holds_more_than_20_modules() -> None:
    folders = {path.parent for path in module_files().values()}
    crowded = {
        str(folder.relative_to(ROOT)): len(_modules_in(folder))
        for folder in folders
        if len(_modules_in(folder)) > MOST_IN_A_FOLDER
    }
    assert len(folders) >= 10
    assert crowded == {}


def test_at_most_12_modules_sit_directly_in_the_package() -> None:
    assert 1 <= len(_modules_in(PACKAGE)) <= MOST_AT_THE_TOP, _modules_in(PACKAGE)


def test_the_web_backend_is_rooms() -> None:
    """At most 8 modules directly in `web/backend/`, the rest in rooms named by noun; the web's
    shared helpers in one folder of their own (`web/http/`), beside only the factory."""
    backend = PACKAGE / "web" / "backend"
    direct = [name for name in _modules_in(backend) if name != "__init__.py"]
    rooms = sorted(path.name for path in backend.iterdir() if (path / "__init__.py").is_file())
    assert len(direct) <= MOST_IN_THE_BACKEND, direct
    assert {"memory", "intake", "team", "jobs", "library", "trace", "capture"} <= set(rooms)
    assert _modules_in(PACKAGE / "web") == ["__init__.py", "app.py", "appstate.py"]
    assert {"htmx.py", "links.py", "problems.py", "bodies.py"} <= set(
        _modules_in(backend.parent / "http")
    )


def test_the_folders_of_the_package_are_its_layers() -> None:
    """`ls webapp/` shows the layers: each folder is one (and each layer but the base one)."""
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert folders == set(LAYERS[1:])


LONG_FUNCTION = 50
"""Lines from a function's `def` to its last line that make it long."""
MOST_LONG_FUNCTIONS = 5
"""How many long functions the package may hold (the assembler's hot loop and the trace
writer's batch are long on purpose: inlined for speed, measured in bench/README.md)."""


def long_functions(sources: Mapping[str, Path]) -> dict[str, int]:
    """`module.function` of every function of `LONG_FUNCTION` lines or more, and its length."""
    found = {}
    for name, path in sources.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length >= LONG_FUNCTION:
                    found[f"{name}.{node.name}"] = length
    return found


def test_at_most_5_functions_run_50_lines_or_more() -> None:
    long = long_functions(module_files())
    assert len(long) <= MOST_LONG_FUNCTIONS, long


def test_the_check_counts_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{n} = {n}" for n in range(LONG_FUNCTION))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n\ndef short():\n    pass\n")
    assert long_functions({"long": tmp_path / "long.py"}) == {"long.long": LONG_FUNCTION + 1}


# -- The core in a fresh interpreter ------------------------------------------------------------

WEB = ["fastapi", "starlette", "jinja2"]
STORAGE = ["sqlite3", "psycopg", "psycopg_pool"]

PROGRAM = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {tops!r}
                        or m.startswith("webapp."))))
"""


def _present(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def _loaded(tops: list[str], modules: list[str]) -> list[str]:
    """The modules (of TOPS, and of webapp) loaded by importing MODULES in a new interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(tops=set(tops)), *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout)
    return loaded


def test_the_core_imports_no_web_code_and_no_storage() -> None:
    core = [name for name in module_files() if name.startswith("webapp.core")]
    assert {"webapp.core.assembler", "webapp.core.readers", "webapp.core.redact"} <= set(core)
    for name in WEB + STORAGE[:1]:
        assert _present(name), f"{name} is installed, so importing it by accident would show"
    loaded = _loaded(WEB + STORAGE, core)
    outside = [name for name in loaded if rank(name)[0] > LAYERS.index("core")]
    assert [name for name in loaded if not name.startswith("webapp")] == []
    assert outside == []


def test_triage_imports_no_web_code() -> None:
    triage = [name for name in module_files() if name.startswith("webapp.triage")]
    assert {"webapp.triage.minimise", "webapp.triage.report"} <= set(triage)
    loaded = _loaded(WEB + STORAGE, [*triage, "webapp.core.readers.writer"])
    assert [name for name in loaded if not name.startswith("webapp")] == []
    assert [name for name in loaded if rank(name)[0] > LAYERS.index("triage")] == []


def test_the_proxy_and_record_load_no_web_module() -> None:
    """The wing, `record` (which serves the wing alone) and `replay` (its replay alone, from a
    file) load no module of `webapp/web`, nor FastAPI or Jinja: the proxy is a wing the web
    mounts, not a corner of the web."""
    proxy = [name for name in module_files() if name.startswith("webapp.proxy")]
    assert {"webapp.proxy.forward", "webapp.proxy.app", "webapp.proxy.replay"} <= set(proxy)
    cli = ["webapp.cli.record", "webapp.cli.serve", "webapp.cli.replay", "webapp.cli.timing"]
    loaded = _loaded(WEB, [*proxy, *cli, "webapp.cli.inputs"])
    assert "webapp.proxy.forward" in loaded
    assert {name.split(".")[0] for name in loaded if not name.startswith("webapp")} == {"starlette"}
    assert [name for name in loaded if name.split(".")[:2] == ["webapp", "web"]] == []


def test_the_check_would_see_a_web_import() -> None:
    """The same program does report web modules (and storage) when they are imported."""
    assert "jinja2" in _loaded(WEB, ["jinja2"])
    assert "webapp.storage" in _loaded(WEB + STORAGE, ["webapp.storage"])
