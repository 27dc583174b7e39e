"""The `pebrel` command: resource verbs, `ctl` (full protocol), `env`, `runtime`."""

from __future__ import annotations

import click

from cli.ctl_cmd import ctl
from cli.env_cmd import env
from cli.layout_cmd import tab, window
from cli.pane_cmd import pane
from cli.runtime_cmd import runtime
from pebrel import __version__

# Modules that add commands to the groups above (imported for that effect).
from cli import layout_ops_cmd, subscribe_cmd  # noqa: F401  isort: skip
from cli import agent_cmd, ctl_agent_cmd, hook_cmd  # noqa: F401  isort: skip


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pebrel")
def main() -> None:
    """Pebrel: a headless terminal runtime for agents and scripts."""


for command in (runtime, env, pane, tab, window, ctl, agent_cmd.agent, hook_cmd.hook):
    main.add_command(command)
