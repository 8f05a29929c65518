"""The `streamviz` command line: trace, check and compare recorded streams; serve the web app.

Exit codes: 0 fine; 1 `check` found anomalies; 2 unusable input or arguments, with the
message on stderr; 141 the reader of stdout went away (`| head`), as for SIGPIPE.

The group imports a command's module only when that command runs (`COMMANDS` names each
one's module and its line in `--help`), so that `--version` and `check` start without the
web stack, the lenses, the storage or the triage code, and `--help` lists every command
without importing any.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

from webapp import __version__
from webapp.tuning import loading

with loading():  # click's objects: none is garbage, no collection need walk them
    import click


class Entry(NamedTuple):
    """Where a command lives (`module:attribute`) and its line in `streamviz --help`."""

    target: str
    short_help: str


COMMANDS = {
    "trace": Entry("webapp.cli.trace:trace",
                   "Every step: rule, block and events per fragment; then the blocks."),
    "check": Entry("webapp.cli.trace:check", "List the anomalies; exit 1 on any error (for CI)."),
    "compare": Entry("webapp.cli.trace:compare",
                     "Where policies exact-key and adr-0019 disagree on a stream."),
    "diff": Entry("webapp.cli.diff:diff",
                  "Two streams side by side: the calls each means, by call and by value."),
    "clients": Entry("webapp.cli.clients:clients",
                     "What each client library hands the application, graded."),
    "minimise": Entry("webapp.cli.triage:minimise_command",
                      "Shrink a stream to the chunks that still show the same bug."),
    "minimize": Entry("webapp.cli.triage:minimise_command", "The same as minimise."),
    "report": Entry("webapp.cli.triage:report", "A Markdown report to paste into a bug tracker."),
    "fixture": Entry("webapp.cli.triage:fixture",
                     "Write a regression fixture: the stream and its expected traces."),
    "serve": Entry("webapp.cli.serve:serve", "Run the web app."),
    "record": Entry("webapp.cli.record:record",
                    "Record streams through a proxy into .sse files (no web app)."),
    "replay": Entry("webapp.cli.replay:replay",
                    "Serve a recorded stream to an application's client (no store)."),
    "delete": Entry("webapp.cli.streams:delete", "Remove a stored stream (the operator)."),
}  # fmt: skip
"""Every command by name; `minimize` is the other spelling of `minimise`."""


class Commands(click.Group):
    """A group whose commands are imported when one is asked for, not when the group is."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attribute = entry.target.partition(":")
        with loading():  # a command's modules: as for click above
            command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name].short_help) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="streamviz")
def main() -> None:
    """See how a chat-completions stream's delta.tool_calls fragments assemble into calls.

    FILE is a recorded stream (raw SSE, a curl -i dump, a JSON array, JSON Lines, a HAR file,
    or printed openai-python chunks), detected unless --input-format names it; '-' reads
    standard input. Exit codes: 0 fine, 1 errors found (check only; --strict: any anomaly),
    2 unusable input or arguments, 141 output cut short (| head).
    """
