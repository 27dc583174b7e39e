"""`pebrel tab ...` and `pebrel window ...` resource verbs (R8.1)."""

from __future__ import annotations

import click

from pebrel.cli.lazygroup import LazyGroup
from pebrel.cli.output import call, pretty_option, prune, size_options, window_option


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
@click.option("--cwd", help="Working directory.")
@click.option("--shell", help="Shell id: bash, zsh, fish, sh or a settings.toml profile.")
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
    params = prune(window_id=window_id, cwd=cwd, shell=shell, cols=cols, rows=rows)
    call("tab.new", params, pretty)


@tab.command("close")
@click.argument("tab_index", type=click.IntRange(min=0))
@window_option
@click.option("--confirm", is_flag=True, help="Close even if something runs in it.")
@pretty_option
def tab_close(tab_index: int, window_id: int | None, confirm: bool, pretty: bool) -> None:
    """Close a tab."""
    params = prune(window_id=window_id, tab_index=tab_index, confirm=confirm or None)
    call("tab.close", params, pretty)


@click.group()
def window() -> None:
    """Create, focus and close windows."""


@window.command("create")
@click.option("--cwd", help="Working directory.")
@click.option("--shell", help="Shell id: bash, zsh, fish, sh or a settings.toml profile.")
@size_options
@pretty_option
def window_create(
    cwd: str | None, shell: str | None, cols: int | None, rows: int | None, pretty: bool
) -> None:
    """Create a window with one tab and one pane (200x50 unless --cols/--rows)."""
    call("window.create", prune(cwd=cwd, shell=shell, cols=cols, rows=rows), pretty)


@window.command("focus")
@click.argument("window_id", type=click.IntRange(min=1))
@click.option("--pane", "pane_id", type=click.IntRange(min=1), help="Also focus this pane.")
@pretty_option
def window_focus(window_id: int, pane_id: int | None, pretty: bool) -> None:
    """Focus a window (or one of its panes)."""
    call("window.focus", prune(window_id=window_id, pane_id=pane_id), pretty)


@window.command("close")
@click.argument("window_id", type=click.IntRange(min=1))
@click.option("--confirm", is_flag=True, help="Close even if something runs in it.")
@pretty_option
def window_close(window_id: int, confirm: bool, pretty: bool) -> None:
    """Close a window."""
    call("window.close", prune(window_id=window_id, confirm=confirm or None), pretty)
