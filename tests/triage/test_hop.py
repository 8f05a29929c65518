"""The hop diff: what a gateway introduced, removed, and whether it changed the meaning; the
verdict that files a gateway's own quirks with it."""

from __future__ import annotations

from tests.capture.gateway import PROVIDER_SCRIPT, translate
from webapp.core.contract import read_contract
from webapp.core.readers import read
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import POLICY_COLUMNS
from webapp.triage.diff import diff
from webapp.triage.hop import codes_between
from webapp.triage.sides import Side, side
from webapp.triage.verdict import Gateway, Verdict, judge


def _side(pieces: list[bytes], label: str) -> Side:
    return side(read(b"".join(pieces).decode()), label=label)


INNER = _side(PROVIDER_SCRIPT, "provider")


def test_a_gateway_that_only_breaks_the_contract_introduced_its_quirks() -> None:
    found = diff(INNER, _side(translate(PROVIDER_SCRIPT), "gateway"), hop="gw")
    assert found.same
    document = found.to_json()
    assert document["introduced"] == ["missing-index", "bare-continuation"]
    assert document["removed"] == []
    assert document["hop"] == (
        "the gateway introduced missing-index and bare-continuation; what the stream means "
        "is unchanged"
    )
    assert document["b"]["verdict"].startswith("The gateway (gw) broke the contract")


def test_a_gateway_that_loses_a_piece_changed_what_the_stream_means() -> None:
    lossy = translate(PROVIDER_SCRIPT, drop=frozenset({', "units": ', '"celsius"'}))
    found = diff(INNER, _side(lossy, "gateway"), hop="gw")
    assert not found.same
    assert found.hop is not None
    assert found.hop.sentence.startswith(
        "the gateway changed what the stream means: get_weather's arguments lost `units`"
    )
    assert found.hop.introduced == ("missing-index", "bare-continuation")


def test_a_gateway_that_repairs_the_provider_removed_its_quirks() -> None:
    found = diff(_side(translate(PROVIDER_SCRIPT), "provider"), INNER, hop="gw")
    document = found.to_json()
    assert document["introduced"] == []
    assert document["removed"] == ["missing-index", "bare-continuation"]
    assert document["hop"] == (
        "the gateway introduced no quirk; what the stream means is unchanged; it removed "
        "missing-index and bare-continuation"
    )


def test_a_diff_that_is_no_hop_says_nothing_of_one() -> None:
    document = diff(INNER, _side(translate(PROVIDER_SCRIPT), "other")).to_json()
    assert not {"introduced", "removed", "hop"} & set(document)


def test_codes_keep_the_order_they_were_found_in() -> None:
    assert codes_between(["a", "b"], ["c", "a", "d", "c"]) == (["c", "d"], ["b"])


OUTER = read(b"".join(translate(PROVIDER_SCRIPT)).decode())
BOTH = frozenset({"missing-index", "bare-continuation"})


def _judged(introduced: frozenset[str]) -> Verdict:
    columns = [policy_result(OUTER.records, policy) for policy in POLICY_COLUMNS]
    return judge(read_contract(OUTER.records), columns, gateway=Gateway("gw", introduced, "X1"))


def test_the_verdict_files_the_quirks_a_gateway_introduced_with_the_gateway() -> None:
    verdict = _judged(BOTH)
    assert [(party.kind, party.name) for party in verdict.parties] == [
        ("gateway", "The gateway (gw)")
    ]
    assert verdict.parties[0].says.startswith("File with the gateway (gw): a gateway bug: it ")
    assert "the provider's stream (capture X1) has none of these quirks" in (
        verdict.parties[0].evidence
    )
    assert verdict.headline.startswith(
        "The gateway (gw) broke the contract: missing-index and bare-continuation; the "
        "provider's stream it received keeps it."
    )
    assert verdict.to_json()["file"][0]["kind"] == "gateway"


def test_quirks_the_provider_sent_too_stay_the_providers() -> None:
    verdict = _judged(frozenset({"missing-index"}))
    kinds = [party.kind for party in verdict.parties]
    assert kinds == ["provider", "gateway"]
    provider, gateway = verdict.parties
    assert "bare-continuation" in provider.says and "missing-index" not in provider.says
    assert "missing-index" in gateway.says and "bare-continuation" not in gateway.says
    assert verdict.headline.startswith("The gateway (gw) and the provider (claude-sonnet-4-5) "
                                       "broke the contract")  # fmt: skip
    assert _judged(frozenset()).parties[0].kind == "provider"
