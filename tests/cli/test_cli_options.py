"""The options `serve` and `record` share are declared once (`webapp.cli.serving`): each such
option is the same in both commands but for its help and what a command adds on purpose."""

from __future__ import annotations

from typing import Any

import click

from webapp.cli import serving
from webapp.cli.record import record
from webapp.cli.serve import serve

ON_PURPOSE = {
    "--port": {"default"},  # serve listens on 8000, record on 8001
    "--upstream": {"required", "envvar"},  # record needs one; serve reads $STREAMVIZ_UPSTREAM
}
"""What may differ between the two commands' declarations of an option, besides its help."""


def _options(command: click.Command) -> dict[str, dict[str, Any]]:
    return {
        param.opts[-1]: param.to_info_dict()
        for param in command.params
        if isinstance(param, click.Option)
    }


def test_the_options_serve_and_record_share_are_declared_once() -> None:
    ours, theirs = _options(serve), _options(record)
    both = set(ours) & set(theirs)
    assert both == {*serving.DECLARED, "--host", "--port"}
    for name in both:
        skip = {"help", *ON_PURPOSE.get(name, ())}
        mine = {key: value for key, value in ours[name].items() if key not in skip}
        other = {key: value for key, value in theirs[name].items() if key not in skip}
        assert mine == other, name
        assert ours[name]["help"] and theirs[name]["help"], name
