"""A loopback SSH host for the SSH pane tests (R11.1): keys, known_hosts and a server process.

The server is ``tests/sshserver.py`` (asyncssh, a real bash on a real PTY per session) or,
where installed, Debian's OpenSSH ``sshd`` started by the test on a private config: the same
tests run against both. Everything lives in the test's tmp dir; the server is stopped by pid.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import psutil

SERVER = Path(__file__).parent / "sshserver.py"
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
#: sshd started by the tests needs its privilege separation dir (/run/sshd): root only.
SSHD_USABLE = SSHD is not None and os.geteuid() == 0


def keypair(path: Path) -> bytes:
    """A new ed25519 key at ``path`` (0600); returns its public line."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(path))
    path.chmod(0o600)
    public: bytes = key.export_public_key()
    return public


@dataclass
class SshHost:
    kind: str  # "asyncssh" or "openssh"
    port: int
    root: Path
    home: Path  # the remote account's home (the asyncssh server's; sshd uses the real one)
    client_key: Path  # authorized on the server
    stranger_key: Path  # a key the server does not know
    known_hosts: Path  # has the server's key
    wrong_known_hosts: Path  # has another key for the same host
    empty_known_hosts: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.proc.poll() is None:
            children = psutil.Process(self.proc.pid).children(recursive=True)
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            for child in children:
                with contextlib.suppress(psutil.Error):
                    child.kill()

    def kill(self) -> None:
        """The host goes away at once (its connections end without a word): the server and
        every process it started (sshd serves each connection from a child of its own)."""
        children = psutil.Process(self.proc.pid).children(recursive=True)
        self.proc.kill()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()
        self.proc.wait(5)

    def profiles_toml(self) -> str:
        """settings.toml profiles: build (no integration), buildi (integration), and ones that
        must fail: wrongkey, unknownkey, stranger, nobody (a port nothing listens on)."""

        def profile(name: str, known: Path, key: Path, port: int, extra: str = "") -> str:
            return (
                f"[profiles.{name}]\n"
                f'ssh = {{ host = "127.0.0.1", port = {port}, user = "{getpass.getuser()}", '
                f'identity_file = "{key}", known_hosts = "{known}" }}\n{extra}'
            )

        closed = free_port()
        return "\n".join(
            [
                profile("build", self.known_hosts, self.client_key, self.port),
                profile(
                    "buildi", self.known_hosts, self.client_key, self.port, "integration = true\n"
                ),
                profile("wrongkey", self.wrong_known_hosts, self.client_key, self.port),
                profile("unknownkey", self.empty_known_hosts, self.client_key, self.port),
                profile("stranger", self.known_hosts, self.stranger_key, self.port),
                profile("nobody", self.known_hosts, self.client_key, closed),
            ]
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _known(path: Path, port: int, public: bytes) -> Path:
    path.write_bytes(f"[127.0.0.1]:{port} ".encode() + public)
    return path


@contextlib.contextmanager
def ssh_host(root: Path, kind: str = "asyncssh") -> Iterator[SshHost]:
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    home.mkdir(exist_ok=True)
    host_public = keypair(root / "host_key")
    client_public = keypair(root / "client_key")
    keypair(root / "stranger_key")
    other_public = keypair(root / "other_host_key")
    authorized = root / "authorized_keys"
    authorized.write_bytes(client_public)
    authorized.chmod(0o600)
    if kind == "asyncssh":
        proc, port = _start_asyncssh(root, home, authorized)
    else:
        proc, port = _start_sshd(root, authorized)
        home = Path(os.path.expanduser("~"))
    host = SshHost(
        kind=kind,
        port=port,
        root=root,
        home=home,
        client_key=root / "client_key",
        stranger_key=root / "stranger_key",
        known_hosts=_known(root / "known_hosts", port, host_public),
        wrong_known_hosts=_known(root / "wrong_known_hosts", port, other_public),
        empty_known_hosts=_known(root / "empty_known_hosts", port, b""),
        proc=proc,
    )
    host.empty_known_hosts.write_text("")
    try:
        yield host
    finally:
        host.stop()


def _start_asyncssh(
    root: Path, home: Path, authorized: Path
) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SERVER),
            "--host-key",
            str(root / "host_key"),
            "--authorized-keys",
            str(authorized),
            "--home",
            str(home),
        ],
        stdout=subprocess.PIPE,
        stderr=open(root / "server.log", "wb"),  # noqa: SIM115 (the child holds it)
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"the SSH server did not start: {(root / 'server.log').read_text()}")
    return proc, int(line.split()[1])


def _start_sshd(root: Path, authorized: Path) -> tuple[subprocess.Popen[bytes], int]:
    assert SSHD is not None
    port = free_port()
    config = root / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root / 'host_key'}\n"
        f"AuthorizedKeysFile {authorized}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\n"
        f"StrictModes no\nPermitRootLogin prohibit-password\nPidFile {root / 'sshd.pid'}\n"
        "PrintMotd no\nPrintLastLog no\nLogLevel VERBOSE\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=open(root / "server.log", "wb"),  # noqa: SIM115 (the child holds it)
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return proc, port
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError(f"sshd did not start: {(root / 'server.log').read_text()}")
