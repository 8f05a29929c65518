"""Pseudonymised repros: each id becomes a token, the same id the same token, and the repro
loads back with the original's fingerprint (over the real corpus and generated streams)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.test_properties import any_records
from tests.streamkit import ABSENT, chunk, frag, records, sse
from webapp.cli import main as cli
from webapp.core.readers import read
from webapp.core.records import Record
from webapp.triage.fingerprint import fingerprint
from webapp.triage.pseudonym import collect, pseudonymise
from webapp.triage.repro import repro
from webapp.triage.repro import sse as repro_sse

REAL = sorted((Path(__file__).parents[1] / "corpus" / "real").glob("*.sse"))


def _ids(found: list[Record] | tuple[Record, ...]) -> list[object]:
    return [
        call.get("id", ABSENT)
        for record in found
        if isinstance(record.value, dict)
        for choice in record.value.get("choices") or []
        for call in (choice.get("delta") or {}).get("tool_calls") or []
    ]


def test_the_same_id_becomes_the_same_token_and_others_stay() -> None:
    stream = records(
        [
            {**chunk(frag(0, "toolu_01Xy", "get_weather", '{"city":')), "id": "resp-abc"},
            {**chunk(frag(0, "toolu_01Xy", None, '"Paris"}')), "id": "resp-abc"},
            chunk(frag(1, "fc_9z", "get_time", "{}"), frag(1, "", None, "")),
            chunk(frag(2, None, "f", "{}"), frag(3, 7, "g", "{}")),
        ]
    )
    out = pseudonymise(stream)
    assert _ids(out) == ["call_1", "call_1", "call_2", "", None, 7]
    assert [r.value.get("id") for r in out if r.kind == "chunk"][:2] == ["chatcmpl-1"] * 2
    names = [c["function"] for r in out[:2] for c in r.value["choices"][0]["delta"]["tool_calls"]]
    assert names == [{"name": "get_weather", "arguments": '{"city":'},
                     {"name": None, "arguments": '"Paris"}'}]  # fmt: skip
    assert "toolu_01Xy" not in repro_sse(out) and "resp-abc" not in repro_sse(out)
    assert json.loads(out[0].text) == out[0].value  # the text is the new value's


def test_a_record_without_ids_is_kept_as_it_is() -> None:
    stream = records([chunk(frag(0, ABSENT, ABSENT, "{}"))])
    assert pseudonymise(stream) == tuple(stream)


@pytest.mark.parametrize("path", REAL, ids=[path.stem for path in REAL])
def test_a_real_stream_pseudonymised_loads_back_with_its_fingerprint(path: Path) -> None:
    original = read(path.read_text(encoding="utf-8")).records
    again = read(repro_sse(pseudonymise(original))).records
    assert fingerprint(again) == fingerprint(original)


@pytest.mark.parametrize("path", REAL, ids=[path.stem for path in REAL])
def test_a_real_streams_repro_loads_back_with_its_fingerprint(path: Path) -> None:
    original = read(path.read_text(encoding="utf-8")).records
    made = repro(original)
    assert fingerprint(read(made.text).records) == fingerprint(original)
    assert made.minimised == fingerprint(original).holds_a_bug


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_records)
def test_any_stream_pseudonymised_keeps_its_fingerprint(stream: list[Record]) -> None:
    assert fingerprint(pseudonymise(stream)) == fingerprint(stream)


_SOME_IDS = st.sampled_from([ABSENT, None, "", "a", "b", "call_1", "call_2", 5])
_FRAGMENTS = st.builds(
    frag,
    st.sampled_from([ABSENT, None, 0, 1, 2]),
    _SOME_IDS,
    st.sampled_from([ABSENT, None, "", "f", "g"]),
    st.sampled_from([ABSENT, "", "{", '"x": 1', "}", '{"a": [1]}']),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_FRAGMENTS, min_size=1, max_size=3), min_size=1, max_size=8),
       st.sampled_from(["tool_calls", "stop", None]))  # fmt: skip
def test_a_generated_repro_loads_back_with_its_fingerprint(
    pieces: list[list[dict[str, object]]], finish: str | None
) -> None:
    """Ids drawn from a few, so that they repeat, share an index, collide with the tokens."""
    values = [chunk(*fragments) for fragments in pieces]
    if finish is not None:
        values.append(chunk(finish=finish))
    original = read(sse(*values)).records
    made = repro(original, seconds=5)
    assert fingerprint(read(made.text).records) == fingerprint(original)


def test_minimise_pseudonymise_prints_the_repro(tmp_path: Path) -> None:
    path = REAL[[p.name for p in REAL].index("openrouter-novita-kimi-k2-repeated-id.sse")]
    result = CliRunner().invoke(cli, ["minimise", str(path), "--pseudonymise"])
    assert result.exit_code == 0, result.output
    printed = result.stdout
    assert printed == repro(read(path.read_text(encoding="utf-8")).records).text
    assert '"id":"call_1"' in printed and '"id":"0"' not in printed
    plain = CliRunner().invoke(cli, ["minimise", str(path)]).stdout
    assert '"id":"0"' in plain  # without the flag the ids stay


def test_ids_in_prose_are_hidden_as_quoted_and_as_clipped_in_one_pass() -> None:
    long = "toolu_" + "x" * 50
    stream = records([chunk(frag(0, "call_2", "f", "{}"), frag(1, "a", "g", "{}"),
                            frag(2, long, "h", "{}"))])  # fmt: skip
    tokens = collect(stream)
    calls = [made for made in tokens.made.values() if made.startswith("call_")]
    assert calls == ["call_1", "call_2", "call_3"]
    said = f'id "call_2" then "a", then "{long[:36]}... and a bare a and call_2'
    assert tokens.hide(said) == 'id "call_1" then "call_2", then "call_3" and a bare a and call_2'
    assert pseudonymise(stream, tokens) == pseudonymise(stream)  # the same numbering
