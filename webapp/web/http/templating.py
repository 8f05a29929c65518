"""The Jinja environment: autoescape everywhere, every printed string made encodable."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

import webapp
from webapp.core import words
from webapp.core.anomalies import severity_of
from webapp.core.rules import RULES
from webapp.web.http import markup
from webapp.web.http.text import printable

PACKAGE = Path(webapp.__file__).resolve().parent


def _beside_package(name: str) -> Path:
    """A top-level folder of the checkout, or its copy inside an installed wheel."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


TEMPLATES = _beside_package("templates")
STATIC = _beside_package("static")
HTMX = "htmx-4.0.1.min.js"


def _finalize(value: Any) -> Any:
    """Runs on every `{{ ... }}`: None prints as nothing, lone surrogates as U+FFFD."""
    if value is None:
        return ""
    if isinstance(value, str):
        return printable(value)
    return value


class _CompiledTemplates(jinja2.BytecodeCache):
    """Compiled templates kept in memory for every environment of the process (keyed by name
    and source checksum, so an edited template compiles again)."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()


_COMPILED = _CompiledTemplates()


def warm(templates: Jinja2Templates) -> None:
    """Load (and on the process's first call, compile) every template now, at start: the first
    page after a restart does not pay for it (later processes load them from `_COMPILED`)."""
    env = templates.env
    for name in env.list_templates(extensions=("html",)):
        env.get_template(name)


def make_templates() -> Jinja2Templates:
    """Templates from the package's own `templates/` folder, autoescaped, strict. They call no
    view model's function: each route hands its template the view model's values."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=_COMPILED,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = words.number
    env.filters["plural"] = words.count
    env.filters["visible"] = words.visible
    env.filters["badge"] = markup.badge
    env.filters["timeline_rows"] = markup.timeline_rows
    env.filters["strip_cells"] = markup.strip_cells
    env.globals["RULES"] = RULES
    env.globals["RULE_COUNT"] = _spelled(len(RULES))  # "the five rules", from the table
    env.globals["severity_of"] = severity_of
    env.globals["HTMX"] = HTMX
    return Jinja2Templates(env=env)


def _spelled(n: int) -> str:
    """`n` in words, as prose counts a few things ("five"); a larger one in digits."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    return words[n] if 0 <= n < len(words) else str(n)


def render(
    templates: Jinja2Templates,
    request: Request,
    name: str,
    context: Mapping[str, Any],
    status: int = 200,
) -> Response:
    """A template response (tests can read `response.template` and `response.context`)."""
    response: Response = templates.TemplateResponse(
        request, name, dict(context), status_code=status
    )
    return response
