"""Where each known party takes bug reports: one table, looked up by a party's name.

A library or gateway on a public GitHub tracker gets an `issues/new` link prefilled with a
title and the report's text (`webapp.triage.filing`). Where the repository only takes issues
through a form (blank issues turned off), the link names the form (`template`) and puts the
text in the form's field (`field`, its id); a form whose description field has no id cannot
be prefilled, so its link carries the title only and the text is pasted by hand (`prefills`).
A provider gets its support page (and its status page) where known. Each row was checked
against the repository's `.github/ISSUE_TEMPLATE/` when it was added.

A library is looked up by its package (`openai`, `ai`), a gateway or an open-source server by
a word of the party's name (`litellm`, `envoy`), a hosted provider by the model's family when
the model's name is one of its own (`gpt-4o`, `claude-...`); a model name is no proof of who
served it (another host may serve the same model), so a provider's link says whose model it
is, and a name with a host's prefix (`anthropic/claude-...`, an aggregator's) matches none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlencode

Kind = Literal["provider", "gateway", "library"]
LONGEST_URL = 8_000
"""GitHub answers 414 to much longer URLs; a link is kept under this many characters."""
CUT = "(cut here to fit a link: the whole text is on streamviz's page and in its report)"


@dataclass(frozen=True, slots=True)
class Tracker:
    """One known party: where it takes bug reports, and how its name is recognised."""

    name: str
    kind: Kind
    packages: tuple[str, ...] = ()
    """A library's packages, as a party names them (`openai 3.57.0`: `openai`)."""
    words: tuple[str, ...] = ()
    """Words of a party's name (lower case) that mean this one (a gateway, a server)."""
    models: str = ""
    """A regular expression a hosted provider's own model names match (from the start)."""
    repo: str = ""
    """`owner/name` on GitHub, when it takes issues there."""
    template: str = ""
    """The issue form to open, when blank issues are turned off or a form is the way in."""
    field: str = "body"
    """Where the text goes: `body`, or the id of the form's field; "" when none can be
    prefilled."""
    support: str = ""
    status: str = ""

    @property
    def prefills(self) -> bool:
        """Whether the link carries the text (else the title only)."""
        return bool(self.repo and self.field)

    def link(self, title: str, text: str) -> str | None:
        """The new-issue link with the title and the text; the support or status page without a
        tracker; None without either. The text is cut at a line, and says so, when the link
        would be too long."""
        if not self.repo:
            return self.support or self.status or None
        base = f"https://github.com/{self.repo}/issues/new?"
        head = {"template": self.template} if self.template else {}
        query = {**head, "title": title}
        if not self.prefills:
            return base + urlencode(query)
        lines = text.splitlines()
        for keep in range(len(lines), -1, -1):
            kept = lines[:keep]
            if keep < len(lines):
                fences = sum(1 for line in kept if line.startswith("```"))
                kept += ["```"] * (fences % 2) + [CUT]
            url = base + urlencode({**query, self.field: "\n".join(kept)})
            if len(url) <= LONGEST_URL:
                return url
        return base + urlencode(query)


TRACKERS: tuple[Tracker, ...] = (
    # Client libraries (the lenses of `webapp.lenses.pins`).
    Tracker("openai-python", "library", packages=("openai",), repo="openai/openai-python",
            template="bug_report.yml", field="what-happened"),
    Tracker("LangChain", "library", packages=("langchain-openai", "langchain-core"),
            repo="langchain-ai/langchain", template="bug-report.yml", field="description"),
    Tracker("Vercel AI SDK", "library", packages=("ai", "@ai-sdk/openai-compatible"),
            repo="vercel/ai", template="1.bug_report.yml", field=""),
    Tracker("LiteLLM", "library", packages=("litellm",), repo="BerriAI/litellm",
            template="bug_report.yml", field="what-happened"),
    Tracker("pi-ai", "library", packages=("@earendil-works/pi-ai",), repo="earendil-works/pi",
            template="bug.yml", field="description"),
    # Gateways between the application and the provider.
    Tracker("LiteLLM proxy", "gateway", words=("litellm",), repo="BerriAI/litellm",
            template="bug_report.yml", field="what-happened"),
    Tracker("Envoy AI Gateway", "gateway", words=("envoy",), repo="envoyproxy/ai-gateway"),
    Tracker("OpenRouter", "gateway", words=("openrouter",),
            status="https://status.openrouter.ai"),
    # Open-source servers (providers a user runs).
    Tracker("Ollama", "provider", words=("ollama",), repo="ollama/ollama",
            template="10_bug_report.yml", field="description"),
    # Hosted providers, by their own models' names.
    Tracker("OpenAI", "provider", models=r"(gpt-(?!oss)|o[1-9](-|$)|chatgpt-)",
            support="https://help.openai.com", status="https://status.openai.com"),
    Tracker("Anthropic", "provider", models=r"claude-",
            support="https://support.anthropic.com", status="https://status.anthropic.com"),
    Tracker("Google Gemini API", "provider", models=r"gemini-",
            support="https://discuss.ai.google.dev", status="https://aistudio.google.com/status"),
    Tracker("Mistral AI", "provider",
            models=r"(mistral-|magistral-|codestral-|ministral-|devstral-|pixtral-)",
            support="https://help.mistral.ai", status="https://status.mistral.ai"),
    Tracker("xAI", "provider", models=r"grok-", status="https://status.x.ai"),
    Tracker("DeepSeek", "provider", models=r"deepseek-(chat|reasoner)$",
            status="https://status.deepseek.com"),
)  # fmt: skip
"""Every known party. The lenses' packages must each have a row (a test says so)."""


def tracker_for(kind: str, name: str, model: str | None = None) -> Tracker | None:
    """The row for a party of `kind` named `name` (a provider: also by `model`), or None."""
    lowered = name.lower()
    for tracker in TRACKERS:
        if kind == "library" and tracker.kind == "library":
            if lowered.split(" ")[0] in tracker.packages:
                return tracker
        elif tracker.kind == kind and any(word in lowered for word in tracker.words):
            return tracker
    if kind == "provider" and model and "/" not in model:
        for tracker in TRACKERS:
            if tracker.models and re.match(tracker.models, model.lower()):
                return tracker
    return None
