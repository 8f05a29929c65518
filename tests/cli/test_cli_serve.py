"""`streamviz serve`: options checked by click, then uvicorn runs the app factory's app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from tests.cli.clikit import Invoke
from webapp.settings import Settings


def test_serve_help_lists_its_options(invoke: Invoke) -> None:
    result = invoke("serve", "--help")
    assert result.exit_code == 0
    for option in ("--host", "--port", "--db", "--max-bytes"):
        assert option in result.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--max-bytes", "0"], "0 is not in the range x>=1"),
        (["--max-bytes", "lots"], "'lots' is not a valid integer"),
        (["--port", "70000"], "70000 is not in the range 0<=x<=65535"),
    ],
)
def test_serve_bad_values_exit_2(invoke: Invoke, args: list[str], needle: str) -> None:
    result = invoke("serve", *args)
    assert result.exit_code == 2
    assert needle in result.stderr


def test_serve_builds_the_settings_and_runs_uvicorn(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append((app, kwargs)))
    db = tmp_path / "new-folder" / "streams.sqlite3"
    args = ("--host", "0.0.0.0", "--port", "8123", "--db", str(db), "--max-bytes", "1000")
    result = invoke("serve", *args)
    assert result.exit_code == 0, result.output
    [(app, kwargs)] = calls
    assert isinstance(app, FastAPI)
    assert app.state.settings == Settings(db=str(db), max_bytes=1000)
    assert kwargs == {"host": "0.0.0.0", "port": 8123}
    assert db.parent.is_dir()


def test_serve_passes_the_lens_bounds_to_the_app(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(app))
    db = str(tmp_path / "s.sqlite3")
    args = ("--db", db, "--lens-processes", "3", "--lens-waiting", "0", "--lens-timeout", "5")
    more = ("--lens-memory-mb", "256", "--lens-install-log", "data/l.log")
    result = invoke("serve", *args, *more)
    assert result.exit_code == 0, result.output
    [app] = calls
    expected = Settings(
        db=db,
        lens_processes=3,
        lens_waiting=0,
        lens_timeout=5.0,
        lens_memory_mb=256,
        lens_install_log="data/l.log",
    )
    assert app.state.settings == expected
    assert invoke("serve", "--lens-processes", "0").exit_code == 2


def test_serve_bounds_the_exported_file(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: started.append(app))
    db = str(tmp_path / "s.sqlite3")
    assert invoke("serve", "--db", db, "--export-steps", "25").exit_code == 0
    assert started[0].state.settings.export_steps == 25
    assert Settings.from_env(Settings(db=db, export_steps=25).to_env()).export_steps == 25
    refused = invoke("serve", "--db", db, "--export-steps", "0")
    assert refused.exit_code == 2 and "--export-steps" in refused.stderr


def test_serve_twin_needs_an_upstream_and_is_off_by_default(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append(app))
    db = str(tmp_path / "s.sqlite3")
    result = invoke("serve", "--db", db, "--twin")
    assert result.exit_code == 2 and "give --upstream NAME=URL too" in result.stderr
    assert "doubles" in invoke("serve", "--help").stdout  # the cost, said where it is chosen
    assert invoke("serve", "--db", db, "--upstream", "http://127.0.0.1:9").exit_code == 0
    assert invoke("serve", "--db", db, "--upstream", "http://127.0.0.1:9", "--twin").exit_code == 0
    assert [app.state.settings.twin for app in calls] == [False, True]
