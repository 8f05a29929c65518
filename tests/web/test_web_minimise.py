"""Minimise on the page and in the API: a job in the store, its progress, its result, its errors."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from itertools import count
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.web.webkit import HX
from webapp.core.options import Options
from webapp.core.readers import read
from webapp.examples import EXAMPLES
from webapp.storage.jobs import Jobs
from webapp.web.backend import service as service_module
from webapp.web.backend.jobs.minimise import NO_BUG, Minimiser
from webapp.web.backend.service import Service
from webapp.web.views import minimise as minimise_views

CONTINUATION = EXAMPLES["continuation"].data().decode()
"""Seven records; exact-key makes phantom calls of its bare continuations, adr-0019 does not."""
AGREE = EXAMPLES["same-index"].data().decode()
"""Anomalies under both policies, and the policies agree on it."""
CLEAN = EXAMPLES["clean"].data().decode()
"""No anomaly, policies agree: nothing to minimise."""


class Held:
    """A spawn that keeps the work until the test runs it (a job that stays `running`)."""

    def __init__(self) -> None:
        self.work: list[Callable[[], None]] = []

    def __call__(self, work: Callable[[], None]) -> None:
        self.work.append(work)

    def run_all(self) -> None:
        while self.work:
            self.work.pop(0)()


def ticking() -> Callable[[], float]:
    """A clock that moves one second each time it is read (every test writes progress)."""
    seconds = count()
    return lambda: float(next(seconds))


def service(app: FastAPI) -> Service:
    found: Service = app.state.service
    return found


@pytest.fixture
def inline(app: FastAPI) -> Minimiser:
    """Jobs run to the end inside the request that starts them."""
    made = app.state.minimiser = Minimiser(service(app), 60, 2, spawn=lambda work: work())
    return made


@pytest.fixture
def held(app: FastAPI) -> Iterator[Held]:
    """Jobs stay running until `run_all`, with a clock that ticks a second per read."""
    spawn = Held()
    app.state.minimiser = Minimiser(service(app), 60, 1, spawn=spawn, clock=ticking())
    yield spawn
    spawn.run_all()


def stored(client: TestClient, text: str = CONTINUATION, title: str = "the bug") -> str:
    response = client.post("/api/streams", json={"text": text, "title": title})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def start(client: TestClient, stream_id: str, **body: Any) -> Any:
    return client.post(f"/api/streams/{stream_id}/minimise", json=body)


def anomalies(client: TestClient, stream_id: str, policy: str) -> set[str]:
    trace = client.get(f"/api/streams/{stream_id}/trace?policy={policy}").json()
    return {anomaly["code"] for anomaly in trace["anomalies"]}


# A job that runs to completion.


def test_a_job_stores_a_smaller_stream_that_still_shows_the_anomaly(
    client: TestClient, inline: Minimiser
) -> None:
    original = stored(client)
    response = start(client, original, until="anomaly:phantom-call", policy="exact-key")
    assert response.status_code == 202, response.text
    job = response.json()
    assert response.headers["location"] == f"/api/jobs/{job['job']}"
    polled = client.get(f"/api/jobs/{job['job']}").json()
    assert polled["status"] == "done" and polled["error"] is None
    result = polled["result"]
    assert result and result != original
    assert polled["chunks"]["kept"] < polled["chunks"]["input"] == 6
    assert polled["tests"] > 0 and polled["timed_out"] is False
    raw_before = client.get(f"/api/streams/{original}/raw").content
    raw_after = client.get(f"/api/streams/{result}/raw").content
    assert len(raw_after) < len(raw_before)
    assert "phantom-call" in anomalies(client, result, "exact-key")
    info = client.get(f"/api/streams/{result}").json()
    assert info["title"] == "minimised from the bug"
    page = client.get(f"/s/{result}").text
    assert "minimised from" in page and f'href="/s/{original}"' in page and "“the bug”" in page


def test_a_job_in_a_thread_finishes_and_is_seen_by_polling(
    client: TestClient, app: FastAPI
) -> None:
    threads: list[threading.Thread] = []

    def spawn(work: Callable[[], None]) -> None:
        thread = threading.Thread(target=work)
        threads.append(thread)
        thread.start()

    app.state.minimiser = Minimiser(service(app), 60, 2, spawn=spawn)
    original = stored(client)
    job = start(client, original, until="differs", policy="adr-0019").json()
    assert job["status"] in ("running", "done")
    threads[0].join(timeout=60)
    assert not threads[0].is_alive()
    polled = client.get(f"/api/jobs/{job['job']}").json()
    assert polled["status"] == "done", polled
    diff = client.get(f"/s/{polled['result']}/compare").text
    assert "phantom" in diff  # the minimised stream still shows the policies apart


def test_the_page_starts_a_job_and_shows_the_result_with_its_sizes(
    client: TestClient, inline: Minimiser
) -> None:
    original = stored(client)
    form = {"until": "anomaly:phantom-call", "policy": "exact-key"}
    fragment = client.post(f"/s/{original}/minimise", data=form, headers=HX)
    assert fragment.status_code == 200
    assert 'data-status="done"' in fragment.text
    # the page's one select sends "POLICY UNTIL": the same job's key
    chosen = {"target": "exact-key anomaly:phantom-call"}
    same = client.post(f"/s/{original}/minimise", data=chosen, headers=HX)
    assert same.status_code == 200 and 'data-status="done"' in same.text
    assert "keeping a phantom-call anomaly under exact-key" in same.text
    assert "6 chunks → " in fragment.text
    found = re.search(r'id="minimise-result" href="/s/([\w-]+)\?policy=exact-key"', fragment.text)
    assert found
    assert "hx-trigger" not in fragment.text  # a finished job stops polling
    # without htmx: the job's own page
    again = client.post(f"/s/{original}/minimise", data=form)
    assert again.status_code == 303
    page = client.get(again.headers["location"])
    assert page.status_code == 200 and "open the minimised stream" in page.text


# A running job: progress, polling, one per key, cancel, the per-worker bound.


def test_a_running_job_polls_with_a_progress_bar_and_cancels(
    client: TestClient, held: Held
) -> None:
    original = stored(client)
    form = {"until": "differs", "policy": "adr-0019"}
    fragment = client.post(f"/s/{original}/minimise", data=form, headers=HX).text
    assert 'data-status="running"' in fragment
    assert 'hx-trigger="load delay:1s"' in fragment
    assert re.search(r'<progress id="minimise-progress" max="7" value="0">', fragment)
    assert "pass 1 of 4" in fragment and "0 tests run" in fragment
    url = re.search(r'hx-get="(/s/[\w-]+/minimise/[\w-]+)"', fragment)
    assert url
    # the stream page shows the running job too (a reload does not lose it)
    assert 'data-status="running"' in client.get(f"/s/{original}").text
    cancelled = client.post(f"{url.group(1)}/cancel", headers=HX).text
    assert "Cancelling…" in cancelled and 'hx-trigger="load delay:1s"' in cancelled
    held.run_all()  # the thread sees the flag at its first progress write
    final = client.get(url.group(1), headers=HX).text
    assert 'data-status="cancelled"' in final and "nothing was stored" in final
    assert "hx-trigger" not in final


def test_one_job_per_stream_property_and_policy(client: TestClient, held: Held) -> None:
    original = stored(client)
    first = start(client, original, until="differs", policy="adr-0019").json()
    second = start(client, original, until="differs", policy="adr-0019").json()
    assert first["job"] == second["job"]
    # another property would be a second job: this worker runs one at a time here
    busy = start(client, original, until="anomaly:phantom-call", policy="exact-key")
    assert busy.status_code == 503
    assert busy.headers["retry-after"] and "already minimising" in busy.json()["detail"]


def test_progress_is_written_to_the_store_while_the_search_runs(
    client: TestClient, app: FastAPI, held: Held
) -> None:
    original = stored(client)
    job = start(client, original, until="differs", policy="adr-0019").json()
    seen: list[dict[str, Any]] = []
    jobs = Jobs(service(app).storage)
    real = jobs.progress

    def watched(*args: Any) -> bool:
        answer = real(*args)
        seen.append(client.get(f"/api/jobs/{job['job']}").json())
        return answer

    minimiser: Minimiser = app.state.minimiser
    minimiser.jobs.progress = watched  # type: ignore[method-assign]
    held.run_all()
    assert seen and all(row["status"] == "running" for row in seen)
    assert [row["tests"] for row in seen] == sorted(row["tests"] for row in seen)
    assert seen[-1]["elapsed_seconds"] > 0
    assert client.get(f"/api/jobs/{job['job']}").json()["status"] == "done"


def test_a_job_of_a_worker_that_died_is_failed_before_the_next_starts(
    client: TestClient, app: FastAPI, held: Held
) -> None:
    original = stored(client)
    dead = start(client, original, until="differs", policy="adr-0019").json()
    held.work.clear()  # its worker "died": nobody runs it
    service(app).storage.backend.run(
        "UPDATE minimise_jobs SET updated = '2000-01-01T00:00:00.000+00:00' WHERE id = ?",
        (dead["job"],),
    )
    minimiser: Minimiser = app.state.minimiser
    minimiser._slots.release()  # the dead job's slot (its thread never ran)
    fresh = start(client, original, until="differs", policy="adr-0019").json()
    assert fresh["job"] != dead["job"]
    stale = client.get(f"/api/jobs/{dead['job']}").json()
    assert stale["status"] == "failed" and "stopped" in stale["error"]


# The control on the page.


def opened(client: TestClient, url: str) -> str:
    """The Minimise form as the page at `url` loads it when its section is opened (htmx)."""
    page = client.get(url).text
    link = re.search(r'id="minimise-open" href="([^"]+)"', page)
    assert link, "the page links to its Minimise form"
    assert 'id="minimise-target"' not in page  # the choices come with the form, not the page
    return client.get(link.group(1).replace("&amp;", "&"), headers=HX).text


def test_the_page_offers_the_streams_anomalies_and_the_difference(
    client: TestClient, inline: Minimiser
) -> None:
    original = stored(client)
    page = opened(client, f"/s/{original}?policy=exact-key")
    assert 'action="/s/' + original + '/minimise"' in page
    under_exact_key = page.index('<optgroup label="an anomaly under exact-key">')
    phantom = page.index('<option value="exact-key anomaly:phantom-call">phantom-call (error')
    assert under_exact_key < phantom < page.index('value="exact-key differs"')
    # the other policy's anomalies too, after the page's own (adr-0019 has none here)
    assert 'label="an anomaly under adr-0019"' not in page
    agree = opened(client, f"/s/{stored(client, AGREE)}")
    assert '<option value="adr-0019 anomaly:id-conflict">' in agree
    assert '<option value="exact-key anomaly:id-conflict">' in agree
    assert "differs" not in agree
    clean = opened(client, f"/s/{stored(client, CLEAN)}")
    assert "nothing to minimise" in clean and 'id="minimise-start"' not in clean
    example = client.get("/examples/continuation").text
    assert 'id="minimise"' not in example


HINT = "the client path's page"
"""The link a large stream's page on other options offers instead of listing the anomalies."""


