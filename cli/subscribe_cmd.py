"""`pebrel ctl subscribe`: the ack line, then one event per line (R2.7; `pane.screens`: #21)."""

from __future__ import annotations

import json
import sys

import click

from pebrel.cli import params
from pebrel.cli.output import EXIT_ERROR, EXIT_OK, EXIT_UNAVAILABLE, emit
from pebrel.client import Client, RuntimeUnavailable, unavailable_envelope


@click.command("subscribe")
@click.option("--since", "since_revision", type=click.IntRange(min=0), help="Last revision seen.")
@click.option("--runtime-id", help="runtime_id that --since belongs to.")
@click.option("--count", type=click.IntRange(min=1), help="Exit after this many events.")
@click.option(
    "--screens", is_flag=True, help="Also pane.screens events: panes whose screen changed."
)
def subscribe(
    since_revision: int | None, runtime_id: str | None, count: int | None, screens: bool
) -> None:
    """Stream snapshots (and with --screens, screen changes) as JSON Lines until interrupted."""
    try:
        client = Client(timeout_s=None)
    except (RuntimeUnavailable, OSError) as exc:
        emit(unavailable_envelope(str(exc)), False)
        sys.exit(EXIT_UNAVAILABLE)
    seen = 0
    try:
        req = params.events_subscribe(
            since_revision=since_revision, runtime_id=runtime_id, screens=screens
        )
        client.send(req.method, req.params)
        while count is None or seen < count:
            line = client.read_line()
            click.echo(json.dumps(line, ensure_ascii=False), nl=True)
            sys.stdout.flush()
            if line.get("ok") is False:
                sys.exit(EXIT_ERROR)
            if line.get("type") == "event":
                seen += 1
    except (RuntimeUnavailable, OSError) as exc:
        emit(unavailable_envelope(str(exc)), False)
        sys.exit(EXIT_UNAVAILABLE)
    except KeyboardInterrupt:
        pass
    finally:
        client.close()
    sys.exit(EXIT_OK)
