"""Minimise jobs inside the worker's memory budget, and a job cut short by a restart ended as
interrupted when a server starts (not "running" until a later sweep)."""

from __future__ import annotations

import os
import socket

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import webapp.web.backend.jobs.minimise as minimise
from tests.web.test_web_minimise import Held, service, start, stored, ticking
from webapp.settings import Settings
from webapp.storage.owners import owner_tag, process_tag
from webapp.web.app import create_app
from webapp.web.backend.jobs.minimise import MINIMISE_PER_BYTE, Minimiser


@pytest.fixture
def held(app: FastAPI) -> Held:
    spawn = Held()
    app.state.minimiser = Minimiser(service(app), 60, 2, spawn=spawn, clock=ticking())
    return spawn


def test_a_running_job_holds_its_weight_in_the_budget_of_traces_being_made(
    client: TestClient, app: FastAPI, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minimise, "LIGHT_BELOW", 0)  # every stream large (uploads here are small)
    budget = service(app).gate.inflight
    original = stored(client)
    size = client.get(f"/api/streams/{original}").json()["size"]
    job = start(client, original, until="differs", policy="adr-0019")
    assert job.status_code == 202, job.text
    assert budget.used == min(MINIMISE_PER_BYTE * size, budget.budget)
    held.run_all()
    assert client.get(f"/api/jobs/{job.json()['job']}").json()["status"] == "done"
    assert budget.used == 0


def test_a_job_waits_for_room_in_the_budget_and_is_refused_when_none_frees(
    client: TestClient, app: FastAPI, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(minimise, "LIGHT_BELOW", 0)
    budget = service(app).gate.inflight
    budget.wait = 0.05  # how long a request may wait for room: the bound, not a sleep
    other = budget.take(budget.budget)  # a large trace being made fills the budget
    original = stored(client)
    refused = start(client, original, until="differs", policy="adr-0019")
    assert refused.status_code == 503 and refused.headers["retry-after"]
    assert "other large traces" in refused.json()["detail"]
    other.release()
    started = start(
        client, original, until="differs", policy="adr-0019"
    )  # its place was given back
    assert started.status_code == 202, started.text
    held.run_all()
    assert budget.used == 0


def test_a_job_left_running_by_a_stopped_server_ends_interrupted_at_start(
    client: TestClient, app: FastAPI, held: Held, settings: Settings
) -> None:
    original = stored(client)
    jobs = [
        start(client, original, until=until, policy=policy).json()["job"]
        for until, policy in (("differs", "adr-0019"), ("anomaly:phantom-call", "exact-key"))
    ]
    held.work.clear()  # the server "stopped": nobody runs them
    dead = subprocess_gone()
    backend = service(app).storage.backend
    backend.run(
        "UPDATE minimise_jobs SET owner = ? WHERE id = ?",
        (f"{socket.gethostname()} {dead} 12345", jobs[0]),
    )
    assert owner_tag().endswith(process_tag(os.getpid()))  # the second: this live process's
    restarted = create_app(settings)  # a server starting on the same store
    with TestClient(restarted) as again:
        first = again.get(f"/api/jobs/{jobs[0]}").json()
        assert first["status"] == "interrupted" and "interrupted" in first["error"]
        page = again.get(f"/s/{original}/minimise/{jobs[0]}").text
        assert "<b>Interrupted</b>" in page and "start it again" in page
        assert again.get(f"/api/jobs/{jobs[1]}").json()["status"] == "running"
    app.state.minimiser._slots.release()  # the dead job's place (its thread never ran)
    held_again = start(client, original, until="differs", policy="adr-0019").json()
    assert held_again["job"] != jobs[0]  # a new job may start at once
    held.run_all()


def subprocess_gone() -> int:
    """The pid of a process that has ended."""
    import subprocess

    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid
