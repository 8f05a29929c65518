"""DNS rebinding, TLS and framing: which Host names are answered, Secure cookies, HSTS, and
`--embed-origins '*'` refused.

A page of another site that renames itself to a local server's address (DNS rebinding) sends
`Host: its.own.name` and `Origin: http://its.own.name`: the cross-site check compared the two
and let 19 of 20 state-changing routes through. Now a Host the server is not known by gets a
400 on every route before any of them runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from starlette.routing import Match

from tests.web.webkit import CONTINUATION, post_scope
from webapp.cli import main
from webapp.proxy import guard
from webapp.proxy.guard import AllowedHosts, host_name
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.team.owners import OWNER_COOKIE
from webapp.web.http.security import embed_csp

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
REBOUND = {"Host": "evil.example", "Origin": "http://evil.example"}
"""What a rebinding page's browser sends: its own name as both Host and Origin."""


@pytest.fixture(autouse=True)
def real_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check the defaults as served: without the suite's `testserver`."""
    monkeypatch.setattr(guard, "ALWAYS_ALLOWED", guard.LOOPBACK_NAMES)


@pytest.fixture
def local(db_url: str) -> Iterator[TestClient]:
    """The app as a browser on this machine reaches it: http://localhost:8000."""
    app = create_app(Settings(db=db_url, max_bytes=50_000))
    with TestClient(app, base_url="http://localhost:8000", follow_redirects=False) as client:
        yield client


def _stored(client: TestClient) -> str:
    response = client.post("/api/streams", json={"text": CONTINUATION, "title": "t"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


STATE_CHANGING = [
    ("POST", "/streams"),
    ("POST", "/examples/continuation"),
    ("POST", "/api/streams"),
    ("DELETE", "/api/streams/{id}"),
    ("PATCH", "/api/streams/{id}"),
    ("POST", "/api/streams/{id}/notes"),
    ("PATCH", "/api/streams/{id}/notes/1"),
    ("DELETE", "/api/streams/{id}/notes/1"),
    ("POST", "/api/streams/{id}/minimise"),
    ("DELETE", "/api/jobs/1"),
    ("POST", "/s/{id}/title"),
    ("POST", "/s/{id}/delete"),
    ("POST", "/s/{id}/notes"),
    ("POST", "/s/{id}/notes/1"),
    ("POST", "/s/{id}/notes/1/delete"),
    ("POST", "/s/{id}/minimise"),
    ("POST", "/s/{id}/minimise/1/cancel"),
    ("POST", "/api/play"),
    ("POST", "/play/edit"),
    ("POST", "/play/save"),
]
"""The 20 routes that change state (the cross-site check let 19 through for a rebound page)."""


def test_every_state_changing_route_refuses_a_rebound_page(local: TestClient) -> None:
    stream_id = _stored(local)
    for method, path in STATE_CHANGING:
        url = path.format(id=stream_id)
        response = local.request(method, url, headers=REBOUND, data={"text": CONTINUATION})
        assert response.status_code == 400, (method, path, response.status_code)
        assert "--allowed-hosts" in response.text and "'evil.example'" in response.text
    assert local.get(f"/api/streams/{stream_id}").json()["title"] == "t"  # nothing changed


@pytest.mark.parametrize("path", ["/", "/s/{id}", "/api/streams/{id}/raw", "/static/app.css"])
def test_pages_and_reads_refuse_a_rebound_page_too(local: TestClient, path: str) -> None:
    stream_id = _stored(local)
    response = local.get(path.format(id=stream_id), headers=REBOUND)
    assert response.status_code == 400
    assert response.headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "localhost:8000",
        "LOCALHOST.",
        "app.localhost:3000",
        "127.0.0.1",
        "127.0.0.1:8000",
        "127.9.9.9:8000",
        "[::1]:8000",
        "[::1]",
    ],
)
def test_loopback_names_and_addresses_are_answered(local: TestClient, host: str) -> None:
    assert local.get("/", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "testserver",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
        "192.168.1.5:8000",
        "[::2]",
        "local host",
        "a@localhost",
        "",
    ],
)
def test_other_names_are_refused(local: TestClient, host: str) -> None:
    assert local.get("/", headers={"Host": host}).status_code == 400


def test_a_request_with_no_host_is_refused(db_url: str) -> None:
    app = create_app(Settings(db=db_url))
    scope = post_scope("/", [])
    scope.update(method="GET", headers=[])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def main() -> None:
        await app(scope, receive, send)  # type: ignore[arg-type]

    runner = threading.Thread(target=anyio.run, args=(main,))  # Playwright may hold a loop here
    runner.start()
    runner.join()
    assert sent[0]["status"] == 400 and b"no name (no Host)" in sent[1]["body"]


