"""What an SSH pane runs on the remote host, and what it says when the host key is refused.

The remote command (R11.1, R7): ``[cd -- DIR &&] exec env VARS... SHELL``. The variables are
set in the command because a stock sshd refuses environment requests beyond ``LANG``/``LC_*``.
Without integration the user's login shell runs (``$SHELL -l``, as ``ssh`` gives it); with
``integration = true`` it is bash with Pebrel's integration (``workers/shellinit/bash.sh``),
uploaded over its own exec channel into a private directory (``mktemp -d``, mode 0700) with
the pane's mark secret in a file of its own (never in a command line a remote ``ps`` shows);
the rcfile takes the secret and removes the directory before anything of the user's runs.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pebrel.workers.shells import BASH_RCFILE

if TYPE_CHECKING:
    import asyncssh

    from pebrel.workers.shellkey import ShellKey

#: The login shell of the remote account, as `ssh host` would start it.
LOGIN_SHELL = "sh -c 'exec \"${SHELL:-/bin/sh}\" -l'"
#: Makes a private directory, puts the secret (first input line) and the rcfile (the rest)
#: in it, and prints the directory, then "read" if this bash reads /etc/bash.bashrc itself.
UPLOAD = (
    'umask 077 && d=$(mktemp -d "${TMPDIR:-/tmp}/pebrel.XXXXXXXX") && '
    'IFS= read -r k && printf "%s\\n" "$k" >"$d/key" && cat >"$d/rc" && printf "%s\\n" "$d" && '
    '{ grep -qa /etc/bash.bashrc "$(command -v bash)" 2>/dev/null && echo read || echo; }'
)
#: Before the uploaded bash.sh (bash has read the whole rcfile by then): take the secret and
#: remove the directory at once, before the user's ~/.bashrc runs (it may exec another shell).
RC_HEAD = (
    "__pebrel_rc_dir=${PEBREL_REMOTE_RC_DIR-}\nunset PEBREL_REMOTE_RC_DIR\n"
    'IFS= read -r __pebrel_preset_key 2>/dev/null <"$PEBREL_SHELL_KEY_FILE"\n'
    "unset PEBREL_SHELL_KEY_FILE\n"
    '[[ -n $__pebrel_rc_dir ]] && command rm -rf -- "$__pebrel_rc_dir"\n'
    "unset __pebrel_rc_dir\n"
)
UPLOAD_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class RemoteRc:
    directory: str
    reads_system_rc: bool


def remote_command(env: dict[str, str], cwd: str, rc: RemoteRc | None) -> str:
    """The command the SSH session executes (POSIX shell syntax)."""
    assigns = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    if rc is None:
        shell = LOGIN_SHELL
    else:
        directory = shlex.quote(rc.directory)
        assigns.append(f"PEBREL_SHELL_KEY_FILE={directory}/key")
        assigns.append(f"PEBREL_REMOTE_RC_DIR={directory}")
        if rc.reads_system_rc:
            assigns.append("PEBREL_BASH_SYSTEM_RC=read")
        shell = f"bash --rcfile {directory}/rc -i"
    command = f"exec env {' '.join(assigns)} {shell}"
    return f"{cd_command(cwd)} && {command}" if cwd not in ("", "~") else command


def cd_command(cwd: str) -> str:
    """``cd`` to a remote directory; a leading ``~`` is the remote home (left unquoted)."""
    if cwd == "~":
        return "cd"
    if cwd.startswith("~/"):
        return "cd -- ~/" + shlex.quote(cwd[2:])
    return "cd -- " + shlex.quote(cwd)


async def upload_integration(conn: asyncssh.SSHClientConnection, key: ShellKey) -> RemoteRc:
    """Put Pebrel's bash integration and the pane's secret on the remote host."""
    rc = RC_HEAD + BASH_RCFILE.read_text(encoding="utf-8")
    result = await conn.run(  # through sh: the account's login shell may be fish or csh
        "sh -c " + shlex.quote(UPLOAD),
        input=key.value + "\n" + rc,
        check=False,
        timeout=UPLOAD_TIMEOUT_S,
    )
    lines = str(result.stdout or "").splitlines()
    if result.exit_status != 0 or not lines or not lines[0].startswith("/"):
        error = str(result.stderr or "").strip() or f"exit status {result.exit_status}"
        raise IntegrationFailed(f"the shell integration could not be installed: {error}")
    return RemoteRc(lines[0], len(lines) > 1 and lines[1] == "read")


class IntegrationFailed(Exception):
    """The remote host did not take the integration (no mktemp, a read-only tmp, ...)."""


@dataclass(frozen=True, slots=True)
class HostKeyReport:
    """Why a host key was refused: the host is unknown to known_hosts, or its key changed."""

    known_hosts: str
    host: str
    port: int

    def reason(self) -> str:
        import asyncssh

        try:
            keys, cas, *_ = asyncssh.match_known_hosts(
                self.known_hosts, self.host, self.host, self.port
            )
        except (OSError, ValueError, asyncssh.Error):
            keys, cas = [], []
        where = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        if keys or cas:
            return (
                f"host key mismatch: the key {where} offered is not the one {self.known_hosts} "
                "has for it (the host key changed); refused"
            )
        return (
            f"unknown host key: {self.known_hosts} has no key for {where}; refused (add it "
            "with ssh-keyscan after checking it)"
        )
