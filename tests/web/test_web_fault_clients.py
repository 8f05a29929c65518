"""Whose fault, graded: the clients page, its API, `streamviz clients` and report.md show the same
grades and headline, and the page says each sentence once; with a HAR file of two event
streams, everything derived from the stream (the lens table, report.md's lens section,
Minimise, fixture.zip) uses the entry on screen."""

from __future__ import annotations

import io
import json
import re
import zipfile
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient

import webapp.lenses
from tests.lenses.fakes import CRASHES, answering, missing, program
from tests.lenses.streams import STREAMS, load_golden
from tests.streamkit import chunk, frag, har_of, sse
from tests.web.webkit import HX, Store
from webapp.cli import main
from webapp.core.readers import read
from webapp.settings import Settings
from webapp.storage.jobs import Jobs
from webapp.triage.fingerprint import fingerprint
from webapp.triage.report import cell
from webapp.web.app import create_app
from webapp.web.backend.jobs.minimise import Minimiser
from webapp.web.routes.clients import ClientJobs

ENVOY_PATH = "tests/corpus/no-index.sse"
ENVOY = Path(ENVOY_PATH).read_text(encoding="utf-8")
FIRST = sse(chunk(frag(0, "call_1", "get_time", '{"tz": "CET"}')), chunk(finish="tool_calls"))
"""A HAR's first event stream: one clean call."""
SECOND = sse(
    chunk(frag(0, "call_1", "get_weather", "")),
    chunk(frag(args='{"city": "Paris"}')),
    chunk(finish="tool_calls"),
)
"""Its second: a header, then a bare continuation (missing-index, bare-continuation)."""
CLEAN = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)


