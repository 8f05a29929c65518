"""Long streams: a 100,000-chunk stream is assembled once and every step renders one window."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import webapp.web.backend.service
from tests.web.webkit import HX
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.trace.overview import MAX_COLUMNS

CHUNKS = 100_000
HEADER = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"function":{"name":"f","arguments":"["}}]}}]}'
)
BARE = 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1,"}}]}}]}'
CLOSE = 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"2]"}}]}}]}'
FINISH = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'


def long_stream(n: int) -> str:
    return "\n\n".join([HEADER, *([BARE] * n), CLOSE, FINISH, "data: [DONE]"]) + "\n\n"


def test_a_long_stream_is_assembled_once_and_steps_cheaply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = webapp.web.backend.service.assemble

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(webapp.web.backend.service, "assemble", counted)
    settings = Settings(db=str(tmp_path / "long.sqlite3"), max_bytes=50_000_000)
    with TestClient(create_app(settings)) as client:
        small_id = client.post("/api/streams", json={"text": long_stream(8)}).json()["id"]
        assert calls == [1]  # its upload assembled it once, to index it for the library
        calls.clear()
        long_id = client.post("/api/streams", json={"text": long_stream(CHUNKS)}).json()["id"]

        page = client.get(f"/s/{long_id}?step=50000")
        assert page.status_code == 200
        assert len(re.findall(r'id="row-\d+"', page.text)) == settings.timeline_window
        assert len(page.text) < 150_000
        assert calls == [1]
        # the overview strip: a bounded number of columns, each a link to a step in its bucket
        columns = re.findall(r'<a class="oc[^"]*" href="/s/[\w-]+\?step=(\d+)&', page.text)
        assert len(columns) == MAX_COLUMNS <= 400
        assert [int(step) for step in columns][:3] == [0, 333, 666]  # 100,004 steps in 300 buckets
        assert len(re.findall(r'class="oc[^"]*\bcur\b', page.text)) == 1

        small = client.get(f"/s/{small_id}?step=5", headers=HX).text
        for step in (50_001, 99_999, CHUNKS + 3, 3, 50_000):
            partial = client.get(f"/s/{long_id}?step={step}", headers=HX)
            assert partial.status_code == 200
            assert len(partial.text) < 3 * len(small)  # one step's worth, whatever the length
        rows = client.get(f"/s/{long_id}/timeline?step=99999", headers=HX).text
        assert len(re.findall(r'id="row-\d+"', rows)) == settings.timeline_window
        # neither was assembled again: the long one's view and the small one's were kept from
        # their uploads (re-assembling the long one would take seconds)
        assert calls == [1]