def test_a_large_stream_on_other_options_assembles_no_second_trace(
    client: TestClient, inline: Minimiser, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Over DIFFERS_CHECK_STEPS steps, a page on the server-tools path (not the options a job
    # runs with) must not assemble the client path's trace only to list its anomalies: 16
    # such pages at once held 16 large traces each waiting for a second one.
    monkeypatch.setattr(minimise_views, "DIFFERS_CHECK_STEPS", 3)
    made: list[Options] = []
    real = service_module.assemble

    def counted(records: Any, options: Options) -> Any:
        made.append(options)
        return real(records, options)

    monkeypatch.setattr(service_module, "assemble", counted)
    original = stored(client)
    made.clear()  # storing indexed it under the default options (the client path)
    page = opened(client, f"/s/{original}?policy=exact-key&path=server-tools&server_tools=x")
    assert [options.path for options in made] == ["server-tools"]
    link = f"/s/{original}?policy=exact-key&amp;path=client"
    assert f'<a href="{link}">{HINT}</a>' in page
    assert 'value="exact-key differs"' in page  # offered unchecked, as on any large stream
    made.clear()
    own = opened(client, f"/s/{original}?policy=exact-key")  # the job's options: its own view
    assert [options.path for options in made] == ["client"]
    assert '<option value="exact-key anomaly:phantom-call">' in own and HINT not in own
    again = opened(client, f"/s/{original}?policy=exact-key&path=server-tools&server_tools=x")
    assert '<option value="exact-key anomaly:phantom-call">' in again  # cached now: listed
    assert HINT not in again


def test_deleting_the_original_leaves_the_child_page_working(
    client: TestClient, inline: Minimiser
) -> None:
    original = client.post("/streams", data={"text": CONTINUATION, "title": "parent"})
    original_id = original.headers["location"].split("/s/")[1].split("?")[0]
    job = start(client, original_id, until="differs", policy="adr-0019").json()
    child = client.get(f"/api/jobs/{job['job']}").json()["result"]
    assert client.post(f"/s/{original_id}/delete").status_code == 303
    assert client.get(f"/s/{original_id}").status_code == 404
    page = client.get(f"/s/{child}")
    assert page.status_code == 200
    assert "minimised from a stream that has since been deleted" in page.text
    assert client.get(f"/api/jobs/{job['job']}").status_code == 404  # went with its stream


# Bad input: a clear 4xx, never a 500.


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"until": "anomaly:no-such-code", "policy": "adr-0019"}, 422, "unknown anomaly code"),
        ({"until": "anomaly:phantom-call", "policy": "adr-0019"}, 422, "shows no phantom-call"),
        ({"until": "differs", "policy": "sideways"}, 422, "policy must be one of"),
        ({"until": "", "policy": "adr-0019"}, 422, "say what to keep"),
        ({"policy": "adr-0019"}, 422, "say what to keep"),
        ({"until": 3}, 422, "say what to keep"),
        ({"until": "everything"}, 422, "give anomaly:CODE, differs or rule:RULE"),
        ({"until": "rule:no-such-rule"}, 422, "unknown rule"),
    ],
)
def test_bad_requests_are_refused_in_words(
    client: TestClient, inline: Minimiser, body: dict[str, Any], status: int, words: str
) -> None:
    original = stored(client)
    response = start(client, original, **body)
    assert response.status_code == status
    assert words in response.json()["detail"]


