"""Each lens on streams with known outcomes, against reviewed golden files; the pins agree."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.lenses.streams import STREAMS, load_golden, normal, pinned_versions, run_in_batches
from webapp.core.readers import read
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import COMPANIONS, PINS, POLICY_COLUMNS
from webapp.lenses.runner import NODE_DIR, installed_version, lens_for, run_lens

ROOT = Path(__file__).parent.parent.parent
NAMES = list(STREAMS)


@pytest.mark.parametrize("pin", PINS, ids=lambda pin: pin.client)
def test_lens_matches_its_golden_files(pin: object) -> None:
    lens = lens_for(pin)  # type: ignore[arg-type]
    assert lens.missing is None, f"{lens.missing}: run `make clients` (CI installs every lens)"
    results = run_in_batches(lens, [STREAMS[name] for name in NAMES])
    for name, result in zip(NAMES, results, strict=True):
        golden = load_golden(name)
        assert golden["versions"][lens.client] == lens.pin.version
        assert normal(result, STREAMS[name]) == golden["results"][lens.client], name


@pytest.mark.parametrize("name", NAMES)
def test_policy_columns_match_the_golden_files(name: str) -> None:
    records = read(STREAMS[name], "sse").records
    golden = load_golden(name)
    for policy in POLICY_COLUMNS:
        assert normal(policy_result(records, policy), STREAMS[name]) == golden["policies"][policy]


@pytest.mark.parametrize("name", NAMES)
def test_golden_files_were_written_by_the_pinned_versions(name: str) -> None:
    assert load_golden(name)["versions"] == pinned_versions()


def test_every_stream_has_a_golden_file_and_no_other_exists() -> None:
    found = {path.stem for path in (Path(__file__).parent / "golden").glob("*.json")}
    assert found == set(NAMES)


def test_the_installers_install_the_pinned_versions() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extra = dict(
        requirement.split("==")
        for requirement in project["project"]["optional-dependencies"]["clients"]
    )
    package = json.loads((NODE_DIR / "package.json").read_text())["dependencies"]
    for pin in PINS:
        wanted = {pin.package: pin.version, **dict(COMPANIONS[pin.client])}
        source = extra if pin.runtime == "python" else package
        for name, version in wanted.items():
            assert source.get(name) == version, (pin.client, name)
        assert installed_version(pin) == pin.version, f"{pin.client}: run `make clients`"
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())["packages"]
    for name, version in package.items():
        assert lock[f"node_modules/{name}"]["version"] == version


def test_the_records_example_in_every_column() -> None:
    """Decision 0019's case: phantoms for pi-ai and exact-key, one call for adr-0019."""
    golden = load_golden("record-example")
    columns = {**golden["results"], **golden["policies"]}
    for phantom in ("pi-ai", "exact-key"):
        calls = columns[phantom]["calls"]
        assert len(calls) == 4 and [call["name"] for call in calls[1:]] == ["", "", ""]
    (call,) = columns["adr-0019"]["calls"]
    assert json.loads(call["arguments"]) == {"query": "streaming tool calls", "limit": 5}
    assert columns["openai-python"]["status"] == "error"
    assert "NoneType" in columns["openai-python"]["error"]
    assert columns["vercel-ai"]["calls"][0]["arguments"] == call["arguments"]
    assert json.loads(columns["litellm"]["calls"][0]["arguments"]) == json.loads(call["arguments"])
    assert len(columns["langchain"]["calls"]) == 4


@pytest.mark.parametrize("pin", [pin for pin in PINS if pin.client in ("pi-ai", "vercel-ai")])
def test_a_node_lens_replies_in_full_however_long_the_reply(pin: object) -> None:
    """A reply far beyond a pipe's buffer (a call with 300 KB of arguments) is not cut off by
    the process exiting before its stdout has drained."""
    lens = lens_for(pin)  # type: ignore[arg-type]
    assert lens.missing is None, f"{lens.missing}: run `make clients` (CI installs every lens)"
    arguments = json.dumps({"data": "x" * 300_000}, separators=(",", ":"))
    header = {"index": 0, "id": "call_1", "type": "function",
              "function": {"name": "f", "arguments": ""}}  # fmt: skip
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [header]}}]},
        *(
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": arguments[at : at + 1000]}}
            ]}}]}
            for at in range(0, len(arguments), 1000)
        ),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    sse = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    [result] = run_lens(lens, [sse])
    assert result.status == "ok", result.error
    assert [call.arguments for call in result.calls] == [arguments]
