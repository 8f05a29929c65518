"""The one table of client libraries streamviz runs as lenses, each pinned to one version.

`pyproject.toml` (extra `clients`) and `webapp/lenses/node/package.json` install exactly these
versions; a test checks that both agree with this table, and that the golden files were
written by these versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from webapp.core.rules import Policy

Runtime = Literal["python", "node"]

INSTALL = "make clients"
"""The one command that installs every lens (pip extra `streamviz[clients]`, npm ci)."""


@dataclass(frozen=True, slots=True)
class Pin:
    """A client library: the lens name users see, the package it runs and its version."""

    client: str
    package: str
    version: str
    runtime: Runtime
    what: str
    """What the lens reports, in a few words."""


PINS: tuple[Pin, ...] = (
    Pin(
        "pi-ai",
        "@earendil-works/pi-ai",
        "1.6.0",
        "node",
        "stream() of api/openai-completions: the final message's toolCall blocks",
    ),
    Pin(
        "openai-python",
        "openai",
        "3.57.0",
        "python",
        "client.chat.completions.stream(): the final completion's tool_calls",
    ),
    Pin(
        "langchain",
        "langchain-openai",
        "1.7.4",
        "python",
        "ChatOpenAI.stream(): the summed AIMessageChunk's tool_calls and invalid_tool_calls",
    ),
    Pin(
        "vercel-ai",
        "ai",
        "7.0.173",
        "node",
        "streamText() with @ai-sdk/openai-compatible: its tool-call and error parts",
    ),
    Pin(
        "litellm",
        "litellm",
        "1.110.2",
        "python",
        "completion(stream=True) then stream_chunk_builder(): the rebuilt message's tool_calls",
    ),
)

COMPANIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "openai-python": (),
    "langchain": (("langchain-core", "1.8.3"), ("openai", "3.57.0")),
    "vercel-ai": (("@ai-sdk/openai-compatible", "3.0.92"), ("zod", "4.1.12")),
    "litellm": (("openai", "3.57.0"),),
    "pi-ai": (),
}
"""Further packages a lens runs, pinned alongside the main one."""

BY_CLIENT = {pin.client: pin for pin in PINS}
CLIENTS = tuple(pin.client for pin in PINS)
POLICY_COLUMNS: tuple[Policy, ...] = ("adr-0019", "exact-key")
"""Our own assembler's two policies, shown as two more columns."""
