"""The `pebrel` command: resource verbs, `ctl` (full protocol), `collab`, `env`, `runtime`.

Each command's module is imported only when that command runs (LazyGroup): this module is what
the console script imports on every call, so it stays cheap.
"""

from __future__ import annotations

import click

from pebrel import __version__
from pebrel.cli.lazygroup import LazyGroup

#: Every top-level command and where it lives ("module:attribute").
COMMANDS = {
    "agent": "pebrel.cli.agent_cmd:agent",
    "attach": "pebrel.cli.attach_cmd:attach",
    "collab": "pebrel.cli.collab_cmd:collab",
    "ctl": "pebrel.cli.ctl_cmd:ctl",
    "env": "pebrel.cli.env_cmd:env",
    "hook": "pebrel.cli.hook_cmd:hook",
    "integration": "pebrel.cli.integration_cmd:integration",
    "pane": "pebrel.cli.pane_cmd:pane",
    "runtime": "pebrel.cli.runtime_cmd:runtime",
    "tab": "pebrel.cli.layout_cmd:tab",
    "view": "pebrel.cli.view_cmd:view",
    "window": "pebrel.cli.layout_cmd:window",
}


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="pebrel")
def main() -> None:
    """Pebrel: a headless terminal runtime for agents and scripts."""