@pytest.fixture
def lenses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default lenses, for the web and the CLI alike: pi-ai hands the first call `{}`,
    openai-python crashes, vercel-ai hands the Envoy stream's call as it means, litellm is
    missing."""
    pi_ai = answering(
        {"status": "ok", "error": None,
         "calls": [{"id": "call_1", "name": "search_docs", "arguments": "{}"}]},
        "pi-ai",
    )  # fmt: skip
    vercel = answering(
        {"status": "ok", "error": None, "calls": [{"id": "call_1", "name": "search_docs",
         "arguments": '{"query": "streaming tool calls", "limit": 5}'}]},
        "vercel-ai",
    )  # fmt: skip
    chosen = (pi_ai, program(CRASHES, "openai-python"), vercel, missing("litellm"))
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: chosen)


def cli_json(*args: str) -> Any:
    result = CliRunner(env={"NO_COLOR": "1"}).invoke(main, ["clients", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def api(client: TestClient, stream_id: str, query: str = "") -> Any:
    response = client.get(f"/api/streams/{stream_id}/clients?wait=true{query}")
    assert response.status_code == 200, response.text
    return response.json()


# The grades: the page, the API, the CLI and report.md agree.


def test_the_api_answers_what_the_cli_prints(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    document = api(client, stream_id)
    assert document == cli_json(ENVOY_PATH)
    grades = {g["client"]: (g["grade"], g["version"]) for g in document["grades"]}
    assert grades == {
        "pi-ai": ("damaged", "1.6.0"),
        "openai-python": ("flagged", "3.57.0"),
        "vercel-ai": ("intact", "7.0.173"),
        "litellm": (None, "1.110.2"),
        "adr-0019": ("intact", "this build"),
        "exact-key": ("damaged", "this build"),
    }
    assert document["verdict"] == (
        "The provider (example-model) broke the contract: missing-index and bare-continuation. "
        "Damaged silently: pi-ai, exact-key. Flagged: openai-python. Intact: vercel-ai, adr-0019. "
        "Not run: litellm."
    )
    assert [q["code"] for q in document["quirks"]] == ["missing-index", "bare-continuation"]
    assert document["reference"] == "intended"
    assert document["comparison"] == (
        "Against what the stream means: 1 of 3 clients gets search_docs's arguments wrong "
        "(pi-ai); openai-python fails; not installed: litellm"
    )
    assert [party["kind"] for party in document["file"]] == ["provider"]


def test_the_page_shows_every_grade_with_its_version_and_why(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    document = api(client, stream_id)
    page = client.get(f"/s/{stream_id}/clients")
    view = page.context["page"]
    assert view.headline == document["verdict"]  # the same headline, the party at fault first
    assert [(row.client, row.grade, row.version) for row in view.grades] == [
        (g["client"], g["grade"] or "not run", g["version"]) for g in document["grades"]
    ]
    html = page.text
    headline = _escaped(document["verdict"])
    assert f'<p class="verdict whose-fault" id="verdict">{headline}</p>' in html
    row = html.split('id="grade-pi-ai"', 1)[1].split("</tr>", 1)[0]
    assert "@earendil-works/pi-ai 1.6.0" in row
    # the grade cell: focusable, described by its tooltip, which says why in words
    assert 'class="grade grade-damaged" tabindex="0" aria-describedby="why-pi-ai"' in row
    tip = row.split('id="why-pi-ai">', 1)[1].split("</span>", 1)[0]
    assert tip == (
        "<b>damaged</b>: it receives other calls or arguments and says nothing: the dangerous case"
    )
    assert '<td class="detail">search_docs gets {} instead of' in row  # what it gets, beside it
    assert 'class="grade grade-not-run"' in html.split('id="grade-litellm"', 1)[1]
    # where to file: the provider, with the evidence ready to paste (folded)
    assert '<section class="file-with kind-provider"' in html
    assert '<details class="evidence-box">' in html
    assert "File with the provider: a provider bug: example-model omits `index`" in html
    assert "pi-ai 1.6.0: damaged: search_docs gets {}" in html
    # the quirks and what the stream means, the matrix below
    assert "missing-index" in html and "search_docs" in html
    assert 'id="comparison"' in html and _escaped(document["comparison"]) in html


def _escaped(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&#34;").replace("'", "&#39;")
            .replace("<", "&lt;"))  # fmt: skip


def test_report_md_has_the_same_grades_and_headline(
    lenses: None, client: TestClient, store: Store
) -> None:
    stream_id = store(ENVOY)
    before = client.get(f"/s/{stream_id}/report.md").text
    # not computed yet: this build's two policies graded, as `streamviz report` does
    assert "| adr-0019 | this build | intact |" in before and "| pi-ai |" not in before
    document = api(client, stream_id)
    text = client.get(f"/s/{stream_id}/report.md").text
    assert f"**Whose fault:** {cell(document['verdict'])}" in text
    for graded in document["grades"]:
        shown = graded["grade"] or "not run"
        assert f"| {cell(graded['client'])} | {cell(graded['version'])} | {shown} |" in text
    assert "## Where to file\n\n### The provider (example-model)\n\nFile with the provider" in text
    assert "## Every client's view" in text
    runner = CliRunner(env={"NO_COLOR": "1"})
    cli = runner.invoke(main, ["report", ENVOY_PATH, "--clients"]).stdout
    assert f"**Whose fault:** {cell(document['verdict'])}" in cli


def test_a_clean_stream_with_a_damaging_client_files_with_the_client(
    lenses: None, client: TestClient, store: Store
) -> None:
    document = api(client, store(CLEAN))
    assert [q["code"] for q in document["quirks"]] == []
    assert document["verdict"].startswith(
        "The provider keeps the contract: a client bug in pi-ai, openai-python and vercel-ai."
    )
    parties = [(party["kind"], party["name"]) for party in document["file"]]
    assert ("library", "@earendil-works/pi-ai 1.6.0") in parties
    assert all(kind == "library" for kind, _ in parties)  # no quirk: the clients' fault


def test_the_api_refuses_a_bad_entry_and_waits_politely(
    app: FastAPI, client: TestClient, store: Store
) -> None:
    app.state.clients = ClientJobs((missing("pi-ai"),))
    stream_id = store(ENVOY)
    assert client.get(f"/api/streams/{stream_id}/clients?har_entry=x").status_code == 400
    assert client.get(f"/api/streams/{stream_id}/clients?har_entry=2").status_code == 422
    assert client.get(f"/s/{stream_id}/clients?har_entry=0").status_code == 400


# The HAR entry on screen drives everything derived from it.


def test_the_entry_on_screen_drives_the_lenses_the_report_and_the_fixture(
    lenses: None, client: TestClient, store: Store, tmp_path: Path
) -> None:
    stream_id = store(har_of(FIRST, SECOND))
    page = client.get(f"/s/{stream_id}?har_entry=2")
    links = page.context["links"]
    for url in (links.clients, links.clients_json, links.report, links.fixture, links.minimise,
                links.minimise_form):  # fmt: skip
        assert "har_entry=2" in url, url
    assert f'href="/s/{stream_id}/clients?har_entry=2"' in page.text
    # the lenses run on the first entry first: the second's report must not borrow them
    first = api(client, stream_id)
    assert [c["name"] for c in first["intended"]["calls"]] == ["get_time"]
    report = client.get(f"/s/{stream_id}/report.md?policy=adr-0019&har_entry=2").text
    assert "get_time" not in report and "## Every client's view" not in report
    assert "missing-index" in report  # this entry's quirks, graded on this build's policies
    second = api(client, stream_id, "&har_entry=2")
    assert [c["name"] for c in second["intended"]["calls"]] == ["get_weather"]
    assert second["input"]["meta"]["entry"] == 2
    assert second == _cli_of_entry(tmp_path, 2)
    report = client.get(f"/s/{stream_id}/report.md?policy=adr-0019&har_entry=2").text
    assert "## Every client's view" in report and "get_time" not in report
    assert f"**Whose fault:** {cell(second['verdict'])}" in report
    clients_page = client.get(f"/s/{stream_id}/clients?har_entry=2")
    assert clients_page.context["page"].headline == second["verdict"]
    assert "HAR entry 2" in clients_page.text and "get_time" not in clients_page.text
    assert f'href="/api/streams/{stream_id}/clients?wait=true&amp;har_entry=2"' in (
        clients_page.text
    )
    bundle = client.get(f"/s/{stream_id}/fixture.zip?har_entry=2").content
    with zipfile.ZipFile(io.BytesIO(bundle)) as opened:
        stream = opened.read("stream.sse").decode()
    assert "get_weather" in stream and "get_time" not in stream


def _cli_of_entry(tmp_path: Path, entry: int) -> Any:
    path = tmp_path / "two.har"
    path.write_text(har_of(FIRST, SECOND), encoding="utf-8")
    return cli_json(str(path), "--har-entry", str(entry))


@pytest.fixture
def inline(app: FastAPI) -> Minimiser:
    """Minimise jobs run to the end inside the request that starts them."""
    made = app.state.minimiser = Minimiser(app.state.service, 60, 2, spawn=lambda work: work())
    return made


def test_minimise_on_the_page_keeps_the_fingerprint_of_the_entry_on_screen(
    client: TestClient, store: Store, inline: Minimiser
) -> None:
    stream_id = store(har_of(FIRST, SECOND))
    form = client.get(f"/s/{stream_id}/minimise?har_entry=2", headers=HX)
    assert form.status_code == 200
    control = form.context["minimise"]
    assert control.action == f"/s/{stream_id}/minimise?har_entry=2"
    first = control.groups[0]
    assert first.choices[0].value == "adr-0019 fingerprint"  # the default: the first option
    assert "missing-index" in first.choices[0].label
    values = [choice.value for group in control.groups for choice in group.choices]
    assert "exact-key anomaly:phantom-call" in values  # the old properties stay
    posted = client.post(control.action, data={"target": "adr-0019 fingerprint"}, headers=HX)
    assert posted.status_code == 200, posted.text
    job = posted.context["job"].job
    assert (job.status, job.har_entry, job.until) == ("done", 2, "fingerprint")
    assert "of HAR entry 2" in posted.context["job"].what
    raw = client.get(f"/api/streams/{job.result}/raw").text
    assert "get_weather" in raw and "get_time" not in raw
    original = read(har_of(FIRST, SECOND), har_entry=2).records
    assert fingerprint(read(raw).records) == fingerprint(original)
    info = client.get(f"/api/streams/{job.result}").json()
    assert info["title"] == "minimised from test stream (HAR entry 2)"


def test_minimise_api_takes_the_fingerprint_and_an_entry(
    client: TestClient, store: Store, inline: Minimiser
) -> None:
    stream_id = store(har_of(FIRST, SECOND))
    url = f"/api/streams/{stream_id}/minimise"
    response = client.post(url, json={"until": "fingerprint", "har_entry": 2})
    assert response.status_code == 202, response.text
    job = client.get(f"/api/jobs/{response.json()['job']}").json()
    assert (job["status"], job["har_entry"], job["until"]) == ("done", 2, "fingerprint")
    raw = client.get(f"/api/streams/{job['result']}/raw").text
    assert "get_weather" in raw and "get_time" not in raw
    # the first entry keeps the contract and reads as it means: no bug to keep
    refused = client.post(url, json={"until": "fingerprint"})
    assert refused.status_code == 422 and "no bug to keep" in refused.json()["detail"]
    for bad in ("2", 0, -1, 2.5, True):
        answer = client.post(url, json={"until": "fingerprint", "har_entry": bad})
        assert answer.status_code == 422 and "har_entry must be" in answer.json()["detail"]
    assert client.post(url, json={"until": "fingerprint", "har_entry": 9}).status_code == 422


def test_a_clean_stream_offers_no_fingerprint(client: TestClient, store: Store) -> None:
    stream_id = store(CLEAN)
    control = client.get(f"/s/{stream_id}/minimise", headers=HX).context["minimise"]
    assert control.groups == ()


def test_one_running_job_per_stream_entry_property_and_policy(app: FastAPI, store: Store) -> None:
    stream_id = store(har_of(FIRST, SECOND))
    jobs = Jobs(app.state.service.storage)
    first, new = jobs.start(stream_id, "fingerprint", "adr-0019", 3, 2, 60, har_entry=2)
    assert new and first.har_entry == 2
    again, new = jobs.start(stream_id, "fingerprint", "adr-0019", 3, 2, 60, har_entry=2)
    assert not new and again.id == first.id  # the same entry: the job already running
    other, new = jobs.start(stream_id, "fingerprint", "adr-0019", 3, 2, 60)
    assert new and other.id != first.id and other.har_entry is None  # the default entry
    assert jobs.running(stream_id, "fingerprint", "adr-0019", 2) == first
    assert jobs.running(stream_id, "fingerprint", "adr-0019") == other


def test_report_step_links_open_the_entry_reported(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "links.sqlite3"), public_url="https://sv.example")
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": har_of(FIRST, SECOND)}).json()["id"]
        text = client.get(f"/s/{stream_id}/report.md?har_entry=2").text
    assert f"(https://sv.example/s/{stream_id}?step=1&har_entry=2)" in text
    path = tmp_path / "two.har"
    path.write_text(har_of(FIRST, SECOND), encoding="utf-8")
    public = f"https://sv.example/s/{stream_id}"
    cli = CliRunner().invoke(
        main, ["report", str(path), "--har-entry", "2", "--public-url", public]
    )
    assert f"({public}?step=1&har_entry=2)" in cli.stdout


# Each sentence once: the headline, then the grades, then where to file.


def _answering_as_golden(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The default lenses answer what each library answered for the lens golden `name`."""
    golden = load_golden(name)
    chosen = tuple(answering(found, client) for client, found in golden["results"].items())
    monkeypatch.setattr(webapp.lenses, "default_lenses", lambda: chosen)


