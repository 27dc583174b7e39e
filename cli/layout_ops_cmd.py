"""`pebrel pane zoom|resize`, `pebrel tab rename|move` (R3.3, R3.5)."""

from __future__ import annotations

import click

from pebrel.cli.output import call, pretty_option, prune, window_option


def _bool(value: str) -> bool:
    return value.lower() in ("true", "1", "yes", "on")


@click.command("zoom")
@click.argument("pane_id", type=click.IntRange(min=1))
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
    call("pane.zoom", prune(window_id=window_id, pane_id=pane_id, zoomed=_bool(zoomed)), pretty)


@click.command("resize")
@click.argument("pane_id", type=click.IntRange(min=1))
@click.argument("ratio", type=click.FloatRange(0.05, 0.95))
@window_option
@pretty_option
def resize(pane_id: int, ratio: float, window_id: int | None, pretty: bool) -> None:
    """Set the pane's share (0.05-0.95) of its direct parent split."""
    call("pane.resize", prune(window_id=window_id, pane_id=pane_id, ratio=ratio), pretty)


@click.command("rename")
@click.argument("tab_index", type=click.IntRange(min=0))
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
    params = prune(window_id=window_id, tab_index=tab_index)
    params["name"] = None if clear else name
    call("tab.rename", params, pretty)


@click.command("move")
@click.argument("tab_index", type=click.IntRange(min=0))
@click.argument("to_index", type=click.IntRange(min=0))
@window_option
@pretty_option
def move(tab_index: int, to_index: int, window_id: int | None, pretty: bool) -> None:
    """Move a tab to another index within its window."""
    call("tab.move", prune(window_id=window_id, tab_index=tab_index, to_index=to_index), pretty)
