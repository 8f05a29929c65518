"""Ids made safe to paste: each one replaced by a token, the same id always by the same token.

A repro pasted into a public tracker should not carry a provider's call ids or response ids
(they can lead back to an account's logs), yet it must still load as the same bug: the quirks
that compare ids (`repeated-id`, `shared-index`) and the client that keeps them need equal ids
to stay equal and different ones to stay different. So each distinct tool-call id becomes
`call_1`, `call_2`, ... and each distinct response id `chatcmpl-1`, ... in the order they
first appear; an empty id, a null one and one that is not a string are left as they are (they
are what `empty-id`, `bare-continuation` and `non-string-arguments` look at). Names, argument
text and everything else stay. A record that did not parse is kept as its text.

The tokens are numbered in the order the ids first appear in the stream they were `collect`ed
from (the whole stream, before it is minimised: a repro keeps the numbers its ids had there),
and `Tokens.hide` replaces the same ids, quoted as the quirks' and grades' messages quote them,
in prose written about that stream.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from webapp.core.jsoncheck import dumps
from webapp.core.records import Record

CALL = "call_"
RESPONSE = "chatcmpl-"
QUOTED = 40
"""Messages clip a quoted value longer than this (`"` + 36 characters + `...`)."""


@dataclass(slots=True)
class Tokens:
    """The ids seen so far and the token each became, by prefix."""

    made: dict[tuple[str, str], str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def token(self, prefix: str, found: Any) -> Any:
        """`found`'s token under `prefix`; `found` itself when it is not a non-empty string."""
        if not isinstance(found, str) or not found:
            return found
        key = (prefix, found)
        made = self.made.get(key)
        if made is None:
            number = self.counts[prefix] = self.counts.get(prefix, 0) + 1
            made = self.made[key] = f"{prefix}{number}"
        return made

    def hide(self, text: str) -> str:
        """`text` with each id seen, quoted (`"id"`, or clipped as messages clip it), replaced
        by its token, quoted; in one pass, so a token is never replaced in its turn."""
        quoted: dict[str, str] = {}
        for (_, found), made in self.made.items():
            quoted[f'"{found}"'] = f'"{made}"'
            if len(found) + 2 > QUOTED:
                quoted[f'"{found[: QUOTED - 4]}...'] = f'"{made}"'
        if not quoted:
            return text
        pattern = "|".join(re.escape(key) for key in sorted(quoted, key=len, reverse=True))
        return re.sub(pattern, lambda match: quoted[match.group(0)], text)


def collect(records: Sequence[Record]) -> Tokens:
    """The tokens of every id in the records, numbered in the order they first appear."""
    tokens = Tokens()
    for record in records:
        value = record.value
        if record.kind != "chunk" or not isinstance(value, dict):
            continue
        if "id" in value:
            tokens.token(RESPONSE, value["id"])
        choices = value.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            for part in _parts(choice):
                for call in part["tool_calls"]:
                    if isinstance(call, dict) and "id" in call:
                        tokens.token(CALL, call["id"])
    return tokens


def _parts(choice: Any) -> list[dict[str, Any]]:
    """A choice's delta and message that carry a `tool_calls` list."""
    if not isinstance(choice, dict):
        return []
    found = (choice.get(key) for key in ("delta", "message"))
    return [part for part in found if isinstance(part, dict)
            and isinstance(part.get("tool_calls"), list)]  # fmt: skip


def pseudonymise(records: Sequence[Record], tokens: Tokens | None = None) -> tuple[Record, ...]:
    """The records with every tool-call id and response id replaced by its token."""
    given = Tokens() if tokens is None else tokens
    return tuple(_record(record, given) for record in records)


def _record(record: Record, tokens: Tokens) -> Record:
    value = record.value
    if record.kind != "chunk" or not isinstance(value, dict):
        return record
    changed = dict(value)
    if "id" in changed:
        changed["id"] = tokens.token(RESPONSE, changed["id"])
    choices = changed.get("choices")
    if isinstance(choices, list):
        changed["choices"] = [_choice(choice, tokens) for choice in choices]
    if changed == value:
        return record
    return replace(record, value=changed, text=dumps(changed).decode("utf-8"), wrapped=None)


def _choice(choice: Any, tokens: Tokens) -> Any:
    if not isinstance(choice, dict):
        return choice
    out = dict(choice)
    for key in ("delta", "message"):
        part = out.get(key)
        if isinstance(part, dict) and isinstance(part.get("tool_calls"), list):
            out[key] = {**part, "tool_calls": [_call(call, tokens) for call in part["tool_calls"]]}
    return out


def _call(call: Any, tokens: Tokens) -> Any:
    if not isinstance(call, dict) or "id" not in call:
        return call
    return {**call, "id": tokens.token(CALL, call["id"])}
