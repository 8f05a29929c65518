"""URLs out: every URL of the app is built here (`Links`, and a few of no stream's).

A stream's pages are mounted at `STORED` and `EXAMPLE` (the same router, see
`webapp.web.http.query.stream_source`); its embedded view under `EMBEDDED`. A page's URL carries
its view (options, HAR entry, anomaly filter, presenter mode) so that a reload or a shared
link shows the same thing; the stream's own pages (title, notes, deletion, minimising, the
report) are the same under every view and hang under its id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from urllib.parse import urlencode

from webapp.core.options import Options
from webapp.core.rules import Policy
from webapp.core.trace import AssemblyPath
from webapp.web.backend.example_source import example_id, example_of
from webapp.web.http.query import COMPARED, DEFAULTS, options_query

STORED = "/s/{stream_id}"
"""Where a stored stream's pages are mounted."""
EXAMPLE = "/examples/{key}"
"""Where a built-in example's pages are mounted (the same pages: `stream_source`)."""
EMBEDDED = "/embed"
"""The prefix of the framable view of either."""
DIFF = "/diff"
"""Two streams side by side (`?a=ID&b=ID`); with no `b`, the page that picks it."""
DIFF_API = "/api/diff"
DIFF_PASTE = "/diff/paste"
"""Where a stream pasted to be compared is posted (stored, then the diff opens)."""
PLAY_RUN = "/play/run"
"""Where the playground posts its state to be run (an htmx partial; `/api/play` is the JSON)."""


EDITED_ON_PAGE = ("server_tools", "choice")
STEP_PARTS_KEPT = 64
"""Views whose step URLs' parts are kept (`_step_parts`): the pages being rendered."""
"""The options the timeline page's own form edits; the form keeps the rest as hidden fields."""


