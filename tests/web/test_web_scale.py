"""Long streams: a 100,000-chunk stream is assembled once and every step renders one window."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import webapp.web.backend.service
from tests.web.webkit import HX
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.backend.trace import overview
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


def test_a_full_page_draws_only_its_current_overview_column_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strip's columns are the same on every page of a view but for the current one: a
    view keeps them as drawn, so a jump to a shared step link draws one column, not 300."""
    drawn: list[int] = []
    real = overview._cell

    def counted(bucket: overview.Bucket, *args: Any) -> overview.Cell:
        drawn.append(bucket.first)
        return real(bucket, *args)

    monkeypatch.setattr(overview, "_cell", counted)
    settings = Settings(db=str(tmp_path / "long.sqlite3"), max_bytes=50_000_000)
    with TestClient(create_app(settings)) as client:
        stream_id = client.post("/api/streams", json={"text": long_stream(3_000)}).json()["id"]
        pages = {}
        for step in (10, 1_500, 2_990, 10):
            drawn.clear()
            pages.setdefault(step, []).append(client.get(f"/s/{stream_id}?step={step}").text)
            assert len(drawn) == (MAX_COLUMNS + 1 if step == 10 and len(pages) == 1 else 1)
        assert pages[10][0] == pages[10][1]
        monkeypatch.setattr(overview, "_cell", real)
        client.app.state.service.cache.discard(lambda key: True)  # type: ignore[attr-defined]
        assert client.get(f"/s/{stream_id}?step=1500").text == pages[1_500][0]
