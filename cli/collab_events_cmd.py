"""`pebrel collab --principal ID events subscribe|ack`: the durable event stream (I2, #17).

`subscribe --consumer NAME --jsonl [--timeout 60s]` prints one JSON object per line, flushed
per line: each `event` (with its `cursor`), each `heartbeat`, the stream's `error` line, and
the CLI's own `connection` lines: `{"type":"connection","state":"subscribed",...}` after each
successful subscribe, `{"type":"connection","state":"reconnecting",...}` before it connects
again. It reconnects after a lost connection, a silent one (no line, not even a heartbeat, for
two heartbeat intervals and 5 s), or a retryable error (`EVENT_CONSUMER_SLOW`,
`EVENT_CONSUMER_REPLACED`, the service restarting), waiting 0.2 s, doubling up to 10 s, back
to 0.2 s after a successful subscribe; the service replays from the consumer's durable ACK.
A terminal error line (revoked, retention gap, ...) ends it with status 1; `--timeout` ends it
with status 0; a refused credential file with status 2 (nothing is sent).

`ack CURSOR --consumer NAME` moves the consumer's durable ACK to CURSOR (the answer line, as
every `--principal` verb prints it). Both are for integration identities: they need
`--principal` (the socket's event stream has no user or session form).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import click

from pebrel import integration_client as client
from pebrel.cli import output
from pebrel.cli.collab_principal import credential
from pebrel.cli.collab_request import acting_principal, collab_request, read
from pebrel.cli.options import pretty_option
from pebrel.datadir import data_dir_name

BACKOFF_START_S = 0.2
BACKOFF_MAX_S = 10.0
#: A stream silent for this many heartbeat intervals (plus the slack) counts as lost.
SILENT_BEATS = 2
SILENT_SLACK_S = 5.0
#: Seconds to wait for the subscribe's answer (and for the hello) before trying again.
ANSWER_TIMEOUT_S = 30.0
REPLACED = "EVENT_CONSUMER_REPLACED"
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """`60s`, `500ms`, `5m`, `1h` or plain seconds; more than 0."""
    if value is None:
        return None
    found = _DURATION.fullmatch(value.strip())
    seconds = float(found[1]) * _UNITS[found[2]] if found else 0.0
    if seconds <= 0:
        raise click.BadParameter("a duration such as 60s, 500ms, 5m or 1h (more than 0)")
    return seconds


def principal_only(verb: str) -> str:
    principal = acting_principal()
    if principal is None:
        raise click.UsageError(
            f"`events {verb}` is for integration identities: "
            f"pebrel collab --principal ID events {verb} ..."
        )
    return principal


def emit(line: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed at once."""
    sys.stdout.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class Lost(Exception):
    """The stream ended in a way worth connecting again for; the message says why."""


class Subscriber:
    def __init__(self, cred: client.Credential, consumer: str, timeout_s: float | None) -> None:
        self.credential = cred
        self.consumer = consumer
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.backoff = BACKOFF_START_S
        #: Streams in a row that ended because another subscriber took the consumer over.
        self.replaced = 0

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def within(self, seconds: float) -> float:
        left = self.left()
        return seconds if left is None else max(min(seconds, left), 0.001)

    def run(self) -> int:
        while True:
            try:
                return self.once()
            except Lost as exc:
                reason = str(exc)
            left = self.left()
            if left is not None and left <= 0:
                return output.EXIT_OK
            delay = self.within(self.backoff)
            emit(
                {
                    "type": "connection",
                    "state": "reconnecting",
                    "reason": reason,
                    "retry_in_ms": round(delay * 1000),
                }
            )
            time.sleep(delay)  # the reconnect backoff
            self.backoff = min(self.backoff * 2, BACKOFF_MAX_S)

    def ended(self, line: dict[str, Any]) -> int:
        """An error line (already printed or not): Lost if retryable, else exit 1."""
        if line.get("retryable") is True:
            self.replaced = self.replaced + 1 if line.get("code") == REPLACED else 0
            raise Lost(str(line.get("code")))
        return output.EXIT_ERROR

    def once(self) -> int:
        left = self.left()
        if left is not None and left <= 0:
            return output.EXIT_OK
        try:
            conn = client.connect(
                data_dir_name(), self.credential, timeout_s=self.within(ANSWER_TIMEOUT_S)
            )
        except client.IntegrationRefused as exc:
            emit(exc.line)
            return self.ended(exc.line)
        except (client.IntegrationUnavailable, client.IntegrationTimeout, OSError) as exc:
            raise Lost(f"cannot connect: {exc}") from None
        except ValueError as exc:
            raise Lost(f"the service sent a broken line: {exc}") from None
        with conn:
            try:
                return self.stream(conn)
            except (client.IntegrationUnavailable, client.IntegrationTimeout, OSError) as exc:
                raise Lost(f"connection lost: {exc}") from None
            except ValueError as exc:
                raise Lost(f"the service sent a broken line: {exc}") from None

    def stream(self, conn: client.Connection) -> int:
        params = {"consumer": self.consumer}
        answer = conn.call("events.subscribe", params, timeout_s=self.within(ANSWER_TIMEOUT_S))
        if answer.get("ok") is not True:
            emit(answer)
            return self.ended(answer)
        result = answer.get("result") or {}
        # A stream that was taken over right away does not count as a success: two receivers
        # of one consumer back off instead of taking it from each other in a tight loop.
        self.backoff = min(BACKOFF_START_S * 2 ** min(self.replaced, 6), BACKOFF_MAX_S)
        emit({"type": "connection", "state": "subscribed", **result})
        heartbeat_s = float(result.get("heartbeat_s") or 15.0)
        silent_s = SILENT_BEATS * heartbeat_s + SILENT_SLACK_S
        while True:
            left = self.left()
            if left is not None and left <= 0:
                return output.EXIT_OK
            try:
                line = conn.read_line(self.within(silent_s))
            except TimeoutError:
                left = self.left()
                if left is not None and left <= 0:
                    return output.EXIT_OK
                raise Lost(f"no line, not even a heartbeat, in {silent_s:g} s") from None
            emit(line)
            if line.get("type") == "error":
                return self.ended(line)
            if line.get("type") == "event" and self.replaced:
                self.replaced = 0  # a stream that delivers is a success
                self.backoff = BACKOFF_START_S


@click.command("subscribe")
@click.option("--consumer", required=True, help="The consumer's name (1-64 letters, digits, .-_).")
@click.option("--jsonl", is_flag=True, help="JSON Lines (the only format; may be omitted).")
@click.option(
    "--timeout",
    "timeout_s",
    callback=duration,
    help="End after this long with status 0 (60s, 500ms, 5m, 1h). Default: run until stopped.",
)
def subscribe(consumer: str, jsonl: bool, timeout_s: float | None) -> None:
    """Stream the principal's group's events as JSON Lines, reconnecting as needed."""
    del jsonl  # JSON Lines is the only output
    cred = credential(principal_only("subscribe"))
    try:
        status = Subscriber(cred, consumer, timeout_s).run()
    except KeyboardInterrupt:
        status = output.EXIT_OK
    except BrokenPipeError:  # whoever read our output is gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = output.EXIT_ERROR
    sys.exit(status)


@click.command("ack")
@click.argument("cursor")
@click.option("--consumer", required=True, help="The consumer whose ACK moves.")
@pretty_option
def ack(cursor: str, consumer: str, pretty: bool) -> None:
    """Acknowledge every event up to CURSOR for the consumer (after storing them durably)."""
    principal_only("ack")
    read(collab_request("events.ack", consumer=consumer, cursor=cursor), pretty)
