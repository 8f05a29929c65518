"""What a fresh page view costs: one reading of the stream and one assembly, however it came.

Counters wrap the core's entry points wherever the package holds them: `read` and
`read_plain` (a whole stream read, from its text or a plain stream's bytes), `read_sse` called
on its own (one record read again from its lines) and
`assemble`. A pasted stream is read once when stored; its first page assembles once from
that reading and shows its step's record from it too. The Minimise choices (which need the
other policy's trace) are made when their form is opened, from the same reading.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

import webapp.core.assembler
import webapp.core.readers
import webapp.core.readers.sse
from tests.web.webkit import CONTINUATION, HX
from webapp.settings import Settings
from webapp.web.app import create_app

JSONL = (
    '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":'
    '{"name":"f","arguments":"{}"}}]}}]}\n[DONE]\n'
)


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts of reads, record reads and assemblies, from every module that holds them."""
    counts: Counter[str] = Counter()
    depth = [0]

    def counted(name: str, real: Callable[..., Any], nested: bool) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            outer = not (nested and depth[0])
            depth[0] += 1
            try:
                found = real(*args, **kwargs)
            finally:
                depth[0] -= 1
            if outer and (found is not None or real is not read_plain):
                counts[name] += 1  # `read_plain` reads only what it returns (else `read` does)
            return found

        return call

    read_plain = webapp.core.readers.read_plain
    entry_points = [
        (webapp.core.readers, "read", "reads", False),
        (webapp.core.readers, "read_plain", "reads", False),
        (webapp.core.readers.sse, "read_sse", "record reads", True),
        (webapp.core.assembler, "assemble", "assemblies", False),
    ]
    for module, attribute, name, nested in entry_points:
        real = getattr(module, attribute)
        wrapper = counted(name, real, nested)
        for holder in list(sys.modules.values()):
            if getattr(holder, "__name__", "").startswith("webapp") and (
                getattr(holder, attribute, None) is real
            ):
                monkeypatch.setattr(holder, attribute, wrapper)
    yield counts


def _cost(counts: Counter[str]) -> dict[str, int]:
    found = {name: counts[name] for name in ("reads", "record reads", "assemblies")}
    counts.clear()
    return found


ONCE = {"reads": 1, "record reads": 0, "assemblies": 1}


def test_a_pasted_stream_is_read_once_and_assembled_once(
    client: TestClient, work: Counter[str]
) -> None:
    stored = client.post("/streams", data={"text": CONTINUATION, "title": "t"})
    assert stored.status_code == 303
    page = client.get(stored.headers["location"])
    assert page.status_code == 200 and 'id="detail"' in page.text
    assert _cost(work) == ONCE
    assert client.get(stored.headers["location"]).status_code == 200
    assert _cost(work) == {"reads": 0, "record reads": 0, "assemblies": 0}  # cached


@pytest.mark.parametrize("text", [CONTINUATION, JSONL], ids=["sse", "jsonl"])
def test_a_stream_stored_through_the_api_costs_the_same(
    client: TestClient, work: Counter[str], text: str
) -> None:
    stream_id = client.post("/api/streams", json={"text": text}).json()["id"]
    for step in (0, 1):
        assert client.get(f"/s/{stream_id}?step={step}").status_code == 200
    assert _cost(work) == ONCE


def test_opening_the_minimise_form_assembles_the_other_policy_only(
    client: TestClient, work: Counter[str]
) -> None:
    stream_id = client.post("/api/streams", json={"text": CONTINUATION}).json()["id"]
    page = client.get(f"/s/{stream_id}").text
    assert _cost(work) == ONCE
    url = re.search(r'id="minimise-open" href="([^"]+)"', page)
    assert url
    form = client.get(url.group(1).replace("&amp;", "&"), headers=HX)
    assert form.status_code == 200 and 'value="exact-key anomaly:phantom-call"' in form.text
    assert _cost(work) == {"reads": 0, "record reads": 0, "assemblies": 1}


def test_a_worker_that_did_not_store_the_stream_reads_it_once(
    settings: Settings, client: TestClient, work: Counter[str]
) -> None:
    stream_id = client.post("/api/streams", json={"text": CONTINUATION}).json()["id"]
    _cost(work)
    with TestClient(create_app(settings)) as other:  # another worker: nothing cached
        assert other.get(f"/s/{stream_id}?step=2").status_code == 200
    assert _cost(work) == ONCE
