"""A HAR file's page: each entry's anomalies and quirks in the picker, and a URL that names no
entry opening on the first broken one (the API and the CLI keep the reader's default)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.streamkit import chunk, frag, har_of, sse
from tests.web.webkit import Store
from webapp.core.options import Options
from webapp.web.backend.memory.inflight import Busy
from webapp.web.views.entries import COUNTED, Tally

CLEAN = sse(
    chunk(frag(0, "call_1", "get_weather", '{"city": "Paris"}')), chunk(finish="tool_calls")
)
BROKEN = sse(chunk(frag(0, "c", "f", "{}")), chunk(frag(7, args="x")), chunk(finish="stop"))
"""A second value glued to a complete one: an error-level anomaly, and quirks."""
QUIRKY = Path("tests/corpus/no-index.sse").read_text(encoding="utf-8")
"""No index, no id, no name on the pieces: quirks, no anomaly under adr-0019."""


def picker(page: Any) -> list[tuple[int, bool, Tally | None]]:
    return [(e.number, e.on, e.tally) for e in page.context["entries"].links]


def test_a_har_opens_on_its_first_broken_entry_and_counts_each(
    client: TestClient, store: Store
) -> None:
    stream_id = store(har_of(CLEAN, BROKEN, QUIRKY))
    page = client.get(f"/s/{stream_id}")
    assert page.status_code == 200
    assert page.context["links"].har_entry == 2  # every link of the page names it
    assert page.context["summary"].anomalies == (("invalid-arguments", 1),)
    assert picker(page) == [
        (1, False, Tally()),
        (2, True, Tally(errors=1, quirks=3)),
        (3, False, Tally(quirks=2)),
    ]
    opened = "Showing entry 2, the first of the 3 event streams with errors; entry 1 is clean."
    assert page.context["entries"].opened == opened
    nav = page.text.split('id="entries"', 1)[1].split("</nav>", 1)[0]
    assert opened in nav and ">clean</span>" in nav
    assert '<span class="chip anomaly sev-error">1 error</span>' in nav
    assert '<span class="chip quirk">3 quirks</span>' in nav
    assert '<span class="chip quirk">2 quirks</span>' in nav
    assert f'href="/s/{stream_id}/report.md?policy=adr-0019&amp;har_entry=2"' in page.text
    step = client.get(f"/s/{stream_id}?step=1")  # a step of the URL without an entry: the same
    assert step.context["links"].har_entry == 2
    # the URL that names an entry shows it, and does not say why
    named = client.get(f"/s/{stream_id}?har_entry=1")
    assert named.context["summary"].anomalies == ()
    assert [on for _, on, _ in picker(named)] == [True, False, False]
    assert named.context["entries"].opened == "" and "Showing entry" not in named.text
    # the API and the reader keep their default: the first chat/completions entry
    trace = client.get(f"/api/streams/{stream_id}/trace").json()
    assert trace["input"]["meta"]["entry"] == 1


def test_without_an_error_the_first_entry_with_a_quirk_opens(
    client: TestClient, store: Store
) -> None:
    page = client.get(f"/s/{store(har_of(CLEAN, CLEAN, QUIRKY))}")
    assert [on for _, on, _ in picker(page)] == [False, False, True]
    assert page.context["entries"].opened == (
        "Showing entry 3, the first of the 3 event streams with anomalies or quirks; "
        "entry 1 and entry 2 are clean."
    )


def test_errors_come_before_quirks_and_what_was_passed_over_is_said(
    client: TestClient, store: Store
) -> None:
    page = client.get(f"/s/{store(har_of(CLEAN, QUIRKY, BROKEN))}")
    assert [on for _, on, _ in picker(page)] == [False, False, True]
    assert page.context["entries"].opened == (
        "Showing entry 3, the first of the 3 event streams with errors; "
        "entry 1 and entry 2 have no errors."
    )


def test_a_har_of_clean_entries_opens_as_before(client: TestClient, store: Store) -> None:
    page = client.get(f"/s/{store(har_of(CLEAN, CLEAN))}")
    assert page.context["links"].har_entry is None
    assert picker(page) == [(1, True, Tally()), (2, False, Tally())]
    assert page.context["entries"].opened == ""


def test_an_entry_without_a_body_is_listed_not_counted_nor_opened(
    client: TestClient, store: Store
) -> None:
    har = json.loads(har_of(CLEAN, BROKEN, BROKEN))
    del har["log"]["entries"][1]["response"]["content"]["text"]  # not saved by the browser
    page = client.get(f"/s/{store(json.dumps(har))}")
    found = picker(page)
    assert found[1] == (2, False, Tally(unread="no response body saved"))
    assert found[2] == (3, True, Tally(errors=1, quirks=3))
    assert page.context["entries"].opened == (
        "Showing entry 3, the first of the 3 event streams with errors; entry 1 is clean."
    )
    assert "(no response body saved)" in page.text


def test_past_the_first_entries_they_are_listed_not_counted(
    client: TestClient, store: Store
) -> None:
    stream_id = store(har_of(*[CLEAN] * COUNTED, BROKEN, BROKEN), title="many")
    page = client.get(f"/s/{stream_id}")
    entries = page.context["entries"]
    assert entries.uncounted == 2 and len(entries.links) == COUNTED + 2
    assert [link.tally for link in entries.links[COUNTED:]] == [None, None]
    assert page.context["links"].har_entry is None  # nothing counted is broken
    assert "2 more entries not counted" in page.text and "not counted</span>" in page.text
    # one picked is read and shown, and its own counts are not made up
    picked = client.get(f"/s/{stream_id}?har_entry={COUNTED + 1}")
    assert picked.context["summary"].anomalies == (("invalid-arguments", 1),)


def test_the_counts_are_made_once_per_stream_and_options(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = store(har_of(CLEAN, BROKEN, QUIRKY))
    app: Any = client.app
    service = app.state.service
    assert client.get(f"/s/{stream_id}").context["links"].har_entry == 2
    asked: list[tuple[str, int | None]] = []
    view = service.view

    def counted(stream: str, options: Options, har_entry: int | None = None) -> Any:
        asked.append((options.policy, har_entry))
        return view(stream, options, har_entry)

    monkeypatch.setattr(service, "view", counted)
    service.cache.discard(lambda key: key[0] == "trace")  # the views go; the counts stay
    again = client.get(f"/s/{stream_id}")
    assert again.context["links"].har_entry == 2
    assert {entry for _, entry in asked} == {None, 2}  # entry 3 was not read again to count it
    asked.clear()
    exact = client.get(f"/s/{stream_id}?policy=exact-key")  # counted under its own options
    assert exact.context["links"].har_entry == 2
    assert {entry for _, entry in asked} == {None, 2, 3}


def test_an_entry_that_does_not_read_or_waits_on_a_busy_server_costs_only_itself(
    client: TestClient, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream_id = store(har_of(CLEAN, "data: {}\n\n", BROKEN, QUIRKY))
    app: Any = client.app
    service = app.state.service
    view = service.view

    def busy_on_4(stream: str, options: Options, har_entry: int | None = None) -> Any:
        if har_entry == 4:
            raise Busy(60)
        return view(stream, options, har_entry)

    monkeypatch.setattr(service, "view", busy_on_4)
    page = client.get(f"/s/{stream_id}")
    assert page.status_code == 200 and page.context["links"].har_entry == 3
    found = picker(page)
    assert found[1] == (2, False, Tally(unread="does not read: pick it to see why"))
    assert found[3] == (4, False, None)  # not counted now
    assert "1 more entry not counted" in page.text
    monkeypatch.setattr(service, "view", view)
    again = client.get(f"/s/{stream_id}")  # counted once the server has room
    assert picker(again)[3] == (4, False, Tally(quirks=2))
