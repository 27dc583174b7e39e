"""A small SSH server for the SSH pane tests (R11.1): asyncssh on 127.0.0.1, a real bash on a
real PTY per session. It is the test's stand-in for a remote host, not a mock of the SSH layer:
the client side (Pebrel's worker) speaks real SSHv2 to it.

    python -m tests.sshserver --host-key KEY --authorized-keys FILE --home DIR

prints ``PORT <n>`` once it listens. Sessions run ``bash -c COMMAND`` (an exec request, as
sshd runs ``$SHELL -c``) or ``bash -l`` (a shell request) with HOME, USER and SHELL set as a
login would, on a PTY of the requested size; resizes and the exit status are passed on.
Environment requests are refused, as a stock sshd refuses all but LANG/LC_*.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import signal
import sys
from typing import Any

import asyncssh
from ptyprocess import PtyProcess


class Session(asyncssh.SSHServerSession[bytes]):
    def __init__(self, home: str) -> None:
        self.home = home
        self.chan: Any = None
        self.term = "xterm"
        self.size = (80, 24)
        self.command: str | None = None
        self.proc: PtyProcess | None = None
        self.with_pty = False
        self.pending_input = bytearray()
        self.input_ended = False
        self.piped: asyncio.subprocess.Process | None = None

    def connection_made(self, chan: Any) -> None:
        self.chan = chan

    def pty_requested(self, term_type: str, term_size: tuple[int, int, int, int], _: Any) -> bool:
        self.term = term_type
        self.size = (term_size[0] or 80, term_size[1] or 24)
        self.with_pty = True
        return True

    def shell_requested(self) -> bool:
        return True

    def exec_requested(self, command: str) -> bool:
        self.command = command
        return True

    def session_started(self) -> None:
        env = {
            "HOME": self.home,
            "USER": getpass.getuser(),
            "LOGNAME": getpass.getuser(),
            "SHELL": "/bin/bash",
            "PATH": os.environ.get("PATH", os.defpath),
            "TERM": self.term,
            "LANG": "C.UTF-8",
        }
        argv = ["/bin/bash", "-c", self.command] if self.command else ["/bin/bash", "-l"]
        if not self.with_pty:  # an exec without a terminal: pipes, as sshd gives it
            asyncio.get_running_loop().create_task(self._piped(argv, env))
            return
        cols, rows = self.size
        self.proc = PtyProcess.spawn(argv, env=env, cwd=self.home, dimensions=(rows, cols))
        asyncio.get_running_loop().add_reader(self.proc.fd, self._output)

    def _output(self) -> None:
        assert self.proc is not None
        try:
            data = os.read(self.proc.fd, 65536)
        except OSError:
            data = b""
        if data:
            self.chan.write(data)
            return
        asyncio.get_running_loop().remove_reader(self.proc.fd)
        self.proc.wait()
        status = self.proc.exitstatus
        self.chan.exit(status if status is not None else 255)

    async def _piped(self, argv: list[str], env: dict[str, str]) -> None:
        self.piped = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=self.home,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        if self.pending_input:
            assert self.piped.stdin is not None
            self.piped.stdin.write(bytes(self.pending_input))
            if self.input_ended:
                self.piped.stdin.close()
        assert self.piped.stdout is not None and self.piped.stderr is not None
        out, err = await asyncio.gather(self.piped.stdout.read(), self.piped.stderr.read())
        await self.piped.wait()
        self.chan.write(out)
        self.chan.write_stderr(err)
        self.chan.exit(self.piped.returncode or 0)

    def data_received(self, data: bytes, datatype: Any) -> None:
        if not self.with_pty:
            if self.piped is not None and self.piped.stdin is not None:
                self.piped.stdin.write(data)
            else:
                self.pending_input += data
            return
        if self.proc is not None:
            with contextlib.suppress(OSError):
                os.write(self.proc.fd, data)

    def terminal_size_changed(self, width: int, height: int, pw: int, ph: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.setwinsize(height, width)

    def eof_received(self) -> bool:
        self.input_ended = True
        if self.piped is not None and self.piped.stdin is not None:
            self.piped.stdin.close()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self.proc is not None and self.proc.isalive():
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGHUP)


class Server(asyncssh.SSHServer):
    def __init__(self, home: str) -> None:
        self.home = home

    def session_requested(self) -> Session:
        return Session(self.home)

    def begin_auth(self, username: str) -> bool:
        return True  # always ask for a key

    def password_auth_supported(self) -> bool:
        return False


async def serve(args: argparse.Namespace) -> None:
    server = await asyncssh.create_server(
        lambda: Server(args.home),
        "127.0.0.1",
        args.port,
        server_host_keys=[args.host_key],
        authorized_client_keys=args.authorized_keys,
        encoding=None,
        allow_pty=True,
        agent_forwarding=False,
        x11_forwarding=False,
    )
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host-key", required=True)
    parser.add_argument("--authorized-keys", required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    sys.exit(0)


if __name__ == "__main__":
    main()
