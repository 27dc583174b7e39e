"""The pane's mark secret: only the integration Pebrel injected into the pane's own shell knows it.

Any program in a pane can print ``ESC ] 133 ; D ; 0 BEL``: ``cat`` of a recorded terminal log,
``ssh`` or ``docker exec`` into a shell with its own integration, a test suite that prints
escapes. Pebrel therefore gives each pane a random secret and the injected bash/zsh/fish
integration appends it to every mark it prints, as a last field ``k=<secret>`` (OSC 133 A/B/C/D
and OSC 7). The worker takes a mark as a fact only when that field matches; any other mark is
just output (R5, R6.2).

The secret reaches the shell through a private file (created ``0600`` with ``O_EXCL``), never
through its contents in the environment: the shell inherits only the file's path, in
``PEBREL_SHELL_KEY_FILE``; the integration reads the file and unsets the variable before it
sources the user's own startup files (fish runs its ``--init-command`` after ``config.fish``,
so there the user's config runs first). zsh removes the file at once with its ``zf_rm``
builtin; for bash and fish, which have no such builtin (an ``rm`` process would cost every
pane's start a fork and an exec), the worker removes it when the first mark carrying the
secret arrives, which is the shell's first prompt, and in any case when it stops. The file lies
in the runtime's private ipc dir, named by the worker's pid (`pebrel.runtimelock.shell_key_file`):
the router removes the file of a worker killed before its shell's first prompt, and the
runtime's end removes the dir.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile

KEY_FILE_VAR = "PEBREL_SHELL_KEY_FILE"
"""The environment variable that names the key file for the shell's integration (it unsets it)."""

KEY_FIELD = "k="
"""The prefix of the last field of a mark that carries the pane's secret."""


class ShellKey:
    """One pane's secret and the file that hands it to the shell."""

    def __init__(self) -> None:
        self.value = secrets.token_hex(16)
        self._field = KEY_FIELD + self.value
        self._path: str | None = None

    def hand_over(self, path: str | None = None) -> str:
        """Write the secret to a new private file at `path` (a new temp file if None); return
        its path (for KEY_FILE_VAR)."""
        if path is None:
            fd, path = tempfile.mkstemp(prefix="pebrel-key-")  # 0600, O_EXCL
        else:
            with contextlib.suppress(FileNotFoundError):  # a dead worker's of the same pid
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, self.value.encode() + b"\n")
        finally:
            os.close(fd)
        self._path = path
        return path

    def discard(self) -> None:
        """Remove the key file if it is still there (the shell normally removed it)."""
        path, self._path = self._path, None
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def strip(self, payload: str) -> str | None:
        """``payload`` without its secret field, or None when it does not end with the secret.

        ``"D;0;k=<secret>"`` gives ``"D;0"``; ``"D;0"`` or a wrong secret give None.
        """
        body, sep, last = payload.rpartition(";")
        if not sep or not secrets.compare_digest(last, self._field):
            return None
        if self._path is not None:
            self.discard()
        return body
