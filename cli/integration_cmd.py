"""`pebrel integration groups|list|create|update|revoke`: the local user manages principals
(FEATURES I1.1-I1.5, #17).

Every verb first reads the running service's `collab.capabilities` and refuses (exit 1, a
`FEATURE_UNSUPPORTED` error envelope) what that service cannot do: no `principals` feature
refuses every verb (an upgraded CLI against an older runtime), a profile's `startupInput`
needs `startup_input_conditions`, and `update` needs `integration_policy_update`. A policy is
never configured with a part silently dropped.

`create --file POLICY --credential-file OUT`:
1. OUT must not exist (a dangling symbolic link counts): checked before anything is sent;
2. the token is made here (`secrets.token_urlsafe(32)`: 256 random bits);
3. OUT is created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, the credential JSON
   `{"principal", "token", "protocol": "pebrel.integration", "version": 1}` written and
   fsynced (and its directory);
4. `collab.integration.create` is sent with the policy and the token's SHA-256 only;
5. refused: OUT is removed; answered: only the id and OUT's path are printed. Unanswered (the
   connection lost, no answer in time): the outcome is unknown, OUT is kept and the error says
   how to tell (`pebrel integration list`).
The token is never in argv, the environment, a log, an answer or the output.

Exit statuses are the other verbs' (pebrel.cli.output): 0 ok, 1 an error envelope, 2 usage, 3
no runtime, 4 no answer in time.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

import click

from pebrel import integration_wire as wire
from pebrel.cli import output
from pebrel.cli.options import pretty_option, read_text_source
from pebrel.client import (
    Client,
    ClientTimeout,
    RuntimeUnavailable,
    timeout_envelope,
    unavailable_envelope,
)

CREDENTIAL_MODE = 0o600


def refusal(code: str, message: str, **details: Any) -> dict[str, Any]:
    """An error envelope of the collab layer's table (pebrel.errors.CollabCode)."""
    from pebrel.envelope import error_response
    from pebrel.errors import CollabCode, CollabError

    return error_response(None, CollabError(CollabCode(code), message, details))


def fail(envelope: dict[str, Any], pretty: bool, status: int = output.EXIT_ERROR) -> NoReturn:
    output.emit(envelope, pretty)
    sys.exit(status)


class Admin:
    """One connection to the runtime for one verb: capabilities first, then the request."""

    def __init__(self, pretty: bool) -> None:
        self.pretty = pretty
        try:
            self.client = Client()
        except (RuntimeUnavailable, OSError) as exc:
            fail(unavailable_envelope(str(exc)), pretty, output.EXIT_UNAVAILABLE)
        self.features = self.read_features()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer envelope; no answer prints the client's envelope and exits 3 or 4."""
        try:
            return self.client.call(method, params)
        except ClientTimeout as exc:
            fail(timeout_envelope(exc), self.pretty, output.EXIT_CLIENT_TIMEOUT)
        except (RuntimeUnavailable, OSError) as exc:
            fail(unavailable_envelope(str(exc)), self.pretty, output.EXIT_UNAVAILABLE)

    def read_features(self) -> dict[str, Any]:
        envelope = self.call("collab.capabilities", {})
        if not envelope.get("ok"):
            fail(envelope, self.pretty)
        features = envelope.get("result", {}).get("features")
        features = features if isinstance(features, dict) else {}
        if features.get("principals") is not True:
            fail(
                refusal(
                    "FEATURE_UNSUPPORTED",
                    "the running collab service has no integration identities (feature"
                    " principals); upgrade and restart the runtime",
                    feature="principals",
                ),
                self.pretty,
            )
        return features

    def require(self, feature: str, why: str) -> None:
        if self.features.get(feature) is not True:
            fail(
                refusal(
                    "FEATURE_UNSUPPORTED",
                    f"the running collab service cannot {why} (feature {feature}); nothing was"
                    " configured",
                    feature=feature,
                ),
                self.pretty,
            )

    def require_policy(self, policy: Any) -> None:
        """Refuse a policy that holds what the service lacks (a startupInput condition)."""
        profiles = policy.get("launchProfiles") if isinstance(policy, dict) else None
        for profile in profiles if isinstance(profiles, list) else []:
            if isinstance(profile, dict) and "startupInput" in profile:
                self.require(
                    "startup_input_conditions", "wait for a launch profile's startupInput screen"
                )

    def finish(self, method: str, params: dict[str, Any]) -> NoReturn:
        output.finish(self.call(method, params), self.pretty)


def read_policy(path: str) -> Any:
    """The policy file's JSON (a usage error when it cannot be read or parsed)."""
    text = read_text_source(path)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise click.UsageError(f"{path} is not valid JSON: {exc}") from exc


def policy_id(policy: Any) -> str | None:
    found = policy.get("id") if isinstance(policy, dict) else None
    return found if isinstance(found, str) else None


