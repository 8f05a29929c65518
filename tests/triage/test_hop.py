"""The hop diff: what a gateway introduced, removed, and whether it changed the meaning."""

from __future__ import annotations

from tests.capture.gateway import PROVIDER_SCRIPT, translate
from webapp.core.readers import read
from webapp.triage.diff import diff
from webapp.triage.hop import codes_between
from webapp.triage.sides import Side, side


def _side(pieces: list[bytes], label: str) -> Side:
    return side(read(b"".join(pieces).decode()), label=label)


INNER = _side(PROVIDER_SCRIPT, "provider")


def test_a_gateway_that_only_breaks_the_contract_introduced_its_quirks() -> None:
    found = diff(INNER, _side(translate(PROVIDER_SCRIPT), "gateway"), hop="the gateway")
    assert found.same
    document = found.to_json()
    assert document["introduced"] == ["missing-index", "bare-continuation"]
    assert document["removed"] == []
    assert document["hop"] == (
        "the gateway introduced missing-index and bare-continuation; what the stream means "
        "is unchanged"
    )


def test_a_gateway_that_loses_a_piece_changed_what_the_stream_means() -> None:
    lossy = translate(PROVIDER_SCRIPT, drop=frozenset({', "units": ', '"celsius"'}))
    found = diff(INNER, _side(lossy, "gateway"), hop="the gateway")
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
    assert document["hop"] == ("gw introduced no quirk; what the stream means is unchanged; "
                               "it removed missing-index and bare-continuation")  # fmt: skip


def test_a_diff_that_is_no_hop_says_nothing_of_one() -> None:
    document = diff(INNER, _side(translate(PROVIDER_SCRIPT), "other")).to_json()
    assert not {"introduced", "removed", "hop"} & set(document)


def test_codes_keep_the_order_they_were_found_in() -> None:
    assert codes_between(["a", "b"], ["c", "a", "d", "c"]) == (["c", "d"], ["b"])
