"""Secrets in pasted stream content and arguments: found, shown masked, masked on request.

This pass runs over any text (SSE, JSON, JSON Lines, openai-python reprs, HAR) after the
header and command pass of `webapp.core.redact`. It looks for API keys (`sk-...`, `sk-ant-...`,
`sk-proj-...`, `AIza...`, `ghp_...`, `xoxb-...`, AWS `AKIA...`), bearer tokens, JWTs, long hex
and base64 secrets, and e-mail addresses. A secret starts where a word starts (not after a
letter, a digit, `_`, `-` or a backslash), so ids such as `chatcmpl-...` and `call_...`, and
JSON escapes such as `\\u00e9`, are never taken for one. A hex or base64 run, found by its shape
alone, is no secret when it is the whole value of a member a provider fills (a chunk's `id`, a
reasoning `signature`: `webapp.core.redact.members`); a key with a known prefix is one anywhere.

Masking keeps the stream's structure and its story:
- each masked character keeps its class: a lower-case letter stays lower-case, an upper-case
  one upper-case, a digit a digit; every other character (`-`, `_`, `.`, `@`, `+`, `/`, `=`)
  stays as it is; so the JSON, its types and every string's length are unchanged;
- a recognisable prefix stays (`sk-proj-`, `AIza`, `ghp_`, `Bearer `, `AKIA`), the rest reads
  `x`/`X`/`0` except its last six letters or digits, which come from a keyed hash of the
  secret: the same secret always gets the same mask and two secrets get two masks, so ids that
  carried one still match exactly where they matched before, and nowhere else;
- the key is random per scan unless given, so a mask says nothing about the secret;
- what a reader decodes is never touched: a HAR body exported as base64 is left whole (a masked
  run in it would leave a body that no longer decodes), so secrets inside one are not masked.
A page shows `scan`'s findings and passes the ones the user kept to `apply`; findings with the
same `mask` are one secret, and should be kept or dropped together (an id used twice).
"""

from __future__ import annotations

import hashlib
import heapq
import re
import secrets
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from webapp.core.redact import is_har, redact
from webapp.core.redact.copies import splice
from webapp.core.redact.har import encoded_bodies
from webapp.core.redact.members import provider_data
from webapp.core.redact.runs import Runs

_START = r"(?:(?<![A-Za-z0-9_\\-])|(?<=\\[nrtbf]))"
"""A word start: not after a letter, digit, `_`, `-` or a backslash (but after `\\n` etc.)."""
_END = r"(?![A-Za-z0-9_-])"

_LOCAL_MOST = 64
"""An address's local part is at most 64 characters (RFC 5321). Without that bound, a run like
`a.a.a.a...` (every `a` a word start) had each start read the whole run looking for an `@`."""
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("jwt", r"(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"),
    ("api-key", r"(?P<openai>sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-|admin-)?)"
                r"[A-Za-z0-9_-]{16,}"),
    ("api-key", r"(?P<google>AIza)[0-9A-Za-z_-]{30,}"),
    ("api-key", r"(?P<github>gh[pousr]_|github_pat_)[A-Za-z0-9_]{30,}"),
    ("api-key", r"(?P<slack>xox[abprs]-)[A-Za-z0-9-]{10,}"),
    ("api-key", r"(?P<aws>AKIA|ASIA)[0-9A-Z]{16}"),
    ("bearer", r"(?P<bearer>Bearer[ \t]+)[A-Za-z0-9._~+/=-]{16,}"),
    ("email", rf"(?P<email>[A-Za-z0-9][A-Za-z0-9._%+-]{{0,{_LOCAL_MOST - 1}}}@[A-Za-z0-9-]+"
              r"(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})"),
    ("hex", r"(?P<hex>[0-9a-fA-F]{32,})"),
    ("base64", r"(?P<base64>[A-Za-z0-9+/]{40,}={0,2})"),
)  # fmt: skip
_PATTERN = re.compile(_START + "(?:" + "|".join(p for _, p in _PATTERNS) + ")" + _END)
_LOCAL = string.ascii_letters + string.digits + "._%+-"
_DOMAIN = re.compile(r"[A-Za-z0-9.-]{1,16}")
_BEARER_BEFORE = re.compile(r"Bearer[ \t]+\Z")
"""`Bearer ` right before a run (`webapp.core.redact.runs`, where a secret can be: only the
runs are read with the patterns above, which would be slow to try at every position)."""
_KINDS = {
    "jwt": "JWT",
    "openai": "API key",
    "google": "API key",
    "github": "API key",
    "slack": "API key",
    "aws": "API key",
    "bearer": "bearer token",
    "email": "e-mail address",
    "hex": "hex secret",
    "base64": "base64 secret",
}
_KEEP = frozenset({"openai", "google", "github", "slack", "aws", "bearer"})
"""The groups that are a prefix to keep; the others are the whole secret."""
_SHAPED = frozenset({"hex", "base64"})
"""The groups found by shape alone: not a secret as the value of a member that holds provider
data (`webapp.core.redact.members`), such as a chunk's `id` or a reasoning `signature`."""
_HASHED = 6
_FILL = {"lower": "x", "upper": "X", "digit": "0"}
_DIGITS = "0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True, slots=True)
class Finding:
    """One secret found: its kind, its line, its span in the text, and what replaces it."""

    kind: str
    line: int
    start: int
    end: int
    mask: str

    @property
    def preview(self) -> str:
        """The mask, clipped in the middle to 40 characters: what the page shows."""
        if len(self.mask) <= 40:
            return self.mask
        return self.mask[:24] + "…" + self.mask[-15:]

    def to_json(self) -> dict[str, Any]:
        """The finding as JSON for a page, without the secret."""
        return {
            "kind": self.kind,
            "line": self.line,
            "start": self.start,
            "end": self.end,
            "preview": self.preview,
            "mask": self.mask,
        }


