"""Query strings in and out: the options and step a URL names, validated, and canonical URLs.

Every page URL carries its view in the query (`step`, `policy`, `path`, and `server_tools` and
`choice` when set), so a reload, Back or a shared link lands on the same view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TypeVar, get_args
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from webapp.core.anomalies import KINDS
from webapp.core.options import Options
from webapp.core.rules import POLICIES, Policy
from webapp.core.trace import AssemblyPath
from webapp.web.backend.example_source import example_id, example_of

PATHS: tuple[AssemblyPath, ...] = get_args(AssemblyPath)
DEFAULTS = Options()
"""The options a URL gets when it names none."""
MAX_CHOICE = 1000
MAX_SERVER_TOOLS = 50
MAX_HAR_ENTRY = 1_000_000


T = TypeVar("T", bound=str)


class BadQuery(ValueError):
    """A query value is not one this app understands; the message says which and why."""


def _one(params: QueryParams | Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    return value.strip()


def _one_of(value: str | None, choices: tuple[T, ...], default: T, name: str) -> T:
    """`value` when it is one of `choices`, `default` when it is absent or empty."""
    if not value:
        return default
    for choice in choices:
        if value == choice:
            return choice
    raise BadQuery(f"{name} must be one of {', '.join(choices)} (got {value[:40]!r})")


def parse_policy(
    value: str | None, default: Policy = DEFAULTS.policy, name: str = "policy"
) -> Policy:
    """A policy name, or the default when absent or empty."""
    return _one_of(value, POLICIES, default, name)


def parse_path(value: str | None) -> AssemblyPath:
    """An assembly path, the default ("client") when absent or empty."""
    return _one_of(value, PATHS, DEFAULTS.path, "path")


def parse_server_tools(values: list[str]) -> tuple[str, ...]:
    """Server tool names from comma- or newline-separated values, duplicates removed."""
    names: list[str] = []
    for value in values:
        for part in value.replace("\n", ",").split(","):
            name = part.strip()
            if name and name not in names:
                names.append(name)
    if len(names) > MAX_SERVER_TOOLS:
        raise BadQuery(f"at most {MAX_SERVER_TOOLS} server tools")
    if any(len(name) > 200 for name in names):
        raise BadQuery("a server tool name is longer than 200 characters")
    return tuple(names)


def parse_int(value: str | None, name: str, default: int, maximum: int | None = None) -> int:
    """A non-negative integer, or the default when absent or empty."""
    if not value:
        return default
    if not value.isascii() or not value.isdigit() or len(value) > 12:
        raise BadQuery(f"{name} must be a whole number, 0 or more (got {value[:40]!r})")
    number = int(value)
    if maximum is not None and number > maximum:
        raise BadQuery(f"{name} must be at most {maximum} (got {number})")
    return number


def parse_har_entry(value: str | None) -> int | None:
    """A HAR entry's 1-based number, or None when absent or empty (the reader's default)."""
    if not value or not value.strip():
        return None
    number = parse_int(value.strip(), "har_entry", 0, MAX_HAR_ENTRY)
    if number < 1:
        raise BadQuery("har_entry must be a whole number, 1 or more (entries count from 1)")
    return number


def parse_anomaly(value: str | None) -> str:
    """An anomaly code to filter the anomaly list by, or "" for all of them."""
    if not value or not value.strip():
        return ""
    code = value.strip()
    if code not in KINDS:
        raise BadQuery(
            f"anomaly must be an anomaly code such as invalid-arguments (got {code[:40]!r})"
        )
    return code


def parse_present(value: str | None) -> bool:
    """Whether a page is shown in presenter mode (`present=1`)."""
    if not value or not value.strip() or value.strip() == "0":
        return False
    if value.strip() != "1":
        raise BadQuery(f"present must be 1 or 0 (got {value[:40]!r})")
    return True


def parse_options(params: QueryParams | Mapping[str, str]) -> Options:
    """The assembly options a query names (policy, path, server_tools, choice)."""
    if isinstance(params, QueryParams):
        tools = params.getlist("server_tools")
    else:
        tools = [params["server_tools"]] if "server_tools" in params else []
    server_tools = parse_server_tools(tools)
    path = _one(params, "path")
    return Options(
        policy=parse_policy(_one(params, "policy")),
        # as `--server-tools` on the command line: naming server tools picks their path,
        # unless the query names a path itself
        path=parse_path(path) if path or not server_tools else "server-tools",
        server_tools=server_tools,
        choice=parse_int(_one(params, "choice"), "choice", 0, MAX_CHOICE),
    )


def options_query(options: Options) -> dict[str, str]:
    """The query items that name `options`: policy and path always, the rest when set."""
    items: dict[str, str] = {"policy": options.policy, "path": options.path}
    if options.server_tools:
        items["server_tools"] = ",".join(options.server_tools)
    if options.choice:
        items["choice"] = str(options.choice)
    return items


COMPARED: tuple[Policy, Policy] = ("exact-key", "adr-0019")
"""The policies the compare page puts left and right when its URL names no others."""
EDITED_ON_PAGE = ("server_tools", "choice")
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
        prefix = "/embed" if self.embed else ""
        if self.example:
            return f"{prefix}/examples/{self.example}"
        return f"{prefix}/s/{self.stream_id}"

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
        """The timeline page at `step`."""
        return self._with(self.base, {"step": step})

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
    ) -> str:
        """The compare page of `left` and `right` on these options; `step` selects a row.

        `panel` gives the URL of the selected step's panel alone (htmx) instead of the page.
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
        return f"{self.page.base}/{where}?{urlencode(items)}"

    @property
    def clients(self) -> str:
        """Every client library's view of the stream (the same under every option)."""
        return f"{self.base}/clients"

    @property
    def playground(self) -> str:
        """The playground, opened on a copy of this stream ("Edit a copy")."""
        items: dict[str, str] = {"from": self.stream_id}
        if self.har_entry is not None:
            items["har_entry"] = str(self.har_entry)
        return f"/play?{urlencode(items)}"

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