@dataclass(frozen=True, slots=True)
class Links:
    """The URLs of one stream's pages under one set of options: the one place they are built.

    Besides the options, a view may name a HAR entry (`har_entry`, which stream of the file
    is read) and a filter of the anomaly list (`anomaly`, `anomaly_start`); every URL of the
    view carries them, so a reload or a shared link shows the same thing. `present` (presenter
    mode) is carried the same way; `embed` makes the step URLs those of the framable view
    (`/embed/...`), so stepping stays inside an iframe.
    """

    stream_id: str
    options: Options
    har_entry: int | None = None
    anomaly: str = ""
    anomaly_start: int = 0
    present: bool = False
    embed: bool = False

    @classmethod
    def for_example(cls, key: str, options: Options) -> Links:
        """The links of a built-in example, served from the package (`/examples/KEY...`)."""
        return cls(example_id(key), options)

    @property
    def example(self) -> str:
        """The built-in example's key when these are an example's links, else ""."""
        example = example_of(self.stream_id)
        return example.key if example is not None else ""

    @property
    def base(self) -> str:
        """The timeline page (or its embedded view) without a query."""
        prefix = EMBEDDED if self.embed else ""
        if self.example:
            return prefix + EXAMPLE.format(key=self.example)
        return prefix + self.stored

    @property
    def stored(self) -> str:
        """The stream under its id (`/s/{id}`, an example's too): where the pages of a stored
        stream's own (its title, notes, deletion, minimising, report) hang."""
        return STORED.format(stream_id=self.stream_id)

    @property
    def replay(self) -> str:
        """The base URL an OpenAI client is given to be sent this stream again
        (`/replay/ID/v1`; `/replay/ID/N/v1` for a HAR's entry N): `webapp.proxy.replay`."""
        entry = "" if self.har_entry is None else f"/{self.har_entry}"
        return f"/replay/{self.stream_id}{entry}/v1"

    @property
    def embedded(self) -> Links:
        """The same view's links inside the framable, read-only view (`/embed/...`)."""
        return replace(self, embed=True)

    @property
    def page(self) -> Links:
        """The same view's links on the full pages (out of `/embed/...`)."""
        return replace(self, embed=False)

    def opening(self, on_compare: bool) -> str:
        """The page's stable address without a query (an example opens at its story's step)."""
        return f"{self.base}/compare" if on_compare else self.base

    def with_policy(self, policy: Policy) -> Links:
        """The same stream's links under another policy."""
        return replace(self, options=replace(self.options, policy=policy))

    def with_path(self, path: AssemblyPath) -> Links:
        """The same stream's links on another path."""
        return replace(self, options=replace(self.options, path=path))

    def with_entry(self, number: int | None) -> Links:
        """The links of another of the HAR file's entries (the anomaly filter does not carry)."""
        return replace(self, har_entry=number, anomaly="", anomaly_start=0)

    def filtered(self, code: str, start: int = 0) -> Links:
        """The same view with the anomaly list filtered by `code` ("": unfiltered)."""
        return replace(self, anomaly=code, anomaly_start=start if code else 0)

    def _view_query(self) -> dict[str, str]:
        items = options_query(self.options)
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        if self.anomaly:
            items["anomaly"] = self.anomaly
            if self.anomaly_start:
                items["anomaly_start"] = str(self.anomaly_start)
        if self.present:
            items["present"] = "1"
        return items

    def _with(self, path: str, first: Mapping[str, str | int], **extra: str | int) -> str:
        items: dict[str, str | int] = dict(first)
        items.update(self._view_query())
        items.update(extra)
        return f"{path}?{urlencode(items)}"

    def step(self, step: int) -> str:
        """The timeline page at `step` (the same URL `_with` would build, its parts made once
        per view: a full page links to some 400 steps)."""
        before, after = _step_parts(self)
        return f"{before}{int(step)}{after}"

    def step_urls(self) -> Callable[[int], str]:
        """`step` as a function of the step alone, its parts looked up once: for a window of
        rows (looking them up hashes these links, a microsecond a row)."""
        before, after = _step_parts(self)
        return lambda step: f"{before}{int(step)}{after}"

    def quirks(self, step: int) -> str:
        """The timeline page at `step`, scrolled to its quirk panel."""
        return f"{self.step(step)}#quirks"

    def hidden_fields(self, step: int) -> tuple[tuple[str, str], ...]:
        """The query of the page at `step` without what the page's form edits, as form fields.

        On the client path the path is left out, so that naming server tools in the form
        switches to their path, as on the home form and the command line.
        """
        items = {"step": str(step), **self._view_query()}
        if self.options.path == "client":
            items.pop("path", None)
        return tuple((k, v) for k, v in items.items() if k not in EDITED_ON_PAGE)

    def rows(self, start: int, end: int, step: int, direction: str) -> str:
        """Timeline rows `start` to `end` (exclusive) to put `direction` of those shown."""
        first: dict[str, str | int] = {"start": start, "end": end, "step": step}
        first["direction"] = direction
        return self._with(f"{self.page.base}/rows", first)

    def live(self, seen: int) -> str:
        """What a live page polls: the page again once more than `seen` bytes have arrived
        (the step it shows is sent beside, when the user chose one)."""
        return self._with(f"{self.page.base}/live", {"seen": seen})

    @property
    def landing(self) -> str:
        """The page without a step, under these options: the findings come first (the overview,
        the anomalies, the provider's quirks), then the timeline at step 0. Where a stream is
        opened as a whole (a paste or an upload, a saved playground, an exported report's
        link); a URL that names a step puts its stage first instead."""
        query = self._view_query()
        return f"{self.base}?{urlencode(query)}" if query else self.base

    @property
    def following(self) -> str:
        """The page without a step: a live stream's page then follows its latest chunk."""
        return self.landing

    def timeline(self, step: int) -> str:
        """The timeline window around `step`."""
        return self._with(f"{self.page.base}/timeline", {"step": step})

    def anomalies(self, step: int) -> str:
        """The anomaly list alone (htmx), as filtered by these links, for the page at `step`."""
        return self._with(f"{self.page.base}/anomalies", {"step": step})

    def compare(
        self,
        left: Policy = COMPARED[0],
        right: Policy = COMPARED[1],
        *,
        only: bool = False,
        start: int = 0,
        step: int | None = None,
        panel: bool = False,
        framed: bool = False,
    ) -> str:
        """The compare page of `left` and `right` on these options; `step` selects a row.

        `panel` gives the URL of the selected step's panel alone (htmx) instead of the page;
        `framed`, those of its embedded view (`/embed/.../compare`), which stay in a frame.
        """
        items: dict[str, str | int] = {"left": left, "right": right}
        items.update(options_query(self.options))
        del items["policy"]
        if self.har_entry is not None:
            items["har_entry"] = self.har_entry
        if only:
            items["only"] = "differing"
        if start:
            items["start"] = start
        if step is not None:
            items["step"] = step
        if self.present:
            items["present"] = "1"
        where = "compare/step" if panel else "compare"
        base = self.embedded.base if framed else self.page.base
        return f"{base}/{where}?{urlencode(items)}"

    def _entry_query(self, **first: str) -> str:
        """`?har_entry=N` (after `first`) when these links name a HAR entry, else `first`."""
        items = dict(first)
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"?{urlencode(items)}" if items else ""

    @property
    def clients(self) -> str:
        """Every client library's view of the stream on screen (the same under every option,
        but not under every HAR entry: each entry is a stream of its own)."""
        return f"{self.page.base}/clients{self._entry_query()}"

    @property
    def clients_matrix(self) -> str:
        """The clients page's verdict and matrix alone (htmx polls it while it is computed)."""
        return f"{self.page.base}/clients/matrix{self._entry_query()}"

    @property
    def clients_again(self) -> str:
        """Where "compute again" posts: forgets the kept verdict of the stream on screen."""
        return f"{self.page.base}/clients/again{self._entry_query()}"

    @property
    def clients_json(self) -> str:
        """The clients' verdict as JSON (what `streamviz clients --format json` prints),
        waiting for it to be computed."""
        return f"/api/streams/{self.stream_id}/clients{self._entry_query(wait='true')}"

    # The stream's own pages: the same under every view, so without one in the query.

    def plain_step(self, step: int, note: int | None = None) -> str:
        """The page at `step` under the options it opens with (none in the query), scrolled to
        note `note`: where a form sends the browser back, a note's own link."""
        url = f"{self.stored}?{urlencode({'step': step})}"
        return url if note is None else f"{url}#note-{note}"

    def opened_under(self, policy: str) -> str:
        """The page as it opens, under `policy`."""
        return f"{self.stored}?{urlencode({'policy': policy})}"

    @property
    def title(self) -> str:
        """Where a new title is posted."""
        return f"{self.stored}/title"

    @property
    def deletion(self) -> str:
        """The page that asks before deleting, and where the deletion is posted."""
        return f"{self.stored}/delete"

    @property
    def notes(self) -> str:
        """Where a new note is posted."""
        return f"{self.stored}/notes"

    def note(self, note_id: int) -> str:
        """Where a note's edit is posted."""
        return f"{self.notes}/{note_id}"

    def note_deletion(self, note_id: int) -> str:
        """Where a note's deletion is posted."""
        return f"{self.note(note_id)}/delete"

    def _policy_query(self) -> str:
        items: dict[str, str] = {"policy": self.options.policy}
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return urlencode(items)

    @property
    def report(self) -> str:
        """The Markdown report under these links' policy (and HAR entry)."""
        return f"{self.stored}/report.md?{self._policy_query()}"

    @property
    def export(self) -> str:
        """The stream as one self-contained HTML file, under these links' options (and HAR
        entry): its timeline, steps, blocks, anomalies, quirks and notes, to open offline
        (`/s/{id}/export.html`; an example's beside its own pages)."""
        items = options_query(self.options)
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"{self.page.base}/export.html?{urlencode(items)}"

    @property
    def fixture(self) -> str:
        """The regression fixture's zip under these links' policy (and HAR entry)."""
        return f"{self.stored}/fixture.zip?{self._policy_query()}"

    @property
    def minimise(self) -> str:
        """Where a minimise job is started (POST), on the HAR entry on screen."""
        return f"{self.stored}/minimise{self._entry_query()}"

    @property
    def minimise_form(self) -> str:
        """The Minimise form with its choices, for the page of this view (GET)."""
        items = options_query(self.options)
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"{self.stored}/minimise?{urlencode(items)}"

    def job(self, job_id: str) -> str:
        """A minimise job's progress (its page, or the fragment htmx polls)."""
        return f"{self.stored}/minimise/{job_id}"

    def job_cancel(self, job_id: str) -> str:
        """Where a minimise job's Cancel posts."""
        return f"{self.job(job_id)}/cancel"

    def at(self, public_url: str) -> str:
        """The stream's address on the server whose users reach it at `public_url`."""
        return public_url.rstrip("/") + self.stored

    @property
    def playground(self) -> str:
        """The playground, opened on a copy of this stream ("Edit a copy")."""
        items: dict[str, str] = {"from": self.stream_id}
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"/play?{urlencode(items)}"

    @property
    def compare_with(self) -> str:
        """The page that picks another stream to compare this one with (`/diff?a=ID`)."""
        return diff_url(self.stream_id, None, self.har_entry)

    def diff_with(self, other: str, other_entry: int | None = None) -> str:
        """This stream (A) and stream `other` (B) side by side."""
        return diff_url(self.stream_id, other, self.har_entry, other_entry)

    @property
    def raw(self) -> str:
        """The stored bytes."""
        return f"/api/streams/{self.stream_id}/raw"

    @property
    def trace(self) -> str:
        """The schema-1 trace as JSON."""
        items = options_query(self.options)
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"/api/streams/{self.stream_id}/trace?{urlencode(items)}"


