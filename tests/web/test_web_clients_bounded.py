"""The client lenses under one bound per worker: a line with each stream's place on its page, at
most `lens_processes` at once, results kept in the store for every worker, a library installed
after start noticed, "compute again", a full line refused, and `make run`'s install shown."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

import webapp.lenses
from tests.lenses.fakes import CALL, answering, missing
from tests.web.webkit import HX, Store
from webapp.lenses.pins import BY_CLIENT
from webapp.lenses.results import Call, LensResult
from webapp.lenses.runner import Lens
from webapp.settings import Settings
from webapp.storage.lensresults import LensResults
from webapp.web.app import create_app
from webapp.web.backend.jobs.clientjobs import ClientJobs
from webapp.web.backend.jobs.lensinstall import install_state

ROOT = Path(__file__).resolve().parents[2]
STREAM = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    "data: [DONE]\n\n"
)
WAIT = 30.0
LENSES = (Lens(BY_CLIENT["pi-ai"], ("unused",)), Lens(BY_CLIENT["openai-python"], ("unused",)))


class Gated:
    """A lens run the test lets end: each run is counted while it runs, says it started
    (`started`), and ends with a call once the test releases it (`go`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.runs = 0
        self.started = threading.Semaphore(0)
        self.go = threading.Semaphore(0)

    def __call__(self, lens: Lens, text: str, timeout: float, memory: int) -> LensResult:
        with self.lock:
            self.running += 1
            self.runs += 1
            self.most = max(self.most, self.running)
        self.started.release()
        assert self.go.acquire(timeout=WAIT), "the test never let this lens end"
        with self.lock:
            self.running -= 1
        call = Call(CALL["id"], CALL["name"], CALL["arguments"])
        return LensResult(lens.client, lens.pin.version, "ok", (call,))

    def wait_started(self) -> None:
        assert self.started.acquire(timeout=WAIT), "no lens started"


@pytest.fixture
def gated(app: FastAPI) -> Iterator[Gated]:
    run = Gated()
    app.state.clients = ClientJobs(LENSES, processes=1, waiting=2, run=run)
    yield run
    run.go.release(100)  # never leave a worker thread waiting after the test


def where(client: TestClient, stream_id: str) -> str:
    text = client.get(f"/s/{stream_id}/clients").text
    return text.split('id="lens-where">', 1)[1].split("</p>", 1)[0]


def test_streams_wait_in_line_with_their_place_shown_and_one_process_at_a_time(
    app: FastAPI, client: TestClient, store: Store, gated: Gated
) -> None:
    first, second, third = (store(STREAM, title=f"stream {n}") for n in range(3))
    assert where(client, first) in ("running: 0 of 2 libraries answered", "waiting: 1st in line")
    gated.wait_started()
    assert where(client, second) == "waiting: 1st in line"
    assert where(client, third) == "waiting: 2nd in line"
    assert where(client, first) == "running: 0 of 2 libraries answered"
    api = client.get(f"/api/streams/{third}/clients")
    assert api.status_code == 202
    assert api.json() == {"status": "computing", "where": "waiting: 2nd in line"}
    gated.go.release()  # the first stream's first lens ends, its second starts
    gated.wait_started()
    assert where(client, first) == "running: 1 of 2 libraries answered"
    assert where(client, second) == "waiting: 1st in line"
    gated.go.release()
    gated.wait_started()  # the second stream's turn
    assert where(client, third) == "waiting: 1st in line"
    gated.go.release(4)
    jobs: ClientJobs = app.state.clients
    for stream_id in (first, second, third):
        assert jobs.wait(stream_id, WAIT) is not None
    assert (gated.runs, gated.most) == (6, 1)
    page = client.get(f"/s/{third}/clients")
    assert "Intact: pi-ai, openai-python" in page.context["page"].headline


def test_a_full_line_is_refused_with_a_retry(
    app: FastAPI, client: TestClient, store: Store, gated: Gated
) -> None:
    running, *waiting, refused = (store(STREAM, title=f"stream {n}") for n in range(4))
    client.get(f"/s/{running}/clients")
    gated.wait_started()
    for stream_id in waiting:
        assert client.get(f"/s/{stream_id}/clients").status_code == 200
    page = client.get(f"/s/{refused}/clients")
    assert page.status_code == 503 and page.headers["Retry-After"] == "30"
    assert "2 streams are waiting for the client libraries already" in page.text
    api = client.get(f"/api/streams/{refused}/clients")
    assert api.status_code == 503 and api.json()["status"] == "busy"
    assert gated.runs == 1


def _counting(calls: list[str]) -> ClientJobs:
    def run(lens: Lens, text: str, timeout: float, memory: int) -> LensResult:
        calls.append(lens.client)
        call = Call(CALL["id"], CALL["name"], CALL["arguments"])
        return LensResult(lens.client, lens.pin.version, "ok", (call,))

    return ClientJobs(LENSES, run=run)


def test_every_worker_shows_the_results_one_worker_kept(
    app: FastAPI, client: TestClient, store: Store, settings: Settings
) -> None:
    ran_here: list[str] = []
    app.state.clients = _counting(ran_here)
    stream_id = store(STREAM)
    document = client.get(f"/api/streams/{stream_id}/clients?wait=true").json()
    assert ran_here == ["pi-ai", "openai-python"]
    kept = LensResults(app.state.service.storage).get(
        stream_id, None, "pi-ai=1.6.0;openai-python=3.57.0"
    )
    assert kept is not None and [result.client for result in kept] == ["pi-ai", "openai-python"]
    other = create_app(settings)  # another worker (or host) on the same store
    ran_there: list[str] = []
    other.state.clients = _counting(ran_there)
    with TestClient(other) as there:
        again = there.get(f"/api/streams/{stream_id}/clients?wait=true")
        assert again.status_code == 200 and again.json() == document
        assert "Intact: pi-ai, openai-python" in there.get(f"/s/{stream_id}/clients").text
    assert ran_there == []  # no library ran in the other worker


def test_compute_again_forgets_the_kept_result(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    ran: list[str] = []
    app.state.clients = _counting(ran)
    stream_id = store(STREAM)
    assert client.get(f"/api/streams/{stream_id}/clients?wait=true").status_code == 200
    page = client.get(f"/s/{stream_id}/clients").text
    assert f'<form class="again" method="post" action="/s/{stream_id}/clients/again">' in page
    assert client.get(f"/s/{stream_id}/clients").status_code == 200 and len(ran) == 2
    response = client.post(f"/s/{stream_id}/clients/again")
    assert response.status_code == 303 and response.headers["location"] == f"/s/{stream_id}/clients"
    assert LensResults(app.state.service.storage).forget(stream_id, None) == 0  # gone already
    assert client.get(f"/api/streams/{stream_id}/clients?wait=true").status_code == 200
    assert len(ran) == 4  # run again
    assert client.post("/s/nosuchstream/clients/again").status_code == 404


def test_a_library_installed_after_start_is_noticed(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lenses are looked at again on each visit: once litellm is installed, the page
    computes anew and grades it (no restart)."""
    installed = answering({"status": "ok", "calls": [CALL], "error": None}, "litellm")
    now: list[Lens] = [missing("litellm")]
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: tuple(now))
    stream_id = store(STREAM)
    before = client.get(f"/api/streams/{stream_id}/clients?wait=true").json()
    assert [c["status"] for c in before["clients"]] == ["unavailable"]
    now[:] = [installed]
    after = client.get(f"/api/streams/{stream_id}/clients?wait=true").json()
    assert [c["status"] for c in after["clients"]] == ["ok"]
    assert {g["client"]: g["grade"] for g in after["grades"]}["litellm"] == "intact"


def _log(path: Path, *lines: str) -> None:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def test_the_page_shows_make_run_s_install_while_a_library_is_missing(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "lens-install.log"
    settings = Settings(db=db_url, lens_install_log=str(log))
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: (missing("litellm"),))
    app = create_app(settings)
    with TestClient(app) as client:
        stream_id = client.post("/api/streams", json={"text": STREAM}).json()["id"]
        client.get(f"/api/streams/{stream_id}/clients?wait=true")
        page = client.get(f"/s/{stream_id}/clients").text
        assert 'id="lens-install"' not in page  # no log: the usual "make clients" line
        assert "<code>make clients</code> installs them all" in page
        started = (
            f"streamviz: installing the client lenses (pid {os.getpid()}) at now: make clients"
        )
        _log(log, started, "Collecting litellm==1.110.2", "Installing collected packages: litellm")
        panel = client.get(f"/s/{stream_id}/clients/matrix", headers=HX).text
        assert "The client libraries are being installed beside the server" in panel
        assert "Installing collected packages: litellm</pre>" in panel
        assert 'hx-trigger="every 5s"' in panel  # the page polls until the install ends
        _log(log, started, "added 40 packages", "streamviz: the client lenses are installed (52 s)")
        panel = client.get(f"/s/{stream_id}/clients/matrix", headers=HX).text
        assert "The install of the client libraries ended" in panel
        assert 'hx-trigger="every 5s"' not in panel


def test_an_install_s_log_says_running_done_failed_or_stopped(tmp_path: Path) -> None:
    log = tmp_path / "deep" / "install.log"
    script = str(ROOT / "scripts" / "install-lenses.sh")
    subprocess.run([script, str(log), "sh", "-c", "echo fetching; echo built"], check=True)
    done = install_state(str(log))
    assert done is not None and done.state == "done"
    assert done.lines[1:3] == ("fetching", "built") and done.lines[-1].startswith(
        "streamviz: the client lenses are installed ("
    )
    subprocess.run([script, str(log), "sh", "-c", "echo oops; exit 3"], check=True)
    failed = install_state(str(log))
    assert failed is not None and failed.state == "failed"
    assert failed.lines[-1].startswith("streamviz: installing the client lenses failed (exit 3)")
    gone = subprocess.run(["true"], check=True)
    assert gone.returncode == 0
    dead = subprocess.Popen(["true"])
    dead.wait()  # a process that has ended: its number names no install
    _log(log, f"streamviz: installing the client lenses (pid {dead.pid}) at then: make clients")
    stopped = install_state(str(log))
    assert stopped is not None and stopped.state == "stopped"
    assert install_state("") is None and install_state(str(tmp_path / "none.log")) is None


def test_make_run_installs_the_lenses_beside_the_server() -> None:
    """`make run` starts the install in the background (its log named to the server) and the
    server at once; with the lenses installed already it starts no install."""
    dry = subprocess.run(
        ["make", "-n", "run", "LENS_LOG=data/x.log"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "scripts/install-lenses.sh" in dry and "clients" in dry
    assert "--lens-install-log 'data/x.log'" in dry
    serve = next(line for line in dry.splitlines() if "streamviz serve" in line)
    assert "&" not in serve  # the server runs in the foreground, the install beside it


def test_a_stopping_server_starts_no_more_lenses_and_leaves_none_waiting(
    app: FastAPI, client: TestClient, store: Store, gated: Gated
) -> None:
    """Stopping: the lens running ends on its own, the ones in line end as not run (the store
    is closed only after; it used to be closed under a lens thread, a segfault in SQLite)."""
    first, second = store(STREAM, title="one"), store(STREAM, title="two")
    client.get(f"/s/{first}/clients")
    gated.wait_started()
    client.get(f"/s/{second}/clients")
    jobs: ClientJobs = app.state.clients
    batch = jobs.queue._batches[next(k for k in jobs.queue._batches if k[0] == second)]
    jobs.queue.close()
    assert batch.done.is_set() and batch.error is not None
    gated.go.release()
    assert jobs.close(WAIT)
    assert gated.runs == 1
