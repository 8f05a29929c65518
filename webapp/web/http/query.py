"""URLs in: the stream, options and step a URL names, validated (`webapp.web.http.links` builds
them).

A stream's pages live under `/s/{id}` (a stored stream) or `/examples/{key}` (a built-in
example, served from the package); `stream_source` reads which from the path, for the one
router of those pages. Every page URL carries its view in the query (`step`, `policy`, `path`,
and `server_tools` and `choice` when set), so a reload, Back or a shared link lands on the
same view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, TypeVar, get_args

from fastapi import Depends
from starlette.datastructures import QueryParams
from starlette.requests import Request

from webapp.core.anomalies import KINDS
from webapp.core.options import Options
from webapp.core.rules import POLICIES, Policy
from webapp.core.trace import AssemblyPath
from webapp.examples import EXAMPLES
from webapp.web.backend.example_source import example_id

PATHS: tuple[AssemblyPath, ...] = get_args(AssemblyPath)
DEFAULTS = Options()
"""The options a URL gets when it names none."""
MAX_CHOICE = 1000
MAX_SERVER_TOOLS = 50
MAX_HAR_ENTRY = 1_000_000


T = TypeVar("T", bound=str)


class BadQuery(ValueError):
    """A query value is not one this app understands; the message says which and why."""


class NoSuchExample(LookupError):
    """An `/examples/{key}` URL names no built-in example."""


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


@dataclass(frozen=True, slots=True)
class StreamSource:
    """The stream a page shows and the query it is shown with: a stored stream's URL as it
    is, an example's with its story's opening (step and options) for what the URL names not."""

    stream_id: str
    query: QueryParams


def stream_source(request: Request) -> StreamSource:
    """The stream the path names (`/s/{stream_id}` or `/examples/{key}`): the dependency of a
    stream's pages.

    Raises NoSuchExample for an example key the package does not hold.
    """
    key = request.path_params.get("key")
    if key is None:
        return StreamSource(str(request.path_params["stream_id"]), request.query_params)
    example = EXAMPLES.get(str(key))
    if example is None:
        raise NoSuchExample(key)
    query = request.query_params
    opening = {"step": str(example.story.start_step), **options_query(example.options)}
    pairs = [(name, value) for name, value in opening.items() if name not in query]
    return StreamSource(example_id(example.key), QueryParams([*pairs, *query.multi_items()]))


Shown = Annotated[StreamSource, Depends(stream_source)]
"""A stream page handler's parameter: the stream its path names (`/s/{id}`, `/examples/{key}`)."""


COMPARED: tuple[Policy, Policy] = ("exact-key", "adr-0019")
"""The policies the compare page puts left and right when its URL names no others."""
