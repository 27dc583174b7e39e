"""`pebrel collab --principal ID ...`: every verb over the integration socket as a principal (#17).

The token comes only from the credential file `PEBREL_INTEGRATION_CREDENTIAL_FILE` names (I1.3:
this user's regular file, not a symbolic link, private to its owner; the principal in it must
be ID); anything else is refused before connecting, and there is no fallback to the runtime's
token. Output is the answer line as JSON. Exit statuses: 0 a result line; 1 an error line
(INCOMPATIBLE_INTEGRATION_PROTOCOL for a service of another protocol too); 2 usage (a refused
credential file included); 3 no collab service listening (an INTEGRATION_RUNTIME_UNAVAILABLE
line is printed); 4 no answer within the deadline (a `client_timeout` line).
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click

import pebrel
from pebrel import integration_client as client
from pebrel import integration_wire as wire
from pebrel.cli import output
from pebrel.cli.params import Request
from pebrel.datadir import data_dir_name
from pebrel.errors import ErrorCode, PebrelError


class CredentialUsageError(click.ClickException):
    """The credential file is unusable: nothing was sent (exit 2, like a usage error)."""

    exit_code = output.EXIT_USAGE


def credential(principal: str) -> client.Credential:
    """The credential for ``principal`` from the file the environment names, or exit 2."""
    path = os.environ.get(client.CREDENTIAL_ENV)
    if not path:
        raise CredentialUsageError(
            f"--principal needs {client.CREDENTIAL_ENV} naming its credential file"
        )
    try:
        found = client.read_credential(path)
    except client.CredentialRefused as exc:
        raise CredentialUsageError(str(exc)) from None
    except client.IntegrationRefused as exc:  # a credential for another protocol version
        finish(exc.line, False)
    if found.principal != principal:
        raise CredentialUsageError(
            f"the credential file {path} is for principal {found.principal!r}, not {principal!r}"
        )
    return found


def finish(line: dict[str, Any], pretty: bool, status: int | None = None) -> NoReturn:
    output.emit(line, pretty)
    if status is None:
        status = output.EXIT_OK if line.get("ok") is True else output.EXIT_ERROR
    sys.exit(status)


def call(principal: str, req: Request, pretty: bool) -> NoReturn:
    """Send ``req`` as ``principal``; print its answer line; exit 0, 1, 3 or 4."""
    found = credential(principal)
    method = req.method.removeprefix("collab.")
    try:
        with client.connect(data_dir_name(), found) as conn:
            line = conn.call(method, dict(req.params), timeout_s=req.timeout_s)
    except client.IntegrationRefused as exc:
        finish(exc.line, pretty, output.EXIT_ERROR)
    except client.IntegrationTimeout as exc:
        error = PebrelError(
            ErrorCode.CLIENT_TIMEOUT,
            f"{exc}; the request may still be carried out (retry a write with its key)",
            {"method": exc.method, "timeout_s": exc.timeout_s, "retryable": True},
        )
        finish(wire.error_line(None, error), pretty, output.EXIT_CLIENT_TIMEOUT)
    except client.IntegrationUnavailable as exc:
        finish(wire.error_line(None, exc.error), pretty, output.EXIT_UNAVAILABLE)
    except (OSError, ValueError) as exc:  # the connection broke, or a line was no JSON
        lost = client.IntegrationUnavailable(f"the connection to the collab service broke: {exc}")
        finish(wire.error_line(None, lost.error), pretty, output.EXIT_UNAVAILABLE)
    if method == "capabilities" and line.get("ok") is True and isinstance(line["result"], dict):
        line["result"]["cli_version"] = pebrel.__version__
    finish(line, pretty)
