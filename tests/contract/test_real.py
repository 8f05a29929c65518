"""Real recordings with a documented public origin (tests/corpus/real/ORIGINS.md): the quirks
this build finds in each, and what the stream means."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from webapp.core.contract import read_contract
from webapp.core.readers import read

REAL = Path(__file__).resolve().parent.parent / "corpus" / "real"

EXPECTED: dict[str, set[str]] = {
    "alibaba-qwen3max-empty-id.sse": {"empty-id"},
    "anthropic-compat-fallback-index1.sse": {"index-not-from-zero"},
    "avian-kimi-k25-reasoning-tool.sse": {"repeated-finish"},
    "azure-deepseek-v4pro-hex-id-text.sse": set(),
    "azure-gpt5mini-prompt-filter-tool.sse": set(),
    "crusoe-llama33-token-ids-text.sse": set(),
    "deepseek-reasoner-reasoning-tool.sse": set(),
    "gemini-openai-compat-noindex-emptyid-stop.sse": {
        "missing-index",
        "empty-id",
        "stop-with-calls",
    },
    "groq-gptoss120b-midstream-error.sse": {"no-finish"},
    "groq-kimi-k2-parallel-wholecalls.sse": set(),
    "groq-llama33-wholecall.sse": set(),
    "llamacpp-gptoss20b-reasoning-tool.sse": set(),
    "mistral-large-parallel-noindex.sse": {"missing-index"},
    "mistral-magistral-content-array-text.sse": set(),
    "mistral-small-wholecall-noindex.sse": {"missing-index"},
    "mistral-zai-glm52-incremental.sse": {"empty-name"},
    "ollama-llama31-noindex-stop.sse": {"missing-index", "stop-with-calls"},
    "openai-gpt4o-forced-tool-stop.sse": {"stop-with-calls"},
    "openai-gpt4o-parallel-obfuscation.sse": set(),
    "openrouter-claude45haiku-parallel.sse": {"repeated-finish"},
    "openrouter-claude45haiku-reasoning-tool.sse": {"repeated-finish"},
    "openrouter-claude45sonnet-signature-text.sse": set(),
    "openrouter-gemini31-encrypted-parallel.sse": {"repeated-finish"},
    "openrouter-glm5turbo-reasoning-tool.sse": {"repeated-finish"},
    "openrouter-gpt54nano-tool.sse": {"repeated-finish"},
    "openrouter-grok4-encrypted-reasoning-text.sse": set(),
    "openrouter-grok41fast-encrypted-tool.sse": {"repeated-finish"},
    "openrouter-novita-kimi-k2-repeated-id.sse": {"repeated-id", "repeated-name", "no-finish"},
    "snowflake-cortex-claude-no-finish.sse": {"no-finish"},
    "tgi-241-tool-calls-object.sse": {"non-string-arguments"},
    "vercel-gateway-claude-sonnet4-signature-tool.sse": set(),
    "vercel-gateway-gemini3pro-encrypted-tool.sse": set(),
    "xai-grok3mini-reasoning-wholecall.sse": set(),
    "xai-grok4fast-parallel-wholecalls.sse": set(),
    "xai-grokcodefast-reasoning-wholecall.sse": set(),
    "zai-glm47flash-reasoning-wholecall.sse": set(),
}


def contract_of(name: str) -> Any:
    return read_contract(read((REAL / name).read_text(encoding="utf-8")).records)


def test_every_recording_is_here_with_its_origin() -> None:
    files = {path.name for path in REAL.glob("*.sse")}
    assert files == set(EXPECTED)
    origins = (REAL / "ORIGINS.md").read_text(encoding="utf-8")
    for name, codes in EXPECTED.items():
        (row,) = [line for line in origins.splitlines() if line.startswith(f"| `{name}` |")]
        digest = hashlib.sha256((REAL / name).read_bytes()).hexdigest()[:12]
        assert digest in row, f"{name}: the row's sha256 prefix is the file's"
        listed = set(re.findall(r"`([a-z-]+)`", row.rsplit("|", 2)[-2]))
        assert listed == codes, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_quirks_of_each_recording(name: str) -> None:
    assert contract_of(name).codes == EXPECTED[name]


def test_openai_itself_ends_a_forced_tool_call_with_stop_and_that_is_harmless() -> None:
    contract = contract_of("openai-gpt4o-forced-tool-stop.sse")
    (found,) = contract.quirks
    assert (found.code, found.harm) == ("stop-with-calls", "none")
    assert contract.intended is not None
    (call,) = contract.intended.calls
    assert call.name == "plus" and json.loads(call.arguments) == {"a": 2, "b": 3}


def test_openrouter_repeats_finish_reason_harmlessly() -> None:
    (found,) = contract_of("openrouter-claude45haiku-reasoning-tool.sse").quirks
    assert (found.code, found.harm, len(found.steps)) == ("repeated-finish", "none", 2)


def test_what_the_recordings_mean() -> None:
    mistral = contract_of("mistral-large-parallel-noindex.sse").intended
    assert mistral is not None and [c.name for c in mistral.calls] == ["plus", "minus"]
    kimi = contract_of("openrouter-novita-kimi-k2-repeated-id.sse").intended
    assert kimi is not None and [(c.id, c.name, c.arguments) for c in kimi.calls] == [
        ("0", "llm_version", "{}")
    ]
    gemini = contract_of("gemini-openai-compat-noindex-emptyid-stop.sse")
    assert gemini.intended is not None and gemini.intended.calls[0].id is None
    assert {found.code: found.harm for found in gemini.quirks}["empty-id"] == "silent"
    tgi = contract_of("tgi-241-tool-calls-object.sse")
    assert tgi.intended is not None and tgi.intended.calls == ()


def test_what_the_recordings_of_issue_31_mean() -> None:
    calls = {
        "mistral-small-wholecall-noindex.sse": [("weather", {"location": "San Francisco"})],
        "deepseek-reasoner-reasoning-tool.sse": [("weather", {"location": "San Francisco"})],
        "openrouter-gemini31-encrypted-parallel.sse": [
            ("add", {"a": 2, "b": 3}),
            ("multiply", {"a": 2, "b": 3}),
        ],
        "xai-grok4fast-parallel-wholecalls.sse": [
            ("add", {"a": 2, "b": 3}),
            ("multiply", {"a": 2, "b": 3}),
        ],
        "vercel-gateway-gemini3pro-encrypted-tool.sse": [
            ("weather", {"location": "Florence, Italy"})
        ],
        "azure-deepseek-v4pro-hex-id-text.sse": [],
        "mistral-magistral-content-array-text.sse": [],
    }
    for name, expected in calls.items():
        intended = contract_of(name).intended
        assert intended is not None, name
        assert [(c.name, json.loads(c.arguments)) for c in intended.calls] == expected, name
    (found,) = contract_of("mistral-small-wholecall-noindex.sse").quirks
    assert (found.code, found.count) == ("missing-index", 1)
