"""How to assemble a stream: the policy, the path, the server tools, the choice to follow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webapp.rules import Policy
from webapp.trace import AssemblyPath


@dataclass(frozen=True, slots=True)
class Options:
    """How to assemble: the policy, the path, the server tools, and the choice to follow."""

    policy: Policy = "adr-0019"
    path: AssemblyPath = "client"
    server_tools: tuple[str, ...] = ()
    """Exact tool names, or prefixes ending in `*` such as `openrouter:*`."""
    choice: int = 0

    def is_server_tool(self, name: Any) -> bool:
        """Whether a folded candidate with this name is a server-tool call."""
        if not isinstance(name, str) or not name:
            return False  # a nameless candidate is nobody's server tool, whatever the pattern
        return any(
            name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern
            for pattern in self.server_tools
        )
