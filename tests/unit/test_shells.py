"""Shell integration: real bash, zsh and fish on real PTYs emit OSC 133 marks and OSC 7."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from ptyprocess import PtyProcess

from pebrel.workers.shellkey import KEY_FILE_VAR
from pebrel.workers.shells import ShellLaunch, launch_spec, shell_kind
from tests.conftest import wait_for

pytestmark = pytest.mark.timeout(60)

#: The pane's secret these shells get (workers/shellkey.py): every mark ends with it.
KEY = "00112233445566778899aabbccddeeff"
KEY_FIELD = b";k=" + KEY.encode()
MARK_A = b"\x1b]133;A" + KEY_FIELD + b"\x07"
MARK_B = b"\x1b]133;B" + KEY_FIELD + b"\x07"
MARK_C = b"\x1b]133;C" + KEY_FIELD + b"\x07"
MARK_D = re.compile(rb"\x1b\]133;D;(\d+)" + re.escape(KEY_FIELD) + rb"\x07")
ANY_D = b"\x1b]133;D"
OSC_ANY = re.compile(rb"\x1b\][^\x07]*\x07")
OSC7 = re.compile(rb"\x1b\]7;([^\x07]*)" + re.escape(KEY_FIELD) + rb"\x07")
DA1_QUERIES = (b"\x1b[c", b"\x1b[0c")
DEADLINE = 15.0
SHELLS = ("bash", "zsh", "fish")


class ShellSession:
    """A shell on a PTY, with everything it wrote kept in ``output``."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        # SIGINT as a terminal gives it: a test run started as a background job of a
        # non-interactive shell ignores SIGINT, and a shell restores what it inherited for its
        # commands, so `sleep` would ignore ^C (the runtime's panes reset it: workers/).
        self.proc = PtyProcess.spawn(
            argv,
            env=env,
            cwd=str(cwd),
            dimensions=(24, 200),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.output = b""
        self._da1_answered = 0

    def close(self) -> None:
        if self.proc.isalive():
            self.proc.close(force=True)

    def send(self, data: str) -> None:
        self.proc.write(data.encode())

    def _pump(self, timeout: float) -> None:
        ready, _, _ = select.select([self.proc.fd], [], [], timeout)
        if not ready:
            return
        try:
            chunk = self.proc.read(65536)
        except EOFError as exc:
            raise AssertionError(f"shell exited; output so far: {self.output!r}") from exc
        self.output += chunk
        # fish may ask for the terminal's primary device attributes and wait for the answer.
        pending = sum(self.output.count(query) for query in DA1_QUERIES)
        while self._da1_answered < pending:
            self.proc.write(b"\x1b[?6c")
            self._da1_answered += 1

    def wait_for(self, needle: bytes | re.Pattern[bytes], start: int = 0) -> int:
        """Read until ``needle`` appears at or after ``start``; return the offset just past it."""
        deadline = time.monotonic() + DEADLINE
        while True:
            if isinstance(needle, bytes):
                index = self.output.find(needle, start)
                if index >= 0:
                    return index + len(needle)
            else:
                match = needle.search(self.output, start)
                if match is not None:
                    return match.end()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {needle!r}; got {self.output!r}")
            self._pump(min(remaining, 0.5))

    def wait_prompt(self, start: int = 0) -> int:
        """Wait for a complete prompt (A, then B) after ``start``; return the offset past B."""
        after_a = self.wait_for(MARK_A, start)
        return self.wait_for(MARK_B, after_a)

    def run(self, command: str) -> bytes:
        """Type ``command`` and Enter; return the output up to the end of the next prompt."""
        start = len(self.output)
        self.send(command + "\r")
        end = self.wait_prompt(start)
        return self.output[start:end]


Spawner = Callable[..., ShellSession]


def _require(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        pytest.skip(f"{shell} is not installed")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    directory = tmp_path / "home"
    directory.mkdir()
    return directory


@pytest.fixture
def spawn(home: Path) -> Iterator[Spawner]:
    sessions: list[ShellSession] = []

    def start(shell: str, extra_env: dict[str, str] | None = None) -> ShellSession:
        executable = _require(shell)
        base = {
            "HOME": str(home),
            "TERM": "xterm-256color",
            "PATH": os.pathsep.join(
                [os.path.dirname(executable), "/usr/local/bin", "/usr/bin", "/bin"]
            ),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
        }
        base.update(extra_env or {})
        launch = launch_spec(executable, base)
        assert launch.integrated
        key_file = home.parent / f"key-{len(sessions)}"
        key_file.write_text(KEY + "\n")
        env = {**base, **launch.env, KEY_FILE_VAR: str(key_file)}
        session = ShellSession(launch.argv, env, home)
        sessions.append(session)
        session.wait_prompt()
        if shell == "zsh":  # bash and fish leave that to the worker (no builtin rm)
            assert not key_file.exists(), "zsh's integration removes the key file it read"
        return session

    yield start
    for session in sessions:
        session.close()


def _write_user_rc(shell: str, home: Path, zdotdir: Path | None = None) -> None:
    if shell == "bash":
        (home / ".bashrc").write_text("USER_RC_MARK=bashrc-ok\n")
    elif shell == "zsh":
        ((zdotdir or home) / ".zshrc").write_text("USER_RC_MARK=zshrc-ok\n")
    else:
        config = home / ".config" / "fish"
        config.mkdir(parents=True, exist_ok=True)
        (config / "config.fish").write_text("set -g USER_RC_MARK fishrc-ok\n")


def _osc7_paths(data: bytes) -> list[tuple[str, str]]:
    found = []
    for match in OSC7.finditer(data):
        url = urlsplit(match.group(1).decode())
        assert url.scheme == "file"
        found.append((url.netloc, unquote(url.path)))
    return found


def _command_output(segment: bytes) -> bytes:
    """The bytes a command wrote: between its C and its D mark."""
    start = segment.index(MARK_C) + len(MARK_C)
    return segment[start : segment.index(ANY_D, start)]


# --- pure parts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("executable", "kind"),
    [
        ("/bin/bash", "bash"),
        ("bash", "bash"),
        ("-bash", "bash"),
        ("/usr/local/bin/bash5.2", "bash"),
        ("/usr/bin/zsh-5.9", "zsh"),
        ("zsh", "zsh"),
        ("/usr/bin/fish", "fish"),
        ("/bin/sh", "sh"),
        ("/bin/dash", "sh"),
        ("/usr/bin/ash", "sh"),
        ("/usr/bin/nu", "other"),
        ("/usr/bin/bashful", "other"),
        ("/usr/bin/python3", "other"),
    ],
)
def test_shell_kind(executable: str, kind: str) -> None:
    assert shell_kind(executable) == kind


def test_launch_spec_argv_and_env() -> None:
    bash = launch_spec("/bin/bash", {"HOME": "/h"})
    assert bash.integrated
    assert bash.argv[:2] == ["/bin/bash", "--rcfile"]
    assert bash.argv[3] == "-i"
    assert Path(bash.argv[2]).is_file()

    zsh_unset = launch_spec("/usr/bin/zsh", {"HOME": "/h"})
    assert zsh_unset.argv == ["/usr/bin/zsh"]
    assert (Path(zsh_unset.env["ZDOTDIR"]) / ".zshenv").is_file()
    assert "PEBREL_ZSH_USER_ZDOTDIR" not in zsh_unset.env

    zsh_set = launch_spec("/usr/bin/zsh", {"HOME": "/h", "ZDOTDIR": "/h/.config/zsh"})
    assert zsh_set.env["PEBREL_ZSH_USER_ZDOTDIR"] == "/h/.config/zsh"

    fish = launch_spec("/usr/bin/fish", {})
    assert fish.argv[:2] == ["/usr/bin/fish", "--init-command"]
    assert fish.argv[2].startswith("source '") and fish.argv[2].endswith("pebrel.fish'")

    for plain in ("/bin/sh", "/bin/dash", "/usr/bin/nu"):
        assert launch_spec(plain, {}) == ShellLaunch([plain], {}, False)


# --- real shells ----------------------------------------------------------------------------


@pytest.mark.parametrize("shell", SHELLS)
def test_first_prompt_has_a_then_b(shell: str, spawn: Spawner) -> None:
    session = spawn(shell)
    first_a = session.output.index(MARK_A)
    assert session.output.index(MARK_B) > first_a
    host, path = _osc7_paths(session.output)[0]
    assert host == socket.gethostname()
    assert path.startswith("/")


@pytest.mark.parametrize("shell", SHELLS)
def test_exit_status_marks(shell: str, spawn: Spawner) -> None:
    session = spawn(shell)
    for command, status in (("true", "0"), ("false", "1"), ("sh -c 'exit 7'", "7")):
        segment = session.run(command)
        c_at = segment.index(MARK_C)
        match = MARK_D.search(segment, c_at)
        assert match is not None, segment
        assert match.group(1).decode() == status
        assert segment.count(ANY_D) == 1
        assert segment.index(MARK_A, match.end()) >= match.end()


@pytest.mark.parametrize("shell", SHELLS)
def test_empty_line_gives_no_c_or_d(shell: str, spawn: Spawner) -> None:
    session = spawn(shell)
    session.run("true")
    for _ in range(2):
        segment = session.run("")
        assert MARK_C not in segment
        assert ANY_D not in segment
        assert MARK_A in segment
    segment = session.run("false")
    assert MARK_D.findall(segment) == [b"1"]


@pytest.mark.parametrize("shell", SHELLS)
def test_osc7_follows_cd(shell: str, spawn: Spawner, tmp_path: Path) -> None:
    session = spawn(shell)
    segment = session.run("cd /tmp")
    assert _osc7_paths(segment)[-1] == (socket.gethostname(), "/tmp")

    odd = tmp_path / "dir with space%25 and é"
    odd.mkdir()
    segment = session.run(f"cd '{odd}'")
    raw = OSC7.findall(segment)[-1]
    assert b" " not in raw
    assert b"%20" in raw and b"%2525" in raw
    assert _osc7_paths(segment)[-1] == (socket.gethostname(), str(odd))


@pytest.mark.parametrize("shell", SHELLS)
def test_user_rc_is_sourced(shell: str, spawn: Spawner, home: Path) -> None:
    _write_user_rc(shell, home)
    session = spawn(shell)
    expected = {"bash": b"[bashrc-ok]", "zsh": b"[zshrc-ok]", "fish": b"[fishrc-ok]"}[shell]
    segment = session.run('echo "[$USER_RC_MARK]"')
    assert expected in _command_output(segment)


@pytest.mark.parametrize("shell", SHELLS)
def test_no_helper_variable_leaks(shell: str, spawn: Spawner, home: Path) -> None:
    extra = {"ZDOTDIR": str(home / "zdot")} if shell == "zsh" else {}
    session = spawn(shell, extra)
    segment = session.run(
        "env | grep -i pebrel; echo done-$((1+1))"
        if shell != "fish"
        else "env | grep -i pebrel; echo done-(math 1+1)"
    )
    # fish shows the command line in the window title (OSC 0): look at the text only.
    output = OSC_ANY.sub(b"", _command_output(segment))
    assert b"done-2" in output
    assert b"pebrel" not in output.lower()
    segment = session.run("env | grep -c '^ZDOTDIR='")
    if shell == "zsh":
        assert b"1" in _command_output(segment)


def test_zsh_zdotdir_unset_is_restored_as_unset(spawn: Spawner, home: Path) -> None:
    _write_user_rc("zsh", home)
    session = spawn("zsh")
    output = _command_output(session.run('echo "<${ZDOTDIR-unset}>[$USER_RC_MARK]"'))
    assert b"<unset>[zshrc-ok]" in output


def test_zsh_custom_zdotdir(spawn: Spawner, home: Path) -> None:
    zdotdir = home / ".config" / "zsh dir"
    zdotdir.mkdir(parents=True)
    (zdotdir / ".zshenv").write_text("USER_ENV_MARK=zshenv-ok\n")
    _write_user_rc("zsh", home, zdotdir)
    (home / ".zshrc").write_text("USER_RC_MARK=wrong-home-zshrc\n")
    session = spawn("zsh", {"ZDOTDIR": str(zdotdir)})
    output = _command_output(session.run('echo "<$ZDOTDIR>[$USER_RC_MARK][$USER_ENV_MARK]"'))
    assert f"<{zdotdir}>[zshrc-ok][zshenv-ok]".encode() in output


def test_zsh_prompt_rewriting_hook_keeps_one_b(spawn: Spawner, home: Path) -> None:
    (home / ".zshrc").write_text(
        "autoload -Uz add-zsh-hook\n"
        "_user_prompt() { PS1='user %# ' }\n"
        "add-zsh-hook precmd _user_prompt\n"
    )
    session = spawn("zsh")
    for _ in range(3):
        segment = session.run("true")
        prompt = segment[segment.rindex(MARK_A) :]
        assert prompt.count(MARK_B) == 1
        assert b"user " in prompt
    assert MARK_D.findall(session.run("false")) == [b"1"]


def _wait_foreground(session: ShellSession, name: str) -> None:
    """Wait until ``name`` is the PTY's foreground process group (a ^C sent earlier races
    with the job's setpgid/tcsetpgrp and reaches bash instead of the command)."""

    def foreground() -> bool:
        pgrp = os.tcgetpgrp(session.proc.fd)
        if pgrp == session.proc.pid:
            return False
        try:
            comm = Path(f"/proc/{pgrp}/comm").read_text().strip()
        except OSError:
            comm = name  # no procfs: the foreground group changed, that is enough
        return comm == name

    wait_for(foreground, DEADLINE, f"{name} as the foreground process group", interval_s=0.01)


def test_bash_ctrl_c_gives_130(spawn: Spawner) -> None:
    session = spawn("bash")
    start = len(session.output)
    session.send("sleep 5\r")
    after_c = session.wait_for(MARK_C, start)
    _wait_foreground(session, "sleep")
    sent_at = time.monotonic()
    session.send("\x03")
    end = session.wait_prompt(after_c)
    assert time.monotonic() - sent_at < 4
    assert MARK_D.findall(session.output[start:end]) == [b"130"]


def test_bash_prompt_command_rewriting_ps1_keeps_one_a_and_b(spawn: Spawner, home: Path) -> None:
    (home / ".bashrc").write_text(
        "PS0='[user-ps0]'\n_user_prompt() { PS1='user-$? \\$ '; }\nPROMPT_COMMAND=_user_prompt\n"
    )
    session = spawn("bash")
    for command, status in (("true", b"0"), ("false", b"1"), ("", None)):
        segment = session.run(command)
        prompt = segment[segment.rindex(MARK_A) :]
        assert prompt.count(MARK_B) == 1
        assert segment.count(MARK_A) == 1
        if status is None:
            assert ANY_D not in segment
            continue
        assert MARK_D.findall(segment) == [status]
        # The user's prompt code still sees the command's status; the user's PS0 is kept.
        assert b"user-" + status in prompt
        assert b"[user-ps0]" + MARK_C in segment


def test_fish_user_prompt_is_kept(spawn: Spawner, home: Path) -> None:
    functions = home / ".config" / "fish" / "functions"
    functions.mkdir(parents=True)
    (functions / "fish_prompt.fish").write_text(
        "function fish_prompt\n    printf 'userprompt-%s> ' $status\nend\n"
    )
    session = spawn("fish")
    segment = session.run("false")
    prompt = segment[segment.rindex(MARK_A) :]
    assert b"userprompt-1> " + MARK_B in prompt
    assert prompt.count(MARK_B) == 1
