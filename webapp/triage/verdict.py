"""Whose fault is it: every client graded against the intended reading, and where to file.

A client (each lens, and this build's two policies) is graded by what the application receives
compared with the calls the stream means (`webapp.core.contract`), never with adr-0019's guess:

- `intact`: exactly the intended calls (names, ids where both have one, arguments equal as JSON);
- `damaged`: other calls or arguments, and nothing said (phantom calls, `{}` for broken JSON);
- `flagged`: it raised, or reported the problem on the calls that are wrong;
- `guessed`: there is no intended reading, and this is what it chose.

The headline (`webapp.triage.headline`, at most 400 characters) then says who broke the
contract (the provider and its quirk codes; with no quirk, a client that is not intact) and
every column's grade by name; each grade's detail says what that client gets, and each party
to file with (`Party`) says what to file, with the evidence ready to paste. None repeats
another. `Verdict.to_json()` is what `streamviz clients --format json` prints and what the API
returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from webapp.core.contract import QUIRK, Contract, Found, Intended, read_contract
from webapp.core.contract.quirks import CLAUSES
from webapp.core.records import Record
from webapp.core.words import count
from webapp.lenses.matrix import NOT_RAN, not_json
from webapp.lenses.matrix import same_meaning as same_arguments
from webapp.lenses.ours import policy_result
from webapp.lenses.pins import BY_CLIENT, INSTALL, POLICY_COLUMNS
from webapp.lenses.results import Call, LensResult
from webapp.lenses.runner import TIMEOUT
from webapp.triage.headline import headline

if TYPE_CHECKING:
    from webapp.lenses.matrix import Matrix
    from webapp.lenses.runner import Lens

Grade = Literal["intact", "damaged", "flagged", "guessed"]
GRADES: dict[Grade, str] = {
    "intact": "the application receives exactly the intended calls",
    "damaged": "it receives other calls or arguments and says nothing: the dangerous case",
    "flagged": "it refuses or reports the problem (raises, invalid_tool_calls, an error part)",
    "guessed": "there is no intended reading; this is what it chose",
}
BUILD = "this build"
"""The version our own policies' columns carry (`webapp.lenses.ours.VERSION`)."""
SHOWN = 60
"""Argument text is clipped to this many characters in words."""


@dataclass(frozen=True, slots=True)
class Graded:
    """One client's grade, with its version and what it did, in words."""

    client: str
    version: str
    grade: Grade | None
    """None when the client could not run (not installed)."""
    detail: str
    limited: bool = False
    """Not graded because the lens stopped at a limit streamviz sets (its memory cap), not
    because the library is missing."""
    skipped: bool = False
    """Not run: the stream is another API's own, and this client reads chat-completions
    streams (the detail names the API); no install would change that."""

    @property
    def label(self) -> str:
        """`pi-ai 1.6.0`, `adr-0019 (this build)`."""
        if self.version == BUILD:
            return f"{self.client} ({BUILD})"
        return f"{self.client} {self.version}"

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "version": self.version,
            "grade": self.grade,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Gateway:
    """The gateway a stream came through, when what it received was recorded too (its inner
    hop: `webapp.storage.hops`): its quirks that the provider's stream has not are its own."""

    name: str
    """How the server names it (its upstream's name)."""
    introduced: frozenset[str]
    """The quirk codes of the stream it sent that the stream it received has not."""
    inner: str = ""
    """Where the stream it received is (a capture's id), for the evidence."""

    @property
    def title(self) -> str:
        """ "The gateway (gw)", or "The gateway" when it has no name."""
        return f"The gateway ({self.name})" if self.name else "The gateway"


