"""The SSH pane backend (R11.1): a remote shell on a PTY channel, behind PosixPty's interface.

The worker reads and writes a pane through one file descriptor (read, waiting, write, resize,
foreground_pgid, reap, kill, close_fd). Here that descriptor is one end of a socket pair; the
other end is bridged, on the worker's own asyncio loop, to an ``asyncssh`` session with a
remote PTY: the pane's screen, history, reads and waits are the same code as a local pane's.
asyncssh is an SSHv2 implementation on asyncio (the worker's loop) with explicit connection
steps, known_hosts checks, and agent and key authentication.

The connection goes through its phases, each reported to the router (``SshPhase``):
``resolving`` (the host's addresses), ``connecting`` (TCP), ``authenticating`` (key exchange,
the host key against known_hosts, then keys from the agent or files; never a password),
``opening_shell`` (a session with a PTY running the remote command), ``ready``; or ``failed``
with the reason. Nothing reaches the screen before ``ready``; a connection lost without the
remote shell's exit status is ``failed``, and the pane exits with the reason.

A stock sshd drops unauthenticated connections past ``MaxStartups`` (10): the SSH panes of one
runtime start at most ``SLOTS_PER_HOST`` connections to one host at a time (a lock file per
slot in the runtime's private ipc dir, held until authentication ends; a dead worker's lock is
released by the kernel).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import shlex
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from pebrel.workers.pty import ExitStatus, read_now, waiting_bytes, write_now
from pebrel.workers.ssh_remote import (
    HostKeyReport,
    IntegrationFailed,
    RemoteRc,
    remote_command,
    upload_integration,
)

if TYPE_CHECKING:
    import asyncssh

    from pebrel.workers.shellkey import ShellKey

logger = logging.getLogger(__name__)

#: Connections to one host that authenticate at once, per runtime (sshd's MaxStartups is 10).
SLOTS_PER_HOST = 4
SLOT_POLL_S = 0.02
CONNECT_TIMEOUT_S = 15.0
LOGIN_TIMEOUT_S = 30.0
KEEPALIVE_S = 15.0
TERM_TYPE = "xterm-256color"

PhaseReport = Callable[[str, str | None], None]


class SshPty:
    """An SSH pane's terminal: call :meth:`start` on the worker's loop once it can report."""

    def __init__(
        self,
        ssh: dict[str, Any],
        env: dict[str, str],
        cwd: str,
        cols: int,
        rows: int,
        key: ShellKey | None = None,
    ) -> None:
        self.pid = 0  # no local process: the remote shell's is not ours to see
        self.ssh = ssh
        self.env = env
        self.cwd = cwd
        self.size = (cols, rows)
        self.key = key
        ours, self._bridge = socket.socketpair()
        for end in (ours, self._bridge):
            end.setblocking(False)
        self._ours = ours
        self.fd = ours.fileno()
        self._conn: asyncssh.SSHClientConnection | None = None
        self._chan: asyncssh.SSHClientChannel[bytes] | None = None
        self._task: asyncio.Task[None] | None = None
        self._pending = bytearray()  # remote output the worker has not taken yet
        self._paused = False
        self._ended = False
        self._status: ExitStatus | None = None
        self._report: PhaseReport = lambda phase, error: None
        self._rc: RemoteRc | None = None  # the integration, once uploaded
        self.phase = "resolving"

    # -- the interface the worker uses ------------------------------------------------------
    def read(self, size: int = 65536) -> bytes | None:
        return read_now(self.fd, size, (errno.ECONNRESET, errno.EBADF))

    def waiting(self) -> int:
        return waiting_bytes(self.fd)

    def write(self, data: bytes) -> int:
        return write_now(self.fd, data)

    def resize(self, cols: int, rows: int) -> None:
        self.size = (cols, rows)
        if self._chan is not None and not self._ended:
            with contextlib.suppress(Exception):
                self._chan.change_terminal_size(cols, rows)

    def foreground_pgid(self) -> int | None:
        return None  # the remote terminal's foreground is not visible from here

    def reap(self) -> ExitStatus | None:
        return self._status

    def kill(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._conn is not None:
            self._conn.abort()
        self._finish(ExitStatus(None, None, "closed"))

    def close_fd(self) -> None:
        for end in (self._ours, self._bridge):
            with contextlib.suppress(OSError):
                end.close()

    # -- the connection -----------------------------------------------------------------------
    def start(self, report: PhaseReport) -> None:
        self._report = report
        self._task = asyncio.get_running_loop().create_task(self._connect())

    def _phase(self, phase: str, error: str | None = None) -> None:
        self.phase = phase
        logger.info("ssh phase", extra={"phase": phase, "error": error})
        self._report(phase, error)

    async def _connect(self) -> None:
        try:
            await self._open()
        except asyncio.CancelledError:
            self._abort()
            raise
        except Exception as exc:
            reason = failure_reason(exc, self.ssh)
            self._phase("failed", reason)
            self._finish(ExitStatus(None, None, f"ssh: {reason}"))
            await self._remove_upload()
            self._abort()

    def _abort(self) -> None:
        """Drop the connection at once (a failed start must not keep one open)."""
        if self._conn is not None:
            self._conn.abort()

    async def _remove_upload(self) -> None:
        """After a failure past the integration's upload: remove it from the remote host."""
        if self._conn is None or self._rc is None or self._chan is not None:
            return
        with contextlib.suppress(Exception):
            command = "rm -rf -- " + shlex.quote(self._rc.directory)
            await self._conn.run(command, check=False, timeout=5)

    async def _open(self) -> None:
        import asyncssh

        ssh = self.ssh
        host, port = ssh["host"], ssh["port"]
        self._phase("resolving")
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Unreachable(f"cannot resolve {host}: {exc}") from exc
        self._phase("connecting")
        # Slots by the address the host resolved to: two names of one host share them.
        async with host_slot(ssh["slots_dir"], str(infos[0][4][0]), port):
            sock = await _tcp_connect(infos, host, port)
            self._phase("authenticating")
            known_hosts = ssh["known_hosts"]
            identity = ssh.get("identity_file")
            if identity and not os.access(identity, os.R_OK):
                sock.close()
                raise Refused(f"the identity_file {identity} cannot be read")
            if not os.path.isfile(known_hosts):
                sock.close()
                raise Refused(
                    f"no known_hosts file at {known_hosts}: the host key of {host} cannot be "
                    "checked (add it with ssh-keyscan, or set known_hosts in the profile)"
                )
            options: dict[str, Any] = {
                "username": ssh["user"],
                "known_hosts": known_hosts,
                "password_auth": False,
                "kbdint_auth": False,
                "config": None,
                "agent_path": ssh.get("agent_path"),
                "keepalive_interval": KEEPALIVE_S,
                "login_timeout": LOGIN_TIMEOUT_S,
            }
            if identity:
                options["client_keys"] = [identity]
            try:
                self._conn = await asyncio.wait_for(
                    asyncssh.connect(host, port, sock=sock, **options), LOGIN_TIMEOUT_S
                )
            except asyncssh.HostKeyNotVerifiable as exc:
                raise Refused(HostKeyReport(known_hosts, host, port).reason()) from exc
        self._phase("opening_shell")
        if self.key is not None:
            self._rc = await upload_integration(self._conn, self.key)
        command = remote_command(self.env, self.cwd, self._rc)
        cols, rows = self.size
        self._chan, _ = await self._conn.create_session(
            lambda: cast("asyncssh.SSHClientSession[bytes]", _Session(self)),
            command,
            term_type=TERM_TYPE,
            term_size=(cols, rows),
            request_pty="force",
            encoding=None,
        )
        loop.add_reader(self._bridge.fileno(), self._from_worker)
        self._phase("ready")
        if self.size != (cols, rows):  # resized while the session opened
            self.resize(*self.size)

    # -- the bridge ---------------------------------------------------------------------------
    def _from_worker(self) -> None:
        """Input the worker wrote: to the remote PTY."""
        try:
            data = self._bridge.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self._bridge.fileno())
            return
        if self._chan is not None and not self._ended:
            try:
                self._chan.write(data)
            except (OSError, asyncssh_error()):
                pass  # the channel is closing: its end is reported by connection_lost

    def input_paused(self, paused: bool) -> None:
        """The remote side takes no more input for now: stop reading the worker's writes, so
        the worker's own write deadline ("not reading input") applies as for a local pane."""
        if self._ended:
            return
        loop = asyncio.get_running_loop()
        if paused:
            loop.remove_reader(self._bridge.fileno())
        else:
            loop.add_reader(self._bridge.fileno(), self._from_worker)

    def output(self, data: bytes) -> None:
        """Remote output: to the worker (the channel pauses while the worker lags behind)."""
        if self._pending:
            self._pending += data
        else:
            sent = self._send(data)
            if sent < len(data):
                self._pending += data[sent:]
        if self._pending and not self._paused:
            self._paused = True
            assert self._chan is not None
            self._chan.pause_reading()
            asyncio.get_running_loop().add_writer(self._bridge.fileno(), self._drain)

    def _send(self, data: bytes | bytearray) -> int:
        try:
            return self._bridge.send(data)
        except BlockingIOError:
            return 0
        except OSError:
            return len(data)  # the worker's end is gone: nobody reads it any more

    def _drain(self) -> None:
        sent = self._send(self._pending)
        del self._pending[:sent]
        if self._pending:
            return
        asyncio.get_running_loop().remove_writer(self._bridge.fileno())
        self._paused = False
        if self._status is not None:
            self._close_bridge()
        elif self._chan is not None:
            self._chan.resume_reading()

    def session_ended(self, exc: Exception | None) -> None:
        """The channel closed: with the remote shell's exit status, or the connection lost."""
        if self._status is not None:
            return  # closed from here (the pane closes): nothing to report
        chan = self._chan
        code = chan.get_exit_status() if chan is not None else None
        signal = chan.get_exit_signal() if chan is not None else None
        if code is not None and code >= 0:
            self._finish(ExitStatus(code, None, f"remote shell exited with status {code}"))
        elif signal is not None:
            name = signal[0]
            self._finish(ExitStatus(None, None, f"remote shell killed by signal {name}"))
        else:
            why = str(exc) if exc is not None else "the server closed the connection"
            self._phase("failed", f"connection lost: {why}")
            self._finish(ExitStatus(None, None, f"ssh: connection lost: {why}"))
        if self._conn is not None:
            self._conn.close()

    def _finish(self, status: ExitStatus) -> None:
        """The pane's end: the worker reads EOF once it has every byte of output."""
        if self._status is not None:
            return
        self._status = status
        self._ended = True
        if not self._pending:
            self._close_bridge()

    def _close_bridge(self) -> None:
        with contextlib.suppress(OSError, ValueError, RuntimeError):  # RuntimeError: no loop
            asyncio.get_running_loop().remove_reader(self._bridge.fileno())
        with contextlib.suppress(OSError):
            self._bridge.close()


