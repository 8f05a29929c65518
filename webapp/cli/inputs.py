"""What a stream command reads: FILE, how to read it, and the options it is assembled under."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial, wraps
from typing import Any, TypeVar, cast

import click

from webapp.core.options import Options
from webapp.core.readers import BLOCK, FORMATS, SEGMENT, decode, read, read_plain, read_plain_blocks
from webapp.core.records import ReaderError, ReadResult
from webapp.core.rules import POLICIES, Policy
from webapp.core.trace import AssemblyPath
from webapp.core.words import count
from webapp.tuning import mapped_blocks

F = TypeVar("F", bound=Callable[..., Any])
LONG = 4 * SEGMENT
"""A file of this many bytes or more is read with `webapp.tuning.mapped_blocks`."""
_PATHS = ("client", "server-tools")


class InputError(click.ClickException):
    """Unusable input: printed as "Error: ..." on stderr, exit code 2."""

    exit_code = 2


def _server_tools(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> tuple[str, ...] | None:
    if value is None:
        return None
    names = tuple(name.strip() for name in value.split(","))
    if not any(names) or not all(names):
        raise click.BadParameter("give comma-separated names, e.g. 'web_search,openrouter:*'")
    for name in names:
        if "*" in name[:-1]:
            raise click.BadParameter(f"{name!r}: '*' may only end a pattern, as in 'web_*'")
    return names


INPUT_FORMAT = click.option(
    "--input-format",
    type=click.Choice(("auto", *FORMATS)),
    default="auto",
    show_default=True,
    help="How to read FILE; auto detects it.",
)
HAR_ENTRY = click.option(
    "--har-entry",
    "har_entry",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="With a HAR file: read entry N (its 1-based place in log.entries). "
    "Default: the first event-stream entry.",
)
"""--input-format and --har-entry, which every command reading FILE takes."""


def output_format(help: str) -> Callable[[F], F]:
    """`--format text|json` (its value is `output`), with what each means for this command."""
    return click.option(
        "--format",
        "output",
        type=click.Choice(("text", "json")),
        default="text",
        show_default=True,
        help=help,
    )


_SHARED = (
    click.argument("file", metavar="FILE|-"),
    click.option(
        "--path",
        type=click.Choice(_PATHS),
        default=None,
        help="Assembly path. Default: client, or server-tools when --server-tools is given.",
    ),
    click.option(
        "--server-tools",
        "server_tools",
        metavar="NAMES",
        callback=_server_tools,
        help="Comma-separated server-tool names or 'prefix*' patterns. Implies "
        "--path server-tools; combining it with --path client is an error.",
    ),
    click.option(
        "--choice",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        metavar="K",
        help="The choice index to follow in an n > 1 stream.",
    ),
    INPUT_FORMAT,
    HAR_ENTRY,
    output_format(
        "text: a table, coloured on a terminal, plain when piped. json: one JSON document."
    ),
    click.option("--redact", is_flag=True, help="Mask secrets in the input first."),
)
"""FILE and the options every stream command shares, in the order --help lists them."""
_POLICY = click.option(
    "--policy",
    type=click.Choice(POLICIES),
    default="adr-0019",
    show_default=True,
    help="adr-0019: with continuation and drop (the decision); exact-key: upstream before it.",
)
"""`--policy`, for the commands that show one policy (it follows FILE)."""


Command = Callable[..., None]


def stream_options(*, with_policy: bool) -> Callable[[Command], Command]:
    """FILE and the options every stream command shares (`--policy` only where one policy is
    shown), handed to the command as one `Stream`; its own options follow as keywords."""

    def decorate(command: Command) -> Command:
        @wraps(command)  # its name and its help; the options it declares itself
        def run(
            *,
            file: str,
            path: str | None,
            server_tools: tuple[str, ...] | None,
            choice: int,
            input_format: str,
            har_entry: int | None,
            output: str,
            redact: bool,
            policy: str = "adr-0019",
            **own: Any,
        ) -> None:
            chosen = options(policy, path, server_tools, choice)
            command(Stream(Input(file, input_format, har_entry, redact), chosen, output), **own)

        decorated: Command = run
        decorators = [_SHARED[0], *([_POLICY] if with_policy else []), *_SHARED[1:]]
        for decorator in reversed(decorators):
            decorated = decorator(decorated)
        return decorated

    return decorate


@dataclass(frozen=True, slots=True)
class Input:
    """The input a command was given: FILE, --input-format, --har-entry."""

    file: str
    input_format: str
    har_entry: int | None
    redact: bool = False

    def load(self) -> ReadResult:
        """Read it (exit 2 with a message when it cannot be read)."""
        return load(self.file, self.input_format, self.har_entry, self.redact)


@dataclass(frozen=True, slots=True)
class Stream:
    """What a stream command was given: its input, the options it is assembled under (the
    command's policy when it takes no --policy: adr-0019), and --format."""

    input: Input
    options: Options
    output: str


def _read_file(file: str) -> bytes:
    """The file's bytes, with `open`: `pathlib` would load at every command's start for this."""
    with open(file, "rb") as handle:
        return handle.read()


def _read_plain_file(file: str, input_format: str, har_entry: int | None) -> ReadResult | None:
    """`read_plain` of the file, read a block at a time: a long stream is then never held
    whole beside its payloads."""
    with open(file, "rb", buffering=0) as handle:
        return read_plain_blocks(iter(partial(handle.read, BLOCK), b""), input_format, har_entry)


def load(
    file: str, input_format: str, har_entry: int | None = None, redact: bool = False
) -> ReadResult:
    """Read FILE (or stdin for '-') and parse it into records; unusable input exits 2."""
    where = "stdin" if file == "-" else file
    try:
        # A regular file is first read as a plain stream, a block at a time; a pipe once, whole.
        found = None if redact or file == "-" else os.stat(file)
        regular = found is not None and stat.S_ISREG(found.st_mode)
        if found is not None and regular and found.st_size >= LONG:
            mapped_blocks()  # its segments go back to the system as they are assembled
        plain = _read_plain_file(file, input_format, har_entry) if regular else None
        if plain is not None:
            return plain
        data = sys.stdin.buffer.read() if file == "-" else _read_file(file)
    except OSError as error:
        raise InputError(f"cannot read {file}: {error.strerror or error}") from None
    except ReaderError as error:
        raise InputError(f"{where}: {error}") from None
    try:
        plain = None if redact or regular else read_plain(data, input_format, har_entry)
        if plain is not None:
            return plain
        text = decode(data)
        del data  # the bytes are not needed once decoded: a long stream's peak is lower
        if redact:
            text = scrubbed(opened(text, input_format))
        return read(text, input_format, har_entry)
    except ReaderError as error:
        raise InputError(f"{where}: {error}") from None


def opened(text: str, input_format: str) -> str:
    """A cassette with its binary bodies as text (`decoded_cassette`), so that `--redact`
    masks what they hold rather than their base64; any other text as it is."""
    if input_format not in ("auto", "cassette"):
        return text
    from webapp.core.readers.cassette import decoded_cassette  # only for --redact

    return decoded_cassette(text) or text


def scrubbed(text: str) -> str:
    """`--redact`: the text with secrets masked; what was removed is said on stderr."""
    from webapp.core.redact.content import scrub  # the secret patterns load only for --redact

    masked, removed = scrub(text)
    if removed:
        shown = "; ".join(removed[:5]) + (
            f"; and {len(removed) - 5} more" if len(removed) > 5 else ""
        )
        click.echo(f"redacted {count(len(removed), 'secret')}: {shown}", err=True)
    return masked


def options(
    policy: str, path: str | None, server_tools: tuple[str, ...] | None, choice: int
) -> Options:
    """Assembly options from the command line; --server-tools implies the server-tools path."""
    if server_tools is not None and path == "client":
        raise click.UsageError("--server-tools needs --path server-tools (or no --path at all)")
    chosen: AssemblyPath = "server-tools" if path == "server-tools" or server_tools else "client"
    return Options(cast(Policy, policy), chosen, server_tools or (), choice)