def test_differs_is_refused_when_the_policies_agree(client: TestClient, inline: Minimiser) -> None:
    response = start(client, stored(client, AGREE), until="differs", policy="adr-0019")
    assert response.status_code == 422
    assert "agree on this stream" in response.json()["detail"]


def test_unknown_ids_and_bodies(client: TestClient, inline: Minimiser) -> None:
    missing = start(client, "no-such-stream", until="differs")
    assert missing.status_code == 404
    assert client.post("/api/streams/no-such-stream/minimise", content=b"{").status_code == 404
    original = stored(client)
    broken = client.post(f"/api/streams/{original}/minimise", content=b"not json")
    assert broken.status_code == 400 and "not JSON" in broken.json()["detail"]
    listed = client.post(f"/api/streams/{original}/minimise", json=["differs"])
    assert listed.status_code == 400
    assert client.get("/api/jobs/no-such-job").status_code == 404
    assert client.delete("/api/jobs/no-such-job").status_code == 404
    assert client.get(f"/s/{original}/minimise/no-such-job").status_code == 404
    gone = client.get(f"/s/{original}/minimise/no-such-job", headers=HX)
    assert gone.status_code == 404 and "This job is gone" in gone.text
    assert client.post(f"/s/{original}/minimise/nope/cancel").status_code == 404
    example = start(client, "example:continuation", until="differs")
    assert example.status_code == 422 and "built-in example" in example.json()["detail"]


