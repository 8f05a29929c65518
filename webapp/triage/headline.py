"""The verdict at a glance: who broke the contract and which clients it hurt, in at most 400
characters.

The headline names the party at fault (the provider and its quirk codes, a client library,
nobody, or nobody because the finish_reason says what cut the last call; or says that the
stream's end was not recorded, so that nothing is judged on it), then
every column's grade by name: `Damaged silently: pi-ai, langchain. Flagged: openai-python.`
What each client gets is its grade's detail, the evidence is in its party's lines to paste
(`webapp.triage.verdict`): the headline repeats neither. It is what the clients page shows
first, what `streamviz clients` and report.md print, and the JSON's `verdict`.

`HEADLINE` is a hard bound: what the stream controls (the model's name, the list of quirk codes)
is clipped or counted to fit, and the whole is clipped last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from webapp.core.contract import Contract

if TYPE_CHECKING:
    from webapp.triage.verdict import Graded, Party

HEADLINE = 400
"""The most characters a headline holds."""
NAME_SHOWN = 60
"""A model's name is clipped to this many characters."""
MESSAGE_SHOWN = 60
"""Why the end was not recorded is clipped to this many characters (a provider's error is
not quoted: its party to file with says it)."""
BUILD_COLUMNS = ("adr-0019", "exact-key")
GROUPS = (
    ("damaged", "Damaged silently"),
    ("flagged", "Flagged"),
    ("guessed", "Guessed"),
    ("intact", "Intact"),
)


def headline(
    contract: Contract,
    grades: Sequence[Graded],
    parties: Sequence[Party],
    provider: str | None,
    gateway: str | None = None,
) -> str:
    """Who broke the contract, then each grade's clients; never more than `HEADLINE`.
    `gateway` ("The gateway (gw)") names who made the quirks when a gateway made them all."""
    graded = _graded(grades)
    room = HEADLINE - len(graded) - (1 if graded else 0)
    who = _who(contract, grades, parties, provider, room, gateway)
    return fit(f"{who} {graded}" if graded else who)


def fit(text: str, limit: int = HEADLINE) -> str:
    """The text, clipped to `limit` characters with `…`."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _who(
    contract: Contract,
    grades: Sequence[Graded],
    parties: Sequence[Party],
    provider: str | None,
    room: int,
    gateway: str | None = None,
) -> str:
    """The first sentence: the party at fault, or nobody, or the end missing."""
    name = f"The provider ({fit(provider, NAME_SHOWN)})" if provider else "The provider"
    if gateway is not None and contract.quirks:
        name = gateway
    if contract.end is not None:
        return (f"The stream's end was not recorded ({fit(contract.end, MESSAGE_SHOWN)}): "
                "nothing is judged on how it ends, and nothing is filed.")  # fmt: skip
    if (stopped := contract.only_stopped) is not None:
        return (f"Nobody broke the contract: {fit(stopped, room - 50)}; nothing is "
                "filed.")  # fmt: skip
    ran = [g for g in grades if g.grade is not None]
    gateway = next((party.name for party in parties if party.kind == "gateway"), None)
    if gateway is not None:  # the stream came through a gateway that broke it
        both = any(party.kind == "provider" for party in parties)
        head = f"{gateway} and {name[0].lower()}{name[1:]}" if both else gateway
        head += " broke the contract: "
        tail = "." if both else "; the provider's stream it received keeps it."
        return head + _listed(_codes(contract), room - len(head) - len(tail)) + tail
    if any(party.kind == "provider" for party in parties):
        failed = contract.error is not None
        head = f"{name} broke the contract" + (": it ended the stream with an error" if failed
                                               else "")  # fmt: skip
        tail = "; the stream admits more than one reading." if contract.intended is None else "."
        codes = _codes(contract)
        if not codes:
            return head + tail
        joint = "; quirks: " if failed else ": "
        return head + joint + _listed(codes, room - len(head) - len(joint) - len(tail)) + tail
    if contract.quirks:
        codes = _codes(contract)
        head = f"{name} departs from the contract only in ways "
        head += "every client here reads intact: " if ran else "that do no harm: "
        return head + _listed(codes, room - len(head) - 18) + "; nothing to file."
    if parties:
        hurt = [g for g in ran if g.grade != "intact" and g.client != "exact-key"]
        return f"{name} keeps the contract: {_bugs(hurt)}."
    if not ran:
        return f"{name} keeps the contract: no quirk (no client was run)."
    return (f"Nobody broke the contract: {name[0].lower()}{name[1:]} keeps it, and every client "
            "that ran reads the stream as it means.")  # fmt: skip


def _bugs(hurt: Sequence[Graded]) -> str:
    """`a client bug in pi-ai and litellm`, `a bug in this build's adr-0019`."""
    libraries = [g.client for g in hurt if g.client not in BUILD_COLUMNS]
    ours = [g.client for g in hurt if g.client in BUILD_COLUMNS]
    said = []
    if libraries:
        said.append(f"a client bug in {_and(libraries)}")
    if ours:
        said.append(f"a bug in this build's {_and(ours)}")
    return ", and ".join(said)


def _graded(grades: Sequence[Graded]) -> str:
    """`Damaged silently: pi-ai, langchain. Flagged: openai-python. Not run: litellm.` (a
    client not run because the stream is another API's own is said apart: no install helps)"""
    parts = []
    for grade, head in GROUPS:
        names = [g.client for g in grades if g.grade == grade]
        if names:
            parts.append(f"{head}: {', '.join(names)}.")
    absent = [g.client for g in grades if g.grade is None and not (g.limited or g.skipped)]
    if absent:
        parts.append(f"Not run: {', '.join(absent)}.")
    other = [g.client for g in grades if g.grade is None and g.skipped]
    if other:
        parts.append(f"Not run on another API's stream: {', '.join(other)}.")
    stopped = [g.client for g in grades if g.grade is None and g.limited]
    if stopped:
        parts.append(f"Not graded (a limit): {', '.join(stopped)}.")
    return " ".join(parts)


def _codes(contract: Contract) -> list[str]:
    """The quirk codes found, each once, in the order found."""
    return list(dict.fromkeys(found.code for found in contract.quirks))


def _listed(codes: Sequence[str], room: int) -> str:
    """`a, b and c`, or as many as fit in `room` then `and 3 more`."""
    for shown in range(len(codes), 0, -1):
        rest = len(codes) - shown
        text = _and([*codes[:shown], f"{rest} more"]) if rest else _and(codes)
        if len(text) <= room:
            return text
    return f"{len(codes)} quirks"


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
