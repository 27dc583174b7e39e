"""`pebrel pane zoom|resize`, `pebrel tab rename|move` (R3.3, R3.5)."""

from __future__ import annotations

import click

from pebrel.cli import params
from pebrel.cli.options import pane_arg, pretty_option, tab_index_arg, window_option
from pebrel.cli.output import call


def _bool(value: str) -> bool:
    return value.lower() in ("true", "1", "yes", "on")


@click.command("zoom")
@pane_arg
@window_option
@click.option(
    "--zoomed",
    type=click.Choice(["true", "false"], case_sensitive=False),
    default="true",
    show_default=True,
    help="Explicit state; never a toggle.",
)
@pretty_option
def zoom(pane_id: int, window_id: int | None, zoomed: str, pretty: bool) -> None:
    """Zoom a pane to its whole tab (or unzoom with --zoomed false)."""
    call(params.pane_zoom(window_id=window_id, pane_id=pane_id, zoomed=_bool(zoomed)), pretty)


@click.command("resize")
@pane_arg
@click.argument("ratio", type=click.FloatRange(0.05, 0.95))
@window_option
@pretty_option
def resize(pane_id: int, ratio: float, window_id: int | None, pretty: bool) -> None:
    """Set the pane's share (0.05-0.95) of its direct parent split."""
    call(params.pane_resize(window_id=window_id, pane_id=pane_id, ratio=ratio), pretty)


@click.command("rename")
@tab_index_arg
@click.argument("name", required=False)
@window_option
@click.option("--clear", is_flag=True, help="Remove the custom name.")
@pretty_option
def rename(
    tab_index: int, name: str | None, window_id: int | None, clear: bool, pretty: bool
) -> None:
    """Set a tab's custom name (or --clear it)."""
    if clear == (name is not None):
        raise click.UsageError("give either NAME or --clear")
    call(params.tab_rename(window_id=window_id, tab_index=tab_index, name=name), pretty)


@click.command("move")
@tab_index_arg
@click.argument("to_index", type=click.IntRange(min=0))
@window_option
@pretty_option
def move(tab_index: int, to_index: int, window_id: int | None, pretty: bool) -> None:
    """Move a tab to another index within its window."""
    call(params.tab_move(window_id=window_id, tab_index=tab_index, to_index=to_index), pretty)