def test_the_page_form_says_what_is_wrong(client: TestClient, inline: Minimiser) -> None:
    original = stored(client)
    bad = {"until": "anomaly:phantom-call", "policy": "adr-0019"}
    fragment = client.post(f"/s/{original}/minimise", data=bad, headers=HX)
    assert fragment.status_code == 422
    assert 'role="alert"' in fragment.text and "shows no phantom-call" in fragment.text
    page = client.post(f"/s/{original}/minimise", data=bad)
    assert page.status_code == 422 and "That cannot be minimised" in page.text
    assert client.post("/s/nope/minimise", data=bad).status_code == 404


def test_a_clean_stream_says_there_is_nothing_to_minimise(
    client: TestClient, inline: Minimiser
) -> None:
    # No quirk, no anomaly, both policies intact: the form, its page, a post and the API all
    # say so in the same words, and none of them offers or makes a copy.
    clean = stored(client, CLEAN)
    form = opened(client, f"/s/{clean}")
    assert f'<p id="minimise-nothing" class="minimise-nothing">{NO_BUG}</p>' in form
    assert 'id="minimise-start"' not in form and 'value="adr-0019 fingerprint"' not in form
    assert NO_BUG in client.get(f"/s/{clean}/minimise").text  # the form as a page (no htmx)
    posted = client.post(f"/s/{clean}/minimise", data={"target": "adr-0019 fingerprint"})
    assert posted.status_code == 422 and NO_BUG in posted.text
    answer = start(client, clean, until="fingerprint", policy="adr-0019")
    assert answer.status_code == 422 and answer.json()["detail"] == NO_BUG
    assert client.get("/api/streams").json()["total"] == 1  # no copy was stored
    # a stream with a bug is offered its fingerprint, and no such words
    bug = opened(client, f"/s/{stored(client)}")
    assert 'value="adr-0019 fingerprint"' in bug and NO_BUG not in bug


