"""Where to file: the table of trackers, each party's link, and its text (at most 2,000
characters, over the whole corpus, with a repro that loads back as the same bug)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.streamkit import chunk, frag, records
from webapp.core.contract import read_contract
from webapp.core.readers import read
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import PINS, POLICY_COLUMNS
from webapp.lenses.results import Call, LensResult
from webapp.triage.filing import LONGEST
from webapp.triage.fingerprint import fingerprint
from webapp.triage.pseudonym import collect
from webapp.triage.repro import EXCERPT, repro
from webapp.triage.repro import LONGEST as REPRO_LONGEST
from webapp.triage.trackers import CUT, LONGEST_URL, TRACKERS, tracker_for
from webapp.triage.verdict import Party, judge, policies_verdict

ROOT = Path(__file__).parents[2]
FOLDERS = (
    ROOT / "tests" / "corpus",
    ROOT / "tests" / "corpus" / "real",
    ROOT / "webapp" / "examples",
)
CORPUS = sorted(path for folder in FOLDERS for path in folder.glob("*.sse"))


def test_every_lens_library_has_a_tracker_and_each_row_a_way_in() -> None:
    for pin in PINS:
        found = tracker_for("library", f"{pin.package} {pin.version}")
        assert found is not None and found.repo, pin.client
    github = [tracker for tracker in TRACKERS if tracker.repo]
    assert all(t.repo.count("/") == 1 and " " not in t.repo for t in github)
    assert all(t.support or t.status for t in TRACKERS if not t.repo)


@pytest.mark.parametrize(
    ("kind", "name", "model", "expected"),
    [
        ("library", "openai 3.57.0", None, "openai-python"),
        ("library", "ai 7.0.173", None, "Vercel AI SDK"),
        ("library", "streamviz's adr-0019", None, None),
        ("gateway", "LiteLLM proxy (gw)", None, "LiteLLM proxy"),
        ("gateway", "Envoy AI Gateway", None, "Envoy AI Gateway"),
        ("gateway", "the gateway (OpenRouter)", None, "OpenRouter"),
        ("gateway", "a gateway", None, None),
        ("provider", "The provider (ollama)", None, "Ollama"),
        ("provider", "The provider (gpt-4o)", "gpt-4o-2024-08-06", "OpenAI"),
        ("provider", "The provider", "o3-mini", "OpenAI"),
        ("provider", "The provider", "claude-sonnet-4-6", "Anthropic"),
        ("provider", "The provider", "gemini-2.0-flash", "Google Gemini API"),
        ("provider", "The provider", "openai/gpt-oss-120b", None),  # a host's prefix: anyone
        ("provider", "The provider", "gpt-oss-120b", None),  # open weights: served anywhere
        ("provider", "The provider", "anthropic/claude-4.5-haiku", None),
        ("provider", "The provider", "llama3.1", None),
    ],
)
def test_a_party_is_found_in_the_table_by_package_word_or_model(
    kind: str, name: str, model: str | None, expected: str | None
) -> None:
    found = tracker_for(kind, name, model)
    assert (found.name if found else None) == expected


def test_a_link_carries_the_text_in_the_forms_field_or_the_title_only() -> None:
    openai = tracker_for("library", "openai 3.57.0")
    vercel = tracker_for("library", "ai 7.0.173")
    envoy = tracker_for("gateway", "envoy")
    assert openai and vercel and envoy
    query = parse_qs(urlsplit(openai.link("T", "line 1\nline 2") or "").query)
    assert query == {"template": ["bug_report.yml"], "title": ["T"],
                     "what-happened": ["line 1\nline 2"]}  # fmt: skip
    assert parse_qs(urlsplit(vercel.link("T", "text") or "").query) == {
        "template": ["1.bug_report.yml"], "title": ["T"]}  # fmt: skip
    assert not vercel.prefills
    url = envoy.link("T", "body")
    assert url == "https://github.com/envoyproxy/ai-gateway/issues/new?title=T&body=body"


def test_a_link_too_long_for_github_is_cut_at_a_line_and_says_so() -> None:
    openai = tracker_for("library", "openai 3.57.0")
    assert openai is not None
    text = "intro\n```text\n" + "\n".join("data: " + "é" * 150 for _ in range(12)) + "\n```"
    url = openai.link("title", text) or ""
    assert len(url) <= LONGEST_URL
    body = parse_qs(urlsplit(url).query)["what-happened"][0]
    assert body.endswith("```\n" + CUT) and text.startswith(body.split("\n```\n" + CUT)[0])
    assert body.count("```") % 2 == 0  # the fence it cut into is closed


def _library_columns(stream: list) -> list[LensResult]:  # type: ignore[type-arg]
    """This build's policies, and every pinned library handing a made-up call: each one is
    damaged, so each is a party when the stream keeps the contract."""
    ours = [policy_result(stream, policy) for policy in POLICY_COLUMNS]
    made_up = (Call("x", "not_a_tool", '{"a": 1}'),)
    return [*ours, *(LensResult(pin.client, pin.version, "ok", made_up) for pin in PINS)]


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_every_partys_text_fits_and_its_repro_keeps_the_fingerprint(path: Path) -> None:
    stream = list(read(path.read_text(encoding="utf-8")).records)
    contract = read_contract(stream)
    parties: list[Party] = [
        *policies_verdict(stream).parties,
        *judge(contract, _library_columns(stream), records=stream).parties,
    ]
    original = fingerprint(stream)
    made = collect(stream).made
    ids = [found for (_, found) in made if found not in made.values()]  # not a token itself
    for party in parties:
        assert 0 < len(party.text) <= LONGEST, (party.name, len(party.text))
        for found in ids:  # pseudonymised in the prose too, not only in the repro
            assert f'"{found}"' not in party.text and (len(found) < 8 or found not in party.text)
        assert party.title and "\n" not in party.title
        assert party.url is None or len(party.url) <= LONGEST_URL
        if "```text\n" in party.text and "left out here" not in party.text:
            repro = party.text.split("```text\n", 1)[1].split("\n```", 1)[0]
            assert fingerprint(read(repro).records) == original, party.name


def test_a_party_with_long_words_and_many_quirks_still_fits() -> None:
    name = "get_" + "weather_" * 60
    stream = records(
        [
            chunk(frag(0, "", name, '{"city": "' + "Ünïcødé " * 200 + '"}'), model="m" * 300),
            chunk(frag(args="{}")),
            chunk(frag(0, "b", name, "{}"), frag(0, "c", name, "{}")),
            chunk(finish="stop"),
            chunk(finish="stop"),
        ]
    )
    verdict = policies_verdict(stream)
    assert verdict.parties
    for party in verdict.parties:
        assert len(party.text) <= LONGEST
        assert "**Repro**" in party.text


def test_a_long_streams_text_quotes_an_excerpt_and_says_so() -> None:
    opened = [chunk(frag(0, "call_secret", "f", ""))]
    pieces = [chunk(frag(args=" ")) for _ in range(REPRO_LONGEST + 500)]
    stream = records([*opened, *pieces, chunk(frag(args="{}")), chunk(finish="tool_calls")])
    made = repro(stream)
    assert len(made.records) == EXCERPT and made.left_out == len(stream) - EXCERPT
    assert not made.minimised
    [party] = policies_verdict(stream).parties or [None]  # bare continuations: the provider's
    assert party is not None and len(party.text) <= LONGEST
    assert f"its first {EXCERPT} records only, not minimised" in party.text
    assert "call_secret" not in party.text and '"id":"call_1"' in party.text
