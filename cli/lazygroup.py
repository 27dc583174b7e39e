"""Click groups that import a subcommand's module only when that subcommand is needed.

Every `pebrel` call is a fresh interpreter, so each module imported up front is paid on every call.
The hot verbs (`pane read`, `pane send`, `hook`, ...) stay near the bare interpreter cost by loading
only the module of the command that runs (issue 6).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click


class LazyGroup(click.Group):
    """A group whose `lazy_commands` ({name: "module:attribute"}) are imported on first use.

    Resolving a command imports its module alone. Listing them (help, completion) imports them
    all; so does an unknown name, so that click's "Did you mean" hint sees every command.
    """

    def __init__(
        self, *args: Any, lazy_commands: Mapping[str, str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, str] = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            self.add_command(self._import(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:
            self.load_all(ctx)
        return super().resolve_command(ctx, args)

    def load_all(self, ctx: click.Context) -> None:
        for name in self.list_commands(ctx):
            self.get_command(ctx, name)

    def _import(self, cmd_name: str) -> click.Command:
        module_name, _, attribute = self.lazy_commands[cmd_name].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attribute} is not a click command")
        return command