class _Session:
    """asyncssh's session callbacks (bytes: the session is opened with encoding None)."""

    def __init__(self, pty: SshPty) -> None:
        self.pty = pty

    def connection_made(self, chan: Any) -> None:
        pass

    def session_started(self) -> None:
        pass

    def data_received(self, data: bytes, datatype: int | None) -> None:
        self.pty.output(data)

    def eof_received(self) -> bool:
        return False

    def exit_status_received(self, status: int) -> None:
        pass

    def exit_signal_received(self, signal: str, core_dumped: bool, msg: str, lang: str) -> None:
        pass

    def pause_writing(self) -> None:
        self.pty.input_paused(True)

    def resume_writing(self) -> None:
        self.pty.input_paused(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pty.session_ended(exc)


class Unreachable(Exception):
    """The host could not be reached (resolving, connecting)."""


class Refused(Exception):
    """The connection was refused for a reason Pebrel states (host key, no known_hosts)."""


async def _tcp_connect(infos: list[tuple[Any, ...]], host: str, port: int) -> socket.socket:
    loop = asyncio.get_running_loop()
    last: OSError | None = None
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, address), CONNECT_TIMEOUT_S)
        except TimeoutError:
            sock.close()
            last = OSError(errno.ETIMEDOUT, "timed out")
            continue
        except OSError as exc:
            sock.close()
            last = exc
            continue
        return sock
    raise Unreachable(f"cannot connect to {host} port {port}: {last.strerror if last else '?'}")


