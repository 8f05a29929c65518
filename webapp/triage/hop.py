"""A gateway's hop: what it did to the stream between the provider (A, the inner capture) and
the application (B, the outer one).

`introduced` are the quirk codes of B that A does not have (the gateway's doing), `removed`
those of A that B no longer has; the sentence says them, and whether the gateway changed what
the stream means, in words a person can check against the diff's rows: "the gateway
introduced missing-index and bare-continuation; what the stream means is unchanged", or "the
gateway changed what the stream means: get_weather's arguments lost `units`". Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webapp.core.words import count

if TYPE_CHECKING:
    from webapp.triage.diff import Diff, Pair
    from webapp.triage.values import Difference

CHANGES_SHOWN = 4
"""Changes to the meaning named in the sentence; the rest are counted."""


@dataclass(frozen=True, slots=True)
class Hop:
    """What the gateway did: the quirk codes it introduced and removed, and the sentence."""

    introduced: tuple[str, ...]
    removed: tuple[str, ...]
    sentence: str

    def to_json(self) -> dict[str, Any]:
        return {
            "introduced": list(self.introduced),
            "removed": list(self.removed),
            "sentence": self.sentence,
        }


def codes_between(inner: Sequence[str], outer: Sequence[str]) -> tuple[list[str], list[str]]:
    """(codes only in `outer`, in its order; codes only in `inner`, in its order)."""
    mine, theirs = set(inner), set(outer)
    introduced = list(dict.fromkeys(code for code in outer if code not in mine))
    removed = list(dict.fromkeys(code for code in inner if code not in theirs))
    return introduced, removed


def hop_of(found: Diff, gateway: str = "the gateway") -> Hop:
    """What `gateway` did, with A the stream it received and B the one it sent."""
    introduced, removed = codes_between(_codes(found, "a"), _codes(found, "b"))
    return Hop(tuple(introduced), tuple(removed), sentence(found, introduced, removed, gateway))


def sentence(
    found: Diff, introduced: Sequence[str], removed: Sequence[str], gateway: str = "the gateway"
) -> str:
    """The hop in one sentence (see the module docstring)."""
    tail = f"; it removed {_and(removed)}" if removed else ""
    if found.same:
        what = _and(introduced) if introduced else "no quirk"
        return f"{gateway} introduced {what}; what the stream means is unchanged{tail}"
    changes = [change for pair in found.pairs for change in _changes(pair)]
    shown = changes[:CHANGES_SHOWN]
    if len(changes) > len(shown):
        shown.append(count(len(changes) - len(shown), "more change"))
    said = f"{gateway} changed what the stream means: {'; '.join(shown)}"
    if introduced:
        said += f"; it introduced {_and(introduced)}"
    return said + tail


def _codes(found: Diff, letter: str) -> list[str]:
    side = found.a if letter == "a" else found.b
    return [quirk.code for quirk in side.contract.quirks]


def _changes(pair: Pair) -> list[str]:
    """How the gateway changed one call's meaning, in words."""
    if pair.same:
        return []
    name = _name(pair.name)
    if pair.b is None:
        return [f"it dropped the call {name}"]
    if pair.a is None:
        return [f"it added a call {name}"]
    out = []
    for difference in pair.differences:
        if difference.more:
            out.append(f"{name}'s arguments changed in {count(difference.more, 'more place')}")
        elif difference.path == "name":
            out.append(f"{name} is named {difference.b}")
        elif difference.path == "id":
            out.append(f"{name}'s id became {difference.b}")
        elif difference.path.startswith("arguments"):
            out.append(f"{name}'s arguments {_argument(difference)}")
    return out  # what this build's client path hands over is the diff's rows' to say


def _argument(difference: Difference) -> str:
    """`lost `units``, `gained `city``, ``city` became "Lyon" (was "Paris")`."""
    key = difference.path.removeprefix("arguments").removeprefix(".")
    if not key:
        return f"became {difference.b} (were {difference.a})"
    if difference.b == "(absent)":
        return f"lost `{key}`"
    if difference.a == "(absent)":
        return f"gained `{key}`"
    return f"changed `{key}` to {difference.b} (was {difference.a})"


def _name(name: Any) -> str:
    return name if isinstance(name, str) and name else "a call with no name"


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
