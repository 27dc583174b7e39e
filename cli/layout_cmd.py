"""`pebrel tab ...` and `pebrel window ...` resource verbs (R8.1)."""

from __future__ import annotations

import click

from pebrel.cli import params
from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.options import (
    SHELL_HELP,
    confirm_option,
    cwd_option,
    pane_option,
    pretty_option,
    shell_option,
    size_options,
    tab_index_arg,
    window_arg,
    window_option,
)
from pebrel.cli.output import call


@click.group(
    cls=LazyGroup,
    lazy_commands={
        "rename": "pebrel.cli.layout_ops_cmd:rename",
        "move": "pebrel.cli.layout_ops_cmd:move",
    },
)
def tab() -> None:
    """Open and close tabs (zero-based index within a window)."""


@tab.command("new")
@window_option
@cwd_option("Working directory.")
@shell_option(SHELL_HELP)
@size_options
@pretty_option
def tab_new(
    window_id: int | None,
    cwd: str | None,
    shell: str | None,
    cols: int | None,
    rows: int | None,
    pretty: bool,
) -> None:
    """Open a tab (the size of the window's active tab unless --cols/--rows)."""
    call(params.tab_new(window_id=window_id, cwd=cwd, shell=shell, cols=cols, rows=rows), pretty)


@tab.command("close")
@tab_index_arg
@window_option
@confirm_option
@pretty_option
def tab_close(tab_index: int, window_id: int | None, confirm: bool, pretty: bool) -> None:
    """Close a tab."""
    call(params.tab_close(window_id=window_id, tab_index=tab_index, confirm=confirm), pretty)


@click.group()
def window() -> None:
    """Create, focus and close windows."""


@window.command("create")
@cwd_option("Working directory.")
@shell_option(SHELL_HELP)
@size_options
@pretty_option
def window_create(
    cwd: str | None, shell: str | None, cols: int | None, rows: int | None, pretty: bool
) -> None:
    """Create a window with one tab and one pane (200x50 unless --cols/--rows)."""
    call(params.window_create(cwd=cwd, shell=shell, cols=cols, rows=rows), pretty)


@window.command("focus")
@window_arg
@pane_option(help="Also focus this pane.")
@pretty_option
def window_focus(window_id: int, pane_id: int | None, pretty: bool) -> None:
    """Focus a window (or one of its panes)."""
    call(params.window_focus(window_id=window_id, pane_id=pane_id), pretty)


@window.command("close")
@window_arg
@confirm_option
@pretty_option
def window_close(window_id: int, confirm: bool, pretty: bool) -> None:
    """Close a window."""
    call(params.window_close(window_id=window_id, confirm=confirm), pretty)