HINT_HEAD = 5
HINT_TAIL = 4
"""A secret's hint keeps its first and last few characters (`hint`)."""


def hint(secret: str) -> str:
    """ "sk-pr…4kQz": enough of a secret to recognise it (its first 5 and last 4 characters),
    the middle masked; one of 12 characters or fewer shows only its first ("a…")."""
    secret = secret.strip()
    if len(secret) <= HINT_HEAD + HINT_TAIL + 3:
        return secret[:1] + "…"
    return secret[:HINT_HEAD] + "…" + secret[-HINT_TAIL:]


def scan(text: str, key: bytes | None = None) -> list[Finding]:
    """Every secret in the text, in order, with its mask (`key`: the masks' hash key)."""
    key = secrets.token_bytes(16) if key is None else key
    masks: dict[str, str | None] = {}
    taken: set[str] = set()
    findings: list[Finding] = []
    line, counted = 1, 0
    kept = _kept(text)
    for match in _matches(text):
        group = match.lastgroup
        assert group is not None
        value = match.group(0)
        if not _plausible(group, value) or kept.holds(match.start(), match.end()):
            continue
        if group in _SHAPED and provider_data(text, match.start(), match.end()):
            continue
        if value in masks:
            mask = masks[value]
        else:
            keep = len(match.group(group)) if group in _KEEP else 0
            mask = masks[value] = _mask(value, keep, key, taken)
            if mask is not None:
                taken.add(mask)  # kept as it grows: a set of all masks per new secret is n * n
        if mask is None:
            continue
        line += text.count("\n", counted, match.start())
        counted = match.start()
        findings.append(Finding(_KINDS[group], line, match.start(), match.end(), mask))
    return findings


class _Kept:
    """Spans no finding may touch, asked about in increasing order."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self._spans = spans
        self._next = 0

    def holds(self, start: int, end: int) -> bool:
        """Whether [start, end) overlaps a kept span (`start` never decreases between calls)."""
        spans = self._spans
        while self._next < len(spans) and spans[self._next][1] <= start:
            self._next += 1
        return self._next < len(spans) and spans[self._next][0] < end


def _kept(text: str) -> _Kept:
    """What the readers need as it is: a HAR's base64 bodies (masking a run in one would leave
    a body that no longer decodes, and the stream with no fragment)."""
    if '"base64"' not in text or not is_har(text):
        return _Kept([])
    return _Kept(encoded_bodies(text))


def apply(text: str, findings: Iterable[Finding]) -> str:
    """The text with each finding's span replaced by its mask (the same length)."""
    chosen = sorted(findings, key=lambda finding: finding.start)
    return splice(text, [(f.start, f.end, f.mask) for f in chosen])


def redact_content(text: str, key: bytes | None = None) -> tuple[str, list[Finding]]:
    """Mask every secret found; return the text and the findings."""
    findings = scan(text, key)
    return (apply(text, findings) if findings else text), findings


def _matches(text: str) -> Iterator[re.Match[str]]:
    """The patterns' matches, read only in runs that can hold a secret, in order."""
    end = 0
    for match in heapq.merge(_in_runs(text), _emails(text), key=lambda match: match.start()):
        if match.start() >= end:
            end = match.end()
            yield match