@dataclass(frozen=True, slots=True)
class Party:
    """Someone to file with: the provider, a gateway, a client library or this build, and the
    evidence."""

    kind: Literal["provider", "gateway", "library"]
    """`library`: a client library, or this build's own policy (no tracker)."""
    name: str
    says: str
    """One sentence: what to file, and which libraries it hurts (their detail is in their
    grades and in the evidence)."""
    evidence: tuple[str, ...]
    """Lines ready to paste: steps, quirks, each client's outcome with its version."""
    title: str = ""
    """A tracker issue's title (`webapp.triage.filing`)."""
    text: str = ""
    """At most 2,000 characters of Markdown to file, the repro in it when the records were
    at hand (`webapp.triage.filing`)."""
    url: str | None = None
    """The tracker's prefilled new-issue link, or the provider's support or status page."""
    tracker: str = ""
    """Where `url` leads, in words ("" when unknown)."""
    prefilled: bool = False
    """Whether `url` carries the text (else the title only, or no tracker)."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "says": self.says,
                "evidence": list(self.evidence), "title": self.title, "url": self.url,
                "text": self.text}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Verdict:
    """The contract, every column's grade, the headline, and who to file with."""

    contract: Contract
    grades: tuple[Graded, ...]
    headline: str
    """Who broke the contract and each grade's clients (`webapp.triage.headline`)."""
    parties: tuple[Party, ...]
    matrix: Matrix | None = None
    """The clients' calls lined up (`webapp.lenses.matrix`), when the lenses ran."""

    def grade_of(self, client: str) -> Grade | None:
        """A column's grade by name (None when it did not run or is not here)."""
        return next((g.grade for g in self.grades if g.client == client), None)

    @property
    def unfiled(self) -> str:
        """Why there is nothing to file, in one sentence ("" when there is a party)."""
        if self.parties:
            return ""
        if self.contract.end is not None:
            return (f"Nothing to file from these bytes: the stream's end was not recorded "
                    f"({self.contract.end}); capture it again to its end.")  # fmt: skip
        if self.contract.stopped is not None:
            return f"Nothing to file: {self.contract.stopped}."
        if not any(g.grade is not None for g in self.grades):
            return "Nothing to file that this report can show (no client ran)."
        return "Nothing to file: every client that ran reads it as it means."

    def to_json(self) -> dict[str, Any]:
        """The clients report: `{"clients", "policies", "reference", "rows", "comparison",
        "grades", "quirks", "intended", "why", "verdict", "file"}` ("verdict" is the headline;
        the lenses' keys only when they ran)."""
        out = self.matrix.to_json() if self.matrix is not None else {}
        return {
            **out,
            "grades": [graded.to_json() for graded in self.grades],
            **self.contract.to_json(),
            "verdict": self.headline,
            "file": [party.to_json() for party in self.parties],
        }


def judge(
    contract: Contract,
    columns: Sequence[LensResult],
    *,
    model: str | None = None,
    matrix: Matrix | None = None,
    gateway: Gateway | None = None,
    records: Sequence[Record] | None = None,
) -> Verdict:
    """Grade every column against the contract's intended reading and word the headline;
    with the `gateway` the stream came through, its own quirks are filed with it; each
    party's text to file carries a repro of `records` when given (`webapp.triage.filing`)."""
    from webapp.triage.filing import filed  # it minimises, through the fingerprint's grades

    stopped = contract.stopped is not None
    grades = tuple(grade(column, contract.intended, stopped=stopped) for column in columns)
    provider = model or contract.model
    parties = _parties(contract, grades, provider)
    found = Verdict(contract, grades, headline(contract, grades, parties, provider), parties,
                    matrix)  # fmt: skip
    if gateway is not None:
        found = through(found, gateway, provider)
    return filed(found, records, provider)


def through(verdict: Verdict, gateway: Gateway, provider: str | None = None) -> Verdict:
    """The verdict on a stream that came through `gateway`: the quirks it introduced are
    filed with it, and the headline names it (`provider`: the model, as `judge` names it)."""
    contract, grades = verdict.contract, verdict.grades
    provider = provider or contract.model
    parties = _through(gateway, contract, grades, verdict.parties, provider)
    said = gateway.title if contract.codes <= gateway.introduced else None
    return replace(verdict, headline=headline(contract, grades, parties, provider, said),
                   parties=parties)  # fmt: skip


# Grading one column.


def grade(column: LensResult, intended: Intended | None, *, stopped: bool = False) -> Graded:
    """A column's grade against the intended reading (None: the stream has none). With
    `stopped` (the generation stopped inside the stream's last call, `Contract.stopped`), a
    client's detail says that it flags none of the calls it hands."""
    client, version = column.client, column.version
    if column.status == "skipped":  # another API's stream: no bytes this client reads
        return Graded(client, version, None, column.error or "not run", skipped=True)
    if column.status == "unavailable":
        why = column.error or "not installed"
        return Graded(client, version, None, f"{why} ({column.install or INSTALL})")
    if column.limit is not None:  # our cap, not the library's doing: no grade
        return Graded(client, version, None, column.error or "stopped at a limit", limited=True)
    if column.status == "error":
        said = f"fails: {_short(column.error)}"
        handed = f"; it still hands {_calls(column.calls)}" if column.calls else ""
        return Graded(client, version, "flagged", said + handed)
    if intended is None:
        flags = [call for call in column.calls if call.invalid]
        chose = f"hands {_calls(column.calls)}" if column.calls else "hands no call"
        if flags:
            return Graded(client, version, "flagged",
                          f"{chose}, flagging {count(len(flags), 'call')}")  # fmt: skip
        if stopped and column.calls:
            chose += ", flagging none, though the generation stopped inside the last call"
        return Graded(client, version, "guessed", chose)
    silent, flagged = _problems(intended, column.calls)
    if silent:
        return Graded(client, version, "damaged", "; ".join(silent + flagged))
    if flagged:
        return Graded(client, version, "flagged", "; ".join(flagged))
    return Graded(client, version, "intact", _intact(intended))


