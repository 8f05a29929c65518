"""Which secrets found in pasted content to mask before storing (`webapp.core.redact.content`).

The home page shows what `scan` found, grouped by mask (every copy of one secret together, so
that ids which carried it still match), and posts back the masks the user kept with the scan's
key, so that the second scan gives the same masks. The API masks everything unless told
`"redact": "none"`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from webapp.core.redact.content import Finding, apply, hint, scan

REDACT_CHOICES = ("auto", "none")


class BadChoice(ValueError):
    """The form's answer to the preview is not one it offered."""


MAX_SHOWN = 200
"""Secrets listed on the preview at most (all of them are masked unless unticked)."""


@dataclass(frozen=True, slots=True)
class Masks:
    """Mask every secret found (`chosen` None) or those whose mask is in `chosen`."""

    key: bytes | None = None
    chosen: frozenset[str] | None = None

    def apply(self, text: str) -> tuple[str, list[str]]:
        """The text with the chosen secrets masked, and what was masked, in words."""
        findings = [
            finding
            for finding in scan(text, self.key)
            if self.chosen is None or finding.mask in self.chosen
        ]
        if not findings:
            return text, []
        return apply(text, findings), [f"{f.kind} (line {f.line})" for f in findings]


@dataclass(frozen=True, slots=True)
class Group:
    """One secret and every place it occurs: its kind, its lines, its mask."""

    kind: str
    lines: tuple[int, ...]
    mask: str
    preview: str
    found: str = ""
    """Enough of the secret to recognise it, the middle masked ("sk-pr…4kQz")."""


@dataclass(frozen=True, slots=True)
class Preview:
    """What the page shows before storing: the secrets by mask, and the scan's key (hex)."""

    groups: tuple[Group, ...]
    key: str
    more: int


def preview(text: str) -> Preview:
    """Scan with a fresh key and group the findings by mask, in order of first appearance."""
    key = secrets.token_bytes(16)
    by_mask: dict[str, list[Finding]] = {}
    for finding in scan(text, key):
        by_mask.setdefault(finding.mask, []).append(finding)
    groups = tuple(
        Group(
            found[0].kind,
            tuple(f.line for f in found),
            mask,
            found[0].preview,
            hint(text[found[0].start : found[0].end]),
        )
        for mask, found in by_mask.items()
    )
    return Preview(groups[:MAX_SHOWN], key.hex(), max(0, len(groups) - MAX_SHOWN))


def chosen_masks(decision: str, key: str, masks: list[Any]) -> Masks | None:
    """The home form's answer: "chosen" with the preview's key and the masks left ticked,
    "none" to store as is, "" before the question was asked (nothing masked yet)."""
    if decision in ("", "none"):
        return None
    if decision != "chosen":
        raise BadChoice('redact must be "chosen" or "none"')
    try:
        secret = bytes.fromhex(key)
    except ValueError as error:
        raise BadChoice("the preview's key is not valid: paste the stream again") from error
    if len(secret) != 16:
        raise BadChoice("the preview's key is not valid: paste the stream again")
    return Masks(secret, frozenset(mask for mask in masks if isinstance(mask, str)))


def parse_redact(value: object) -> Masks | None:
    """The API's `redact`: "auto" (the default) masks every secret found, "none" none."""
    if value is None or value == "" or value == "auto":
        return Masks()
    if value == "none":
        return None
    raise ValueError(f'"redact" must be one of {", ".join(REDACT_CHOICES)}')
