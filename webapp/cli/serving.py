"""The options `serve` and `record` share, each declared once: what the option is (its type,
default and metavar) is here; what it means for the command, its help, is the command's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from webapp.settings import DEFAULT_MAX_BYTES

F = TypeVar("F", bound=Callable[..., Any])

DECLARED: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "--upstream": (("upstreams",), {"multiple": True, "metavar": "NAME=URL"}),
    "--keep-requests": ((), {"is_flag": True}),
    "--allowed-hosts": ((), {"default": "", "metavar": "NAMES"}),
    "--proxy-timeout": (
        (),
        {"type": click.FloatRange(min=0.1), "default": 600.0, "show_default": True, "metavar": "S"},
    ),
    "--max-bytes": (
        (),
        {"type": click.IntRange(min=1), "default": DEFAULT_MAX_BYTES, "show_default": True},
    ),
}
"""Each shared option: its other names (the parameter it fills) and what click is told of it."""


def shared(name: str, help: str, **more: Any) -> Callable[[F], F]:
    """The shared option `name` with this command's help, and whatever it adds (`--upstream`
    is required by `record`, read from the environment by `serve`)."""
    names, declared = DECLARED[name]
    return click.option(name, *names, help=help, **declared, **more)


def listen(port: int) -> Callable[[F], F]:
    """`--host` and `--port` (the command's own default port), in that order."""
    host = click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
    number = click.option(
        "--port", type=click.IntRange(0, 65535), default=port, show_default=True, help="Port."
    )

    def decorate(command: F) -> F:
        return host(number(command))

    return decorate