def graded_calls(column: LensResult, intended: Intended) -> tuple[Grade | None, ...]:
    """Each intended call's grade in a column, call by call: `intact` when the client hands
    it as meant, `flagged` when it raised or flagged it, `damaged` when it is missing or
    wrong (None for every call when the client did not run). Extra calls a client adds count
    in its grade of the stream (`grade`), not here."""
    if column.status in NOT_RAN:
        return (None,) * len(intended.calls)
    if column.status == "error":
        flagged: Grade = "flagged"
        return (flagged,) * len(intended.calls)
    pairs, _ = _pair(intended, column.calls)
    out: list[Grade | None] = []
    for want, got in pairs:
        if got is not None and got.invalid:
            out.append("flagged")
        elif got is None or _wrong(want, got):
            out.append("damaged")
        else:
            out.append("intact")
    return tuple(out)


def _problems(intended: Intended, calls: Sequence[Call]) -> tuple[list[str], list[str]]:
    """What the application gets wrong without a word (`silent`) and with one (`flagged`)."""
    pairs, extra = _pair(intended, calls)
    silent: list[str] = []
    flagged: list[str] = []
    for want, got in pairs:
        name = _name(want.name)
        if got is None:
            silent.append(f"{name} is missing")
            continue
        wrong = _wrong(want, got)
        if got.invalid:
            flagged.append(f"flags {name} ({_short(got.invalid, 70)})")
        elif wrong:
            silent.append(wrong)
    phantoms = [call for call in extra if not call.invalid and not call.name]
    others = [call for call in extra if not call.invalid and call.name]
    if phantoms:
        silent.append(f"adds {count(len(phantoms), 'phantom call')}")
    for call in others:
        silent.append(f"adds a call {_name(call.name)} {_clip(call.arguments)}")
    marked = [call for call in extra if call.invalid]
    if marked:
        flagged.append(f"adds {count(len(marked), 'extra call')}, flagged")
    return silent, flagged


def _wrong(want: Any, got: Call) -> str | None:
    name = _name(want.name)
    if (got.name or "") != (want.name or ""):
        return f"{name} is named {json.dumps(got.name or '')}"
    if got.id and isinstance(want.id, str) and want.id and got.id != want.id:
        return f"{name}'s id is {json.dumps(got.id)}, not {json.dumps(want.id)}"
    if not same_arguments(got.arguments, want.arguments):
        return f"{name} gets {_clip(got.arguments)} instead of {_clip(want.arguments)}"
    return None


def _pair(
    intended: Intended, calls: Sequence[Call]
) -> tuple[list[tuple[Any, Call | None]], list[Call]]:
    """Each intended call with the client's (by id where both have one, else in order), and
    the client's calls left over."""
    wanted = list(intended.calls)
    matched: list[Call | None] = [None] * len(wanted)
    left: list[Call] = []
    for call in calls:
        at = next((i for i, want in enumerate(wanted)
                   if matched[i] is None and call.id and want.id == call.id), None)  # fmt: skip
        if at is None:
            left.append(call)
        else:
            matched[at] = call
    extra: list[Call] = []
    ids = {want.id for want in wanted if isinstance(want.id, str) and want.id}
    for call in left:
        free = next((i for i, found in enumerate(matched) if found is None), None)
        if free is not None and not (call.id and call.id in ids):
            matched[free] = call
        else:
            extra.append(call)
    return list(zip(wanted, matched, strict=True)), extra


# The parties to file with.