def play_url(token: str) -> str:
    """The playground holding the state `token` (see `webapp.web.views.playground.encode`)."""
    return f"/play?{urlencode({'s': token})}"


PLAY_URL_MOST = 8_000
"""The longest playground address sent in a header (`HX-Replace-Url`, a redirect's `Location`):
servers and proxies refuse a request line or header much past 8 KiB (nginx's default buffer),
so a longer one could not be loaded back. A larger state says so and offers to be saved."""


def linkable(url: str) -> bool:
    """Whether a playground address is short enough to hand out (`PLAY_URL_MOST`)."""
    return len(url) <= PLAY_URL_MOST


def example_page(key: str, *, on_compare: bool = False) -> str:
    """An example's stable address: its timeline (or compare page), opening at its story."""
    return Links(example_id(key), DEFAULTS).opening(on_compare)


def job_api(job_id: str) -> str:
    """A minimise job as JSON."""
    return f"/api/jobs/{job_id}"


def _diff_query(
    a: str, b: str | None, har_a: int | None, har_b: int | None, ids: str, **extra: str
) -> str:
    items: dict[str, str] = {"a": a}
    if har_a is not None:
        items["har_entry_a"] = str(har_a)
    if b is not None:
        items["b"] = b
    if har_b is not None:
        items["har_entry_b"] = str(har_b)
    if ids != "auto":
        items["ids"] = ids
    items.update(extra)
    return urlencode(items)


def diff_url(
    a: str,
    b: str | None,
    har_a: int | None = None,
    har_b: int | None = None,
    ids: str = "auto",
    **extra: str,
) -> str:
    """Streams `a` and `b` side by side (each perhaps a HAR entry); with no `b`, the page that
    picks it (`extra`: its search, `q`)."""
    return f"{DIFF}?{_diff_query(a, b, har_a, har_b, ids, **extra)}"


def diff_api(a: str, b: str, har_a: int | None = None, har_b: int | None = None,
             ids: str = "auto") -> str:  # fmt: skip
    """The diff as JSON: what `streamviz diff --format json` prints."""
    return f"{DIFF_API}?{_diff_query(a, b, har_a, har_b, ids)}"


@lru_cache(maxsize=STEP_PARTS_KEPT)
def _step_parts(links: Links) -> tuple[str, str]:
    """What comes before and after the step's number in `links.step(N)`."""
    view = urlencode(links._view_query())
    return f"{links.base}?step=", f"&{view}" if view else ""
