"""A gateway's two hops recorded by one streamviz, end to end: an application asks a fake
gateway through `/proxy/gw/v1`, the gateway asks an Anthropic-speaking fake provider through
`/proxy/provider/v1` and translates its events into chat-completions chunks the way the Envoy AI
Gateway's Bedrock translator did (no index, `null` ids on continuations). Both stores."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest

from tests.capture.fake import Fake, serving
from tests.capture.gateway import PROVIDER_SCRIPT, Gateway
from tests.capture.test_proxy import MESSAGES, WAIT, ended
from tests.lenses.fakes import answering
from webapp.settings import Settings
from webapp.web.app import create_app
from webapp.web.routes.clients import ClientJobs

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
]
PING = [b'event: ping\ndata: {"type": "ping"}\n\n']
"""A provider's stream streamviz cannot read (no event it maps to a chunk)."""


@dataclass
class Hops:
    """The fake provider, the fake gateway in front of it, one streamviz recording both."""

    fake: Fake
    gateway: Gateway
    base: str

    def ask(self) -> tuple[str, str, list[Any]]:
        """One exchange through the gateway with openai-python: (the outer capture's id, the
        inner's, the chunks the application got)."""
        client = openai.OpenAI(base_url=f"{self.base}/proxy/gw/v1", api_key="k", max_retries=0)
        response = client.chat.completions.with_raw_response.create(
            model="claude-sonnet-4-5",
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,  # type: ignore[arg-type]
        )
        outer = response.headers["streamviz-stream-id"]
        chunks = list(response.parse())
        inner = self.gateway.recorded[-1]
        ended(self, inner)  # type: ignore[arg-type]
        ended(self, outer)  # type: ignore[arg-type]
        return outer, inner, chunks

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.base}{path}", timeout=WAIT)


@pytest.fixture
def make_hops(db_url: str) -> Iterator[Callable[..., Hops]]:
    stack = ExitStack()

    def make(drop: frozenset[str] = frozenset(), script: list[bytes] | None = None) -> Hops:
        fake = Fake(script=list(PROVIDER_SCRIPT if script is None else script))
        gateway = Gateway(drop=drop)
        provider = stack.enter_context(serving(fake))
        gateway_url = stack.enter_context(serving(gateway))
        settings = Settings(db=db_url, upstreams=(f"gw={gateway_url}", f"provider={provider}"))
        app = create_app(settings)
        # one client library, faked: it hands the application no call (damaged)
        app.state.clients = ClientJobs((answering({"status": "ok", "calls": [], "error": None},
                                                  "pi-ai"),), timeout=WAIT)  # fmt: skip
        base = stack.enter_context(serving(app))
        gateway.target = f"{base}/proxy/provider/v1"
        return Hops(fake, gateway, base)

    with stack:
        yield make


def test_the_two_captures_of_one_exchange_are_linked_and_the_gateway_is_to_blame(
    make_hops: Callable[..., Hops],
) -> None:
    rig = make_hops()
    outer, inner, chunks = rig.ask()
    entries = [e for c in chunks for choice in c.choices for e in choice.delta.tool_calls or ()]
    assert entries and all(entry.index is None for entry in entries)  # as the gateway sent it
    assert rig.get(f"/api/streams/{outer}").json()["hops"] == {"inner": [inner], "outer": []}
    assert rig.get(f"/api/streams/{inner}").json()["hops"] == {"inner": [], "outer": [outer]}
    hop = rig.get(f"/api/diff?a={inner}&b={outer}").json()
    assert hop["same"] is True
    assert hop["introduced"] == ["missing-index", "bare-continuation"]
    assert hop["removed"] == []
    assert hop["hop"] == ("the gateway introduced missing-index and bare-continuation; what "
                          "the stream means is unchanged")  # fmt: skip
    assert "hop" not in rig.get(f"/api/diff?a={outer}&b={inner}").json()
    backwards = rig.get(f"/diff?a={outer}&b={inner}").text
    assert "A gateway's hop, backwards." in backwards
    assert f'href="/diff?a={inner}&amp;b={outer}' in backwards
    page = rig.get(f"/s/{outer}").text
    assert f'href="/s/{inner}"' in page and f"/diff?a={inner}&amp;b={outer}" in page
    assert "The gateway introduced" in page and "filed with the gateway" in page
    assert f'href="/s/{outer}"' in rig.get(f"/s/{inner}").text
    diff_page = rig.get(f"/diff?a={inner}&b={outer}").text
    assert "The gateway introduced missing-index and bare-continuation; what the stream " in (
        diff_page
    )
    graded = rig.get(f"/api/streams/{outer}/clients?wait=true").json()
    assert [party["kind"] for party in graded["file"]] == ["gateway"]
    assert graded["file"][0]["says"].startswith("File with the gateway (gw): a gateway bug")
    assert "pi-ai 1.6.0 hands the application wrong calls" in graded["file"][0]["says"]
    assert graded["verdict"].startswith("The gateway (gw) broke the contract")
    report = rig.get(f"/s/{outer}/report.md").text
    assert "File with the gateway (gw)" in report and "a provider bug" not in report
    assert "The gateway (gw) broke the contract" in report


def test_a_gateway_that_loses_an_argument_changed_what_the_stream_means(
    make_hops: Callable[..., Hops],
) -> None:
    rig = make_hops(drop=frozenset({', "units": ', '"celsius"'}))
    outer, inner, _ = rig.ask()
    hop = rig.get(f"/api/diff?a={inner}&b={outer}").json()
    assert hop["same"] is False
    assert hop["hop"].startswith("the gateway changed what the stream means: get_weather's "
                                 "arguments lost `units`")  # fmt: skip


def test_an_unreadable_inner_stream_says_why_and_never_fails(
    make_hops: Callable[..., Hops],
) -> None:
    rig = make_hops(script=PING)
    outer, inner, _ = rig.ask()
    assert rig.get(f"/api/streams/{outer}").json()["hops"]["inner"] == [inner]
    page = rig.get(f"/s/{outer}")
    assert page.status_code == 200
    assert "What the gateway received does not read," in page.text
    assert "no chat-completions chunk in the input" in page.text
    answer = rig.get(f"/api/diff?a={inner}&b={outer}")
    assert answer.status_code == 422
    said = answer.json()["detail"]
    assert said.startswith("Stream A, what the gateway received from the provider, does not "
                           "read, so it cannot be compared: no chat-completions chunk")  # fmt: skip
    assert rig.get(f"/diff?a={inner}&b={outer}").status_code == 422