def _parties(
    contract: Contract, grades: Sequence[Graded], provider: str | None
) -> tuple[Party, ...]:
    """Who to file with: the provider when its quirks did harm (or, with no client run, are
    harmful in the table), or the stream admits more than one reading, or it ended with an
    error; else, with no quirk, each library that is not intact."""
    if contract.end is not None:
        return ()  # the bytes hold part of a stream: who cut it is no bug they prove
    if contract.only_stopped is not None:
        return ()  # the finish_reason says what cut the last call: the contract was kept
    ran = [g for g in grades if g.grade is not None]
    hurt = [g for g in ran if g.grade != "intact"]
    harmful = [found for found in contract.quirks if found.harm != "none"]
    failed = contract.error is not None
    if failed or (contract.quirks and (hurt or (not ran and harmful) or contract.intended is None)):
        return (_provider_party(contract, grades, provider, harmful, hurt),)
    if contract.quirks and not hurt:
        return ()
    parties: list[Party] = []
    for graded in hurt:
        if graded.client == "exact-key":
            continue  # pi-ai before decision 0019: the pi-ai column says it for the library
        pin = BY_CLIENT.get(graded.client)
        where = f"{pin.package} {graded.version}" if pin else f"streamviz's {graded.client}"
        says = (f"File with {where}: the stream keeps the contract, so the fault is the "
                f"client's: {_FAULT[graded.grade or 'damaged']}.")  # fmt: skip
        evidence = ("no quirk: the stream keeps the contract", _reading(contract),
                    f"{graded.label}: {graded.grade}: {graded.detail}")  # fmt: skip
        parties.append(Party("library", where, says, evidence))
    return tuple(parties)


def _provider_party(
    contract: Contract,
    grades: Sequence[Graded],
    provider: str | None,
    harmful: list[Found],
    hurt: list[Graded],
) -> Party:
    """The provider as the party to file with: what its stream does, and what each library
    made of it."""
    outcomes = tuple(f"{g.label}: {g.grade}: {g.detail}" for g in grades if g.grade is not None)
    failed = contract.error is not None
    cited = harmful or list(contract.quirks)
    name = provider or "the provider"
    said = [_says(found) for found in _once(cited)]
    if failed:
        said.insert(0, f"ends the stream with an error ({_short(contract.error)})")
    what = _and(said)
    libraries = [g for g in hurt if g.version != BUILD]  # our own columns are not filed
    tail = [f"{_labels(chosen)} {_HURT[grade][len(chosen) > 1]}" for grade in _HURT
            if (chosen := [g for g in libraries if g.grade == grade])]  # fmt: skip
    says = f"File with the provider: a provider bug: {name} {what}" + (
        f"; {'; '.join(tail)}." if tail else "."
    )  # fmt: skip
    evidence = (
        *(
            f"{found.code} (breaks \u201c{CLAUSES[QUIRK[found.code].clause]}\u201d): "
            f"{found.message}"
            for found in contract.quirks
        ),
        _reading(contract),
        *outcomes,
    )
    title = f"The provider ({provider})" if provider else "The provider"
    return Party("provider", title, says, evidence)


def _through(
    gateway: Gateway,
    contract: Contract,
    grades: Sequence[Graded],
    parties: tuple[Party, ...],
    provider: str | None,
) -> tuple[Party, ...]:
    """The parties when the stream came through `gateway`: the provider's party is the
    gateway's when every quirk it cites is one the gateway introduced; both file when some
    are, each for its own."""
    at = next((i for i, party in enumerate(parties) if party.kind == "provider"), None)
    if at is None or contract.error is not None:
        return parties
    harmful = [found for found in contract.quirks if found.harm != "none"]
    cited = harmful or list(contract.quirks)
    theirs = [found for found in cited if found.code in gateway.introduced]
    if not theirs:
        return parties
    mine = [found for found in cited if found.code not in gateway.introduced]
    hurt = [g for g in grades if g.grade is not None and g.grade != "intact"]
    said = _and([_says(found) for found in _once(theirs)])
    libraries = [g for g in hurt if g.version != BUILD]
    tail = [f"{_labels(chosen)} {_HURT[grade][len(chosen) > 1]}" for grade in _HURT
            if (chosen := [g for g in libraries if g.grade == grade])]  # fmt: skip
    where = f" (capture {gateway.inner})" if gateway.inner else ""
    named = gateway.title[0].lower() + gateway.title[1:]
    says = (f"File with {named}: a gateway bug: it {said}, which the "
            f"provider's stream it received{where} does not") + (
        f"; {'; '.join(tail)}." if tail else ".")  # fmt: skip
    outcomes = tuple(f"{g.label}: {g.grade}: {g.detail}" for g in grades if g.grade is not None)
    evidence = (
        *(f"{found.code} (breaks \u201c{CLAUSES[QUIRK[found.code].clause]}\u201d): "
          f"{found.message}" for found in contract.quirks if found.code in gateway.introduced),
        f"the provider's stream{where} has none of these quirks",
        _reading(contract),
        *outcomes,
    )  # fmt: skip
    party = Party("gateway", gateway.title, says, evidence)
    if not mine:
        return (*parties[:at], party, *parties[at + 1 :])
    own = replace(contract, quirks=tuple(f for f in contract.quirks
                                         if f.code not in gateway.introduced))  # fmt: skip
    ours = _provider_party(own, grades, provider, [f for f in mine if f.harm != "none"], hurt)
    return (*parties[:at], ours, party, *parties[at + 1 :])