def write_credential(path: str, principal_id: str, token: str) -> os.stat_result:
    """Create ``path`` 0600 with O_EXCL|O_NOFOLLOW, write the credential and fsync it (and its
    directory). Returns the file's identity, so only this file is ever removed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, CREDENTIAL_MODE)
    except OSError as exc:
        raise click.UsageError(f"--credential-file {path}: {exc.strerror}") from exc
    try:
        os.fchmod(fd, CREDENTIAL_MODE)  # whatever the umask
        body = {
            "principal": principal_id,
            "token": token,
            "protocol": wire.PROTOCOL,  # what `pebrel collab --principal` checks
            "version": wire.VERSION,
        }
        os.write(fd, (json.dumps(body) + "\n").encode())
        os.fsync(fd)
        made = os.fstat(fd)
    except OSError:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    sync_directory(os.path.dirname(path) or ".")
    return made


def sync_directory(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_credential(path: str, made: os.stat_result) -> None:
    """Remove the credential file this command made (never another file put in its place)."""
    try:
        now = os.lstat(path)
    except OSError:
        return
    if (now.st_dev, now.st_ino) == (made.st_dev, made.st_ino):
        os.unlink(path)


#: The router's answer for a request whose collab service is gone (or was never there).
SERVICE_GONE = "INTEGRATION_RUNTIME_UNAVAILABLE"


def error_code(envelope: dict[str, Any]) -> object:
    error = envelope.get("error")
    return error.get("code") if isinstance(error, dict) else None


def outcome_unknown(envelope: dict[str, Any], principal_id: str, path: str) -> dict[str, Any]:
    """A create whose answer was lost: the envelope says so, and where the credential is."""
    envelope["error"].setdefault("details", {}).update(
        outcome="unknown",
        credential_file=path,
        hint=f"`pebrel integration list` shows whether {principal_id} exists; if it does"
        f" not, remove {path} and create again",
    )
    return envelope


@click.group()
def integration() -> None:
    """Integration identities (principals): restricted identities for outside programs."""


@integration.command("groups")
@pretty_option
def groups(pretty: bool) -> None:
    """The local groups an identity can be bound to (their ids go in a policy's groupId)."""
    Admin(pretty).finish("collab.integration.groups", {})


@integration.command("list")
@pretty_option
def list_principals(pretty: bool) -> None:
    """Every identity, revoked ones too (never a token, hash or launch command)."""
    Admin(pretty).finish("collab.integration.list", {})


@integration.command("create")
@click.option("--file", "policy_file", required=True, help="The policy file (JSON; - reads stdin).")
@click.option(
    "--credential-file",
    "credential_file",
    required=True,
    help="Where to write the new credential (must not exist; created 0600).",
)
@pretty_option
def create(policy_file: str, credential_file: str, pretty: bool) -> None:
    """Create an identity from POLICY and write its credential to a new file; prints only the
    identity's id and the file's path."""
    import secrets

    policy = read_policy(policy_file)
    path = os.path.abspath(credential_file)
    if os.path.lexists(path):
        raise click.UsageError(
            f"--credential-file {path} exists; a credential is only ever written to a new file"
        )
    admin = Admin(pretty)
    admin.require_policy(policy)
    principal_id = policy_id(policy)
    if principal_id is None:
        # No credential for a policy without an id: the service names the problem
        # (INVALID_POLICY) for a hash nothing holds.
        admin.finish("collab.integration.create", {"policy": policy, "token_sha256": "0" * 64})
    token = secrets.token_urlsafe(32)
    made = write_credential(path, principal_id, token)
    params = {"policy": policy, "token_sha256": wire.token_hash(token)}
    try:
        envelope = admin.client.call("collab.integration.create", params)
    except ClientTimeout as exc:
        unknown = outcome_unknown(timeout_envelope(exc), principal_id, path)
        fail(unknown, pretty, output.EXIT_CLIENT_TIMEOUT)
    except (RuntimeUnavailable, OSError) as exc:
        unknown = outcome_unknown(unavailable_envelope(str(exc)), principal_id, path)
        fail(unknown, pretty, output.EXIT_UNAVAILABLE)
    if not envelope.get("ok"):
        if error_code(envelope) == SERVICE_GONE:
            # The service exited with the create in flight (the router's answer): it may
            # have stored the identity, so its credential stays.
            fail(outcome_unknown(envelope, principal_id, path), pretty, output.EXIT_UNAVAILABLE)
        remove_credential(path, made)
        fail(envelope, pretty)
    envelope["result"] = {"principal_id": principal_id, "credential_file": path}
    output.finish(envelope, pretty)


@integration.command("update")
@click.option(
    "--file", "policy_file", required=True, help="The whole new policy (JSON; - reads stdin)."
)
@pretty_option
def update(policy_file: str, pretty: bool) -> None:
    """Replace an identity's permissions and launch profiles with POLICY's (the same id and
    groupId); its credential and history stay."""
    policy = read_policy(policy_file)
    admin = Admin(pretty)
    admin.require("integration_policy_update", "update an identity's policy")
    admin.require_policy(policy)
    admin.finish("collab.integration.update", {"policy": policy})


@integration.command("revoke")
@click.argument("principal_id", metavar="ID")
@pretty_option
def revoke(principal_id: str, pretty: bool) -> None:
    """Revoke identity ID: its later requests are refused and its open event streams end."""
    Admin(pretty).finish("collab.integration.revoke", {"id": principal_id})