def test_the_public_url_and_allowed_hosts_are_answered(db_url: str) -> None:
    settings = Settings(
        db=db_url,
        public_url="https://streamviz.example.com/base",
        allowed_hosts=("streamviz.lan", "*.team.example", ".corp.example", "[fd00::1]"),
    )
    with TestClient(create_app(settings)) as client:
        for host in ("streamviz.example.com", "streamviz.lan:8000", "a.team.example",
                     "corp.example", "x.corp.example", "[fd00::1]:80"):  # fmt: skip
            assert client.get("/", headers={"Host": host}).status_code == 200, host
        for host in ("team.example", "example.com", "xcorp.example", "lan"):
            assert client.get("/", headers={"Host": host}).status_code == 400, host


def test_a_star_answers_every_name(db_url: str) -> None:
    with TestClient(create_app(Settings(db=db_url, allowed_hosts=("*",)))) as client:
        assert client.get("/", headers={"Host": "anything.example"}).status_code == 200


def test_host_names_are_read_like_browsers_send_them() -> None:
    assert host_name("Example.COM:8080") == "example.com"
    assert host_name("[::1]:8000") == "::1"
    assert host_name("a b") is None and host_name(None) is None and host_name(":80") is None
    assert AllowedHosts.of((), "").allows("localhost:1")
    assert not AllowedHosts.of((), "not a url").allows("evil.example")


def _cookie(response: Any) -> str:
    return next(v for k, v in response.headers.multi_items() if k == "set-cookie")


def test_the_owner_cookie_is_secure_behind_https(db_url: str) -> None:
    settings = Settings(db=db_url, public_url="https://streamviz.example.com")
    base = "https://streamviz.example.com"
    with TestClient(create_app(settings), base_url=base, follow_redirects=False) as client:
        response = client.post("/streams", data={"text": CONTINUATION})
        assert response.status_code == 303
        cookie = _cookie(response)
        assert cookie.startswith(OWNER_COOKIE) and "secure" in cookie.lower()
        assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()


def test_the_owner_cookie_is_not_secure_on_plain_http(local: TestClient) -> None:
    response = local.post("/streams", data={"text": CONTINUATION})
    assert response.status_code == 303 and "secure" not in _cookie(response).lower()


def test_hsts_is_sent_only_when_the_public_url_is_https(db_url: str, local: TestClient) -> None:
    assert "Strict-Transport-Security" not in local.get("/").headers
    settings = Settings(db=db_url, public_url="https://streamviz.example.com")
    with TestClient(create_app(settings), base_url="https://streamviz.example.com") as client:
        for path in ("/", "/api/streams", "/nope"):
            assert client.get(path).headers["Strict-Transport-Security"] == "max-age=31536000"


@pytest.mark.parametrize("origin", ["*", "https:", "http://*", "https://*/", "HTTPS:"])
def test_framing_by_every_site_is_refused(origin: str) -> None:
    with pytest.raises(ValueError, match="every site"):
        embed_csp((origin,))
    assert "https://*.example.com" in embed_csp(("https://*.example.com",))


def test_serve_refuses_embed_origins_star_with_a_message(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    result = CliRunner().invoke(main, ["serve", "--db", db, "--embed-origins", "*"])
    assert result.exit_code == 2
    assert "--embed-origins" in result.output and "every site" in result.output


def test_serve_passes_allowed_hosts_and_the_address_it_binds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: seen.update(app=app, **options))
    db = str(tmp_path / "s.sqlite3")
    for host, given, expected in [
        ("0.0.0.0", "a.lan, *.b.example", ("a.lan", "*.b.example")),
        ("10.0.0.7", "c.lan", ("c.lan", "10.0.0.7")),  # the one interface it binds
        ("127.0.0.1", "", ()),  # loopback: answered anyway
        ("::1", "", ()),
    ]:
        args = ["serve", "--db", db, "--host", host, "--allowed-hosts", given]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert seen["app"].state.settings.allowed_hosts == expected
        seen["app"].state.service.close()


def test_make_run_passes_allowed_hosts_from_its_variable() -> None:
    import subprocess

    root = Path(__file__).resolve().parents[2]
    run = ["make", "-s", "-n", "-C", str(root), "run", "ALLOWED_HOSTS=a.lan b.lan"]
    planned = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "--allowed-hosts 'a.lan b.lan'" in planned
    bare = subprocess.run(run[:-1], capture_output=True, text=True, check=True).stdout
    assert "--allowed-hosts" not in bare


def test_a_route_match_is_unchanged_for_an_allowed_host(local: TestClient) -> None:
    """The check stands in front of routing: a known name reaches every route as before."""
    stream_id = _stored(local)
    assert any(
        route.matches({"type": "http", "path": f"/s/{stream_id}", "method": "GET"})[0] is Match.FULL
        for route in local.app.routes  # type: ignore[attr-defined]
    )
    assert local.get(f"/s/{stream_id}").status_code == 200