def _on_screen(html: str) -> str:
    """The text of the clients panel a reader sees without hovering or opening anything:
    the tables' cells, the tooltips and folded evidence left out."""
    panel = html.split('<section id="clients-matrix"', 1)[1]
    panel = re.sub(r"<table\b.*?</table>", " ", panel, flags=re.S)
    panel = re.sub(r"(<details\b[^>]*>\s*<summary>.*?</summary>).*?</details>", r"\1", panel,
                   flags=re.S)  # fmt: skip
    text = unescape(re.sub(r"<[^>]+>", " ", panel))
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize(
    "name", ["record-example", "two-calls-open", "real-tgi-241-tool-calls-object"]
)
def test_the_clients_page_says_each_sentence_once(
    monkeypatch: pytest.MonkeyPatch, client: TestClient, store: Store, name: str
) -> None:
    """The headline first, each grade's detail in the grades table, what to file under "where
    to file", the comparison above the calls: none of them said again."""
    _answering_as_golden(monkeypatch, name)
    stream_id = store(STREAMS[name])
    document = api(client, stream_id)
    html = client.get(f"/s/{stream_id}/clients").text
    prose = _on_screen(html)
    sentences = [s for s in re.split(r"(?<=[.;:])\s+", prose) if len(s) >= 30]
    repeated = {s for s in sentences if sentences.count(s) > 1}
    assert not repeated, repeated
    assert prose.count(document["verdict"]) == 1
    assert prose.index(document["verdict"]) < prose.index("Grades against what the stream means")
    assert prose.index("Grades against") < prose.index("Where to file")
    for graded in document["grades"]:
        assert graded["detail"] not in prose, graded  # in its row of the grades table only
    for party in document["file"]:
        assert prose.count(party["says"]) == 1
        assert party["says"] not in document["verdict"]
    assert prose.count(document["comparison"]) == 1