@contextlib.asynccontextmanager
async def host_slot(directory: str, host: str, port: int) -> Any:
    """Hold one of the runtime's SLOTS_PER_HOST connection slots for ``host:port``."""
    safe = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    fds = []
    held: int | None = None
    try:
        for index in range(SLOTS_PER_HOST):
            path = os.path.join(directory, f"ssh-slot-{safe}-{port}.{index}")
            fds.append(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        while held is None:
            for fd in fds:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held = fd
                break
            else:
                await asyncio.sleep(SLOT_POLL_S)
        yield
    finally:
        for fd in fds:
            os.close(fd)  # closing the held one releases its lock


def failure_reason(exc: Exception, ssh: dict[str, Any]) -> str:
    """What a failed connection tells the user (never a password prompt: none is used)."""
    import asyncssh

    target = f"{ssh['user']}@{ssh['host']}:{ssh['port']}"
    if isinstance(exc, (Unreachable, Refused, IntegrationFailed)):
        return str(exc)
    if isinstance(exc, asyncssh.PermissionDenied):
        return (
            f"authentication refused for {target}: no key was accepted (keys come from the "
            "agent or identity_file; Pebrel never asks for a password)"
        )
    if isinstance(exc, asyncssh.KeyImportError | asyncssh.KeyEncryptionError):
        source = ssh.get("identity_file") or "a default key in ~/.ssh"
        return f"{source} cannot be used: {exc} (load an encrypted key into ssh-agent)"
    if isinstance(exc, asyncssh.ChannelOpenError):
        return f"the server refused a shell: {exc.reason}"
    if isinstance(exc, asyncssh.DisconnectError):
        return f"the server closed the connection: {exc.reason}"
    if isinstance(exc, TimeoutError):
        return f"timed out talking to {target}"
    if isinstance(exc, OSError):
        return f"connection to {target} failed: {exc.strerror or exc}"
    return f"{type(exc).__name__}: {exc}"


def asyncssh_error() -> type[Exception]:
    import asyncssh

    return asyncssh.Error
