"""A gateway's two hops linked in the store, on SQLite and PostgreSQL (`webapp.storage.hops`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from webapp.storage import Storage, open_storage
from webapp.storage.capture import Captures, Facts, Part
from webapp.storage.hops import HopLinks, Hops, _last_ms

GW = Facts("gw", "POST", "/v1/chat/completions", 200, "text/event-stream", "m", True,
           ("get_weather", "get_time"))  # fmt: skip
PROVIDER = replace(GW, upstream="provider", path="/v1/messages")


def _at(second: float) -> str:
    whole, part = divmod(round(second * 1_000_000), 1_000_000)
    return f"2026-12-05T01:00:{whole:02d}.{part:06d}+00:00"


@pytest.fixture
def store(db_url: str) -> Iterator[Storage]:
    storage = open_storage(db_url)
    yield storage
    storage.close()


def _capture(
    storage: Storage,
    facts: Facts,
    start: float,
    end: float,
    owner: str = "box 1 2",
    state: str = "complete",
) -> str:
    """An ended capture whose request was sent at `start` s and whose last piece came at `end`."""
    captures = Captures(storage)
    info = captures.start(replace(facts, sent=_at(start)), title="t", format="sse", owner=owner)
    captures.append(info.id, 0, Part(b"data: 1\n\n", (9,), ((end - start) * 1000,)))
    if state != "live":
        captures.finish(info.id, state)
    return info.id


def test_the_inner_hop_is_the_capture_inside_the_outer_one(store: Storage) -> None:
    outer = _capture(store, GW, 1.0, 5.0)
    inner = _capture(store, PROVIDER, 1.2, 4.9)
    links = HopLinks(store)
    assert links.of(outer) == Hops(inner=(inner,))
    assert links.of(inner) == Hops(outer=(outer,))
    assert links.of(outer).to_json() == {"inner": [inner], "outer": []}


@pytest.mark.parametrize(
    ("why", "facts", "start", "end", "owner"),
    [
        ("sent before the outer request", PROVIDER, 0.9, 4.0, "box 1 2"),
        ("ended after the outer response", PROVIDER, 1.2, 5.1, "box 1 2"),
        ("another host's", PROVIDER, 1.2, 4.0, "other 1 2"),
        ("other tools", replace(PROVIDER, tools=("get_weather",)), 1.2, 4.0, "box 1 2"),
    ],
)
def test_a_capture_that_does_not_fit_is_no_hop(
    store: Storage, why: str, facts: Facts, start: float, end: float, owner: str
) -> None:
    outer = _capture(store, GW, 1.0, 5.0)
    other = _capture(store, facts, start, end, owner)
    assert HopLinks(store).of(outer) == Hops(), why
    assert HopLinks(store).of(other) == Hops(), why


def test_tools_are_compared_as_names_in_any_order_and_another_worker_counts(
    store: Storage,
) -> None:
    outer = _capture(store, GW, 1.0, 5.0, owner="box 10 20")
    swapped = replace(PROVIDER, tools=("get_time", "get_weather"))
    inner = _capture(store, swapped, 1.5, 4.5, owner="box 11 21")
    assert HopLinks(store).of(outer).inner == (inner,)


def test_of_several_inside_the_latest_started_is_the_hop(store: Storage) -> None:
    outer = _capture(store, GW, 1.0, 9.0)
    first = _capture(store, PROVIDER, 1.1, 3.0, state="cut by the upstream")  # a retry after it
    retried = _capture(store, PROVIDER, 3.5, 8.0)
    links = HopLinks(store)
    assert links.of(outer).inner == (retried,)
    assert links.of(first) == Hops()
    assert links.of(retried).outer == (outer,)


def test_two_gateways_in_a_row_link_each_hop_to_the_next(store: Storage) -> None:
    app = _capture(store, GW, 1.0, 9.0)
    middle = _capture(store, replace(GW, upstream="gw2"), 2.0, 8.0)
    provider = _capture(store, PROVIDER, 3.0, 7.0)
    links = HopLinks(store)
    assert links.of(app) == Hops(inner=(middle,))
    assert links.of(middle) == Hops(inner=(provider,), outer=(app,))
    assert links.of(provider) == Hops(outer=(middle,))


def test_a_live_capture_an_upload_and_an_unknown_id_have_no_hops(store: Storage) -> None:
    outer = _capture(store, GW, 1.0, 5.0, state="live")
    inner = _capture(store, PROVIDER, 1.2, 4.0)
    links = HopLinks(store)
    assert links.of(outer) == Hops() and links.of(inner) == Hops()
    uploaded = store.add(b"data: [DONE]\n\n", title="u", format="sse").id
    assert links.of(uploaded) == Hops() and links.of("nope") == Hops()


def test_a_capture_with_no_piece_ends_when_its_headers_came(store: Storage) -> None:
    outer = _capture(store, GW, 1.0, 5.0)
    captures = Captures(store)
    facts = replace(PROVIDER, sent=_at(2.0), headers_ms=100.0)
    empty = captures.start(facts, title="t", format="sse", owner="box 1 2").id
    captures.finish(empty, "complete")
    assert HopLinks(store).of(outer).inner == (empty,)
    late = captures.start(replace(facts, headers_ms=4000.0), title="t", format="sse",
                          owner="box 1 2").id  # fmt: skip
    captures.finish(late, "complete")  # its headers came after the outer's last piece
    assert HopLinks(store).of(late).outer == ()
    assert HopLinks(store).of(outer).inner == (empty,)


@pytest.mark.parametrize(
    ("text", "last"),
    [
        ('{"ends": [9, 18], "ms": [20.0, 31.5]}', 31.5),
        ('{"ends":[9,18],"ms":[20.0,1e-3]}', 0.001),  # as kept since 2026-12-05 (orjson's)
        ('{"ends": [9], "ms": [7]}', 7.0),
        ('{"ends": [], "ms": []}', None),
        ("", None),
        ('{"ends": [1], "ms": ["x"]}', None),
    ],
)
def test_the_last_arrival_is_read_from_the_tail_of_the_text(text: str, last: float | None) -> None:
    assert _last_ms(text) == last
