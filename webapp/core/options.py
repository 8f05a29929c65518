"""How to assemble a stream: the policy, the path, the server tools, the choice to follow."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from webapp.core.rules import Policy
from webapp.core.trace import AssemblyPath


@dataclass(frozen=True, slots=True)
class Options:
    """How to assemble: the policy, the path, the server tools, and the choice to follow."""

    policy: Policy = "adr-0019"
    path: AssemblyPath = "client"
    server_tools: tuple[str, ...] = ()
    """Exact tool names, or prefixes ending in `*` such as `openrouter:*`."""
    choice: int = 0

    def canonical(self) -> Options:
        """The same options with `server_tools` stripped, deduplicated and sorted (a cache key)."""
        tools = tuple(sorted({name.strip() for name in self.server_tools if name.strip()}))
        return self if tools == self.server_tools else replace(self, server_tools=tools)

    def key(self) -> str:
        """The canonical options as one stable line of text (a store key)."""
        canon = self.canonical()
        return json.dumps([canon.policy, canon.path, canon.choice, list(canon.server_tools)])

    def is_server_tool(self, name: Any) -> bool:
        """Whether a folded candidate with this name is a server-tool call."""
        if not isinstance(name, str) or not name:
            return False  # a nameless candidate is nobody's server tool, whatever the pattern
        return any(
            name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern
            for pattern in self.server_tools
        )
