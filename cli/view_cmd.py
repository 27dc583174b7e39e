"""`pebrel view [--port N] [--open]`: every pane live in a local web page (#21;
``cli/view_server.py`` describes the server and its protections)."""

from __future__ import annotations

import signal
import sys
import threading
import webbrowser
from types import FrameType

import click

from pebrel.cli.output import emit
from pebrel.cli.view_server import Poller, ViewServer
from pebrel.client import Client, RuntimeUnavailable, unavailable_envelope
from pebrel.envelope import error_response
from pebrel.errors import ErrorCode, PebrelError


@click.command("view")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port on 127.0.0.1 (0: a free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the login link in a browser.")
@click.option(
    "--allow-input",
    is_flag=True,
    help="Let the page type into panes (click a pane, then type); read-only without it.",
)
def view(port: int, open_browser: bool, allow_input: bool) -> None:
    """Serve every pane live on a local web page, with the attention inbox.

    Prints one envelope with the one-time login link (`result.url`), then serves until
    interrupted. The link works once; the page needs the cookie it sets. Read-only unless
    --allow-input: then a pane clicked on the page takes what you type (pane.user_input).
    """
    try:
        Client().close()  # the runtime answers, or the user learns why now
    except RuntimeUnavailable as exc:
        emit(unavailable_envelope(str(exc)), False)
        sys.exit(3)
    poller = Poller(lambda: Client(timeout_s=10.0))
    try:
        typist = (lambda: Client(timeout_s=10.0)) if allow_input else None
        server = ViewServer(port, poller, typist)
    except OSError as exc:
        refused = PebrelError(
            ErrorCode.ACTION_FAILED, f"cannot listen on 127.0.0.1:{port}: {exc}", {"port": port}
        )
        emit(error_response(None, refused), False)
        sys.exit(1)
    poller.start()
    result = {"url": server.login_url, "port": server.port, "allow_input": allow_input}
    emit({"ok": True, "result": result}, False)
    sys.stdout.flush()
    if open_browser:
        webbrowser.open(server.login_url)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        poller.stop()
        server.server_close()