_HURT: dict[Grade, tuple[str, str]] = {
    "damaged": (
        "hands the application wrong calls without a word",
        "hand the application wrong calls without a word",
    ),
    "flagged": ("raises or flags the calls", "raise or flag the calls"),
    "guessed": ("guesses", "guess"),
}
"""What a library does with the provider's bug, by its grade (one library, several)."""
_FAULT: dict[Grade, str] = {
    "damaged": "it hands the application other calls and says nothing",
    "flagged": "it raises on, or flags, calls the stream means as they are",
    "guessed": "it guesses",
    "intact": "it reads the stream as it means",
}
"""A library's own fault, by its grade."""


def _says(found: Found) -> str:
    return f"{QUIRK[found.code].says} ({found.code})"


def _once(found: Sequence[Found]) -> list[Found]:
    seen: set[str] = set()
    out = []
    for item in found:
        if item.code not in seen:
            seen.add(item.code)
            out.append(item)
    return out


def _reading(contract: Contract) -> str:
    if contract.intended is None:
        return f"no intended reading: {contract.why}"
    return f"the stream means: {contract.intended.describe()}"


def _intact(intended: Intended) -> str:
    if any(not_json(call.arguments) for call in intended.calls):
        return "hands the calls as the stream sent them (arguments that are not JSON included)"
    return f"hands {count(len(intended.calls), 'call')} as the stream means them"


def _calls(calls: Sequence[Call]) -> str:
    shown = [f"{_name(call.name)} {_clip(call.arguments)}" for call in calls[:4]]
    more = f" and {count(len(calls) - 4, 'more', 'more')}" if len(calls) > 4 else ""
    return ", ".join(shown) + more


def _labels(grades: Sequence[Graded]) -> str:
    return _and([g.label for g in grades])


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _name(name: Any) -> str:
    return name if isinstance(name, str) and name else "(no name)"


def _clip(text: str | None) -> str:
    shown = "null" if text is None else text if text.strip() else '""'
    return shown if len(shown) <= SHOWN else shown[: SHOWN - 3] + "..."


def _short(text: str | None, limit: int = 90) -> str:
    lines = (text or "").strip().splitlines()
    first = lines[0] if lines else "no message"
    return first if len(first) <= limit else first[: limit - 3] + "..."


# Running the clients.


def clients_verdict(
    records: Sequence[Record],
    lenses: Sequence[Lens] | None = None,
    *,
    timeout: float = TIMEOUT,
    contract: Contract | None = None,
    model: str | None = None,
    repro: bool = True,
) -> Verdict:
    """Run every client lens on the stream (`webapp.lenses.clients_view`) and judge them;
    without `repro` the texts to file quote no repro (a minimiser's candidate needs none)."""
    from webapp.lenses import clients_view  # subprocesses: loaded when a verdict is asked for

    found = read_contract(records) if contract is None else contract
    matrix = clients_view(records, lenses, intended=found.intended, timeout=timeout)
    given = records if repro else None
    return judge(found, matrix.columns, model=model, matrix=matrix, records=given)


def results_verdict(
    records: Sequence[Record],
    results: Sequence[LensResult],
    *,
    contract: Contract | None = None,
    model: str | None = None,
    gateway: Gateway | None = None,
) -> Verdict:
    """`clients_verdict` from the lenses' results already known (kept in the store): the
    policies' columns and the grades are computed again, no library is run."""
    from webapp.lenses import matrix_of

    found = read_contract(records) if contract is None else contract
    matrix = matrix_of(records, results, intended=found.intended)
    return judge(found, matrix.columns, model=model, matrix=matrix, gateway=gateway,
                 records=records)  # fmt: skip


def policies_verdict(
    records: Sequence[Record],
    *,
    contract: Contract | None = None,
    model: str | None = None,
    gateway: Gateway | None = None,
) -> Verdict:
    """The verdict on this build's two policies alone (no client library run)."""
    columns = tuple(policy_result(records, policy) for policy in POLICY_COLUMNS)
    found = read_contract(records) if contract is None else contract
    return judge(found, columns, model=model, gateway=gateway, records=records)