def _in_runs(text: str) -> Iterator[re.Match[str]]:
    # A stream repeats its runs (`chat.completion.chunk` once per chunk: a million times in
    # a long upload): a run found clean is not read again. What the patterns find in a run
    # depends only on its text and the two characters before it (`_START` looks back that
    # far; the run's end is the search's end), unless `Bearer ` precedes it. The two and the
    # run are one key: a run starts at its stretch's first letter or digit, so no other
    # split of the same characters is a run with its two before it.
    clean: set[str] = set()
    runs = Runs(text)
    for start, end in runs:
        if start and text[start - 1] in " \t":
            before = _BEARER_BEFORE.search(text, max(0, start - 24), start)
            if before is not None:
                yield from _PATTERN.finditer(text, before.start(), end)
                continue
        key = text[max(0, start - 2) : end]
        if key in clean:
            runs.clean(start, end)
            continue
        found = False
        for match in _PATTERN.finditer(text, start, end):
            found = True
            yield match
        if not found:
            runs.clean(start, end)
            if len(clean) < _CLEAN_RUNS:
                clean.add(key)


_CLEAN_RUNS = 4096
"""Distinct clean runs remembered per scan (a stream's framing has a handful)."""


def _emails(text: str) -> Iterator[re.Match[str]]:
    """Addresses too short for a run, read around each `@`."""
    at = text.find("@")
    while at >= 0:
        before = text[max(0, at - 16) : at]
        start = at - (len(before) - len(before.rstrip(_LOCAL)))
        domain = _DOMAIN.match(text, at + 1)
        if start < at and domain is not None and domain.end() - start < 16:
            yield from _PATTERN.finditer(text, start, domain.end())
        at = text.find("@", at + 1)


def _plausible(group: str, value: str) -> bool:
    """Long hex and base64 runs count only when they mix what a random secret mixes."""
    if group == "hex":
        letters = sum(char.isalpha() for char in value)
        return letters >= 2 and len(value) - letters >= 2
    if group == "base64":
        return (
            any(c.isdigit() for c in value)
            and any(c.islower() for c in value)
            and any(c.isupper() for c in value)
            and not _identifier(value)
        )
    return True


_NAME_PARTS = re.compile(r"(?:[A-Z]?[a-z]++|[A-Z]{1,5}(?![a-z])|[0-9]{1,4}+)++")
_WORD = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")


def _identifier(value: str) -> bool:
    """Whether a run reads as a camelCase name made of words (`getS3BucketObjectsForRegion`),
    not as random base64: only words, short capital runs and short numbers, and words of three
    letters or more that hold a vowel make 70% of it. Random base64 almost always holds a `+`,
    a `/`, or a lone lower-case letter between capitals or digits, so real secrets stay
    caught."""
    if _NAME_PARTS.fullmatch(value) is None:
        return False
    spoken = sum(len(word) for word in _WORD.findall(value) if _VOWEL.search(word))
    return spoken * 10 >= len(value) * 7


def _class(char: str) -> str | None:
    if "a" <= char <= "z":
        return "lower"
    if "A" <= char <= "Z":
        return "upper"
    if "0" <= char <= "9":
        return "digit"
    return None


def _mask(value: str, keep: int, key: bytes, taken: set[str]) -> str | None:
    """Fill after the kept prefix, the last letters or digits from a keyed hash of the value.

    None when no mask is free: nothing after the prefix is a letter or digit (`sk-` and dashes
    is no key), or every mask of its shape is taken; the value is then left as it is."""
    positions = [i for i in range(keep, len(value)) if _class(value[i])]
    if not positions:
        return None
    hashed = set(positions[-_HASHED:])
    filled = list(value)
    for i in positions:
        if i not in hashed:
            filled[i] = _FILL[_class(value[i]) or "lower"]
    data = value.encode("utf-8", "surrogatepass")
    for attempt in range(_ATTEMPTS):
        digest = hashlib.blake2b(data, key=key, salt=attempt.to_bytes(16, "big")).digest()
        out = filled.copy()
        for turn, i in enumerate(positions):
            if i not in hashed:
                continue
            kind = _class(value[i])
            byte = digest[turn % len(digest)]
            letter = _LOWER[byte % 26]
            out[i] = _DIGITS[byte % 10] if kind == "digit" else (
                letter.upper() if kind == "upper" else letter)  # fmt: skip
        mask = "".join(out)
        if mask not in taken and mask != value:
            return mask
    return None


_ATTEMPTS = 100
"""Keyed hashes tried for a free mask before a value is left unmasked."""


def scrub(text: str) -> tuple[str, list[str]]:
    """Both passes: headers, curl commands and HAR members (`webapp.core.redact`), then content.

    Returns the text and what was removed, in words (`"API key (line 3)"` for content).
    """
    first = redact(text)
    masked, findings = redact_content(first.text)
    return masked, [*first.removed, *(f"{f.kind} (line {f.line})" for f in findings)]