def test_a_job_of_one_stream_is_not_served_under_another(
    client: TestClient, inline: Minimiser
) -> None:
    first, second = stored(client), stored(client)
    job = start(client, first, until="differs", policy="adr-0019").json()
    assert client.get(f"/s/{second}/minimise/{job['job']}").status_code == 404
    assert client.get(f"/s/{first}/minimise/{job['job']}").status_code == 200


def test_the_minimised_stream_reads_back_as_sse(client: TestClient, inline: Minimiser) -> None:
    job = start(client, stored(client), until="anomaly:phantom-call", policy="exact-key").json()
    result = client.get(f"/api/jobs/{job['job']}").json()["result"]
    raw = client.get(f"/api/streams/{result}/raw").text
    assert raw.endswith("data: [DONE]\n\n")
    assert read(raw, "sse").format == "sse"


def test_whoever_asked_for_the_minimised_stream_can_delete_it(
    client: TestClient, inline: Minimiser
) -> None:
    original = stored(client)
    # The API: the 202 carries the token that will delete the result.
    job = start(client, original, until="anomaly:phantom-call", policy="exact-key").json()
    result = client.get(f"/api/jobs/{job['job']}").json()["result"]
    wrong = client.delete(f"/api/streams/{result}", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code in (401, 403)
    right = {"Authorization": f"Bearer {job['delete_token']}"}
    assert client.delete(f"/api/streams/{result}", headers=right).status_code == 204
    assert client.get(f"/api/streams/{result}").status_code == 404
    # The page: the token waits in this browser's cookie under the job, then goes to the result.
    form = {"until": "anomaly:phantom-call", "policy": "exact-key"}
    client.post(f"/s/{original}/minimise", data=form, headers=HX)
    jobs = [pair.partition(":")[0] for pair in client.cookies["streamviz_own"].split(".")]
    job_id = jobs[-1]
    assert job_id not in (original, result)
    fragment = client.get(f"/s/{original}/minimise/{job_id}", headers=HX)
    assert fragment.status_code == 200
    child = client.get(f"/api/jobs/{job_id}").json()["result"]
    kept = dict(pair.partition(":")[::2] for pair in client.cookies["streamviz_own"].split("."))
    assert job_id not in kept and child in kept
    mine = {"Authorization": f"Bearer {kept[child]}"}
    assert client.delete(f"/api/streams/{child}", headers=mine).status_code == 204


def test_a_job_already_running_gives_no_token_to_a_second_asker(
    client: TestClient, held: Held
) -> None:
    original = stored(client)
    first = start(client, original, until="differs", policy="adr-0019").json()
    second = start(client, original, until="differs", policy="adr-0019").json()
    assert first["job"] == second["job"]
    assert "delete_token" in first and "delete_token" not in second


def test_the_form_opens_as_a_page_without_javascript(client: TestClient, inline: Minimiser) -> None:
    original = stored(client)
    page = client.get(f"/s/{original}?policy=exact-key").text
    section = page.split('<details id="minimise"')[1].split("</details>")[0]
    link = re.search(r'id="minimise-open" href="([^"]+)"', section)
    assert link and 'hx-trigger="toggle once"' in page
    form_url = link.group(1).replace("&amp;", "&")
    assert form_url == f"/s/{original}/minimise?policy=exact-key&path=client"
    whole = client.get(form_url)
    assert whole.status_code == 200 and "<html" in whole.text.lower()
    assert '<option value="exact-key anomaly:phantom-call">' in whole.text
    assert f'href="/s/{original}?step=0&amp;policy=exact-key&amp;path=client"' in whole.text
    posted = client.post(
        f"/s/{original}/minimise", data={"target": "exact-key anomaly:phantom-call"}
    )
    assert posted.status_code == 303 and "/minimise/" in posted.headers["location"]
    assert client.get("/s/example:continuation/minimise").status_code == 422
    assert client.get("/s/no-such-stream/minimise").status_code == 404
    assert client.get(f"/s/{original}/minimise?policy=sideways").status_code == 400
