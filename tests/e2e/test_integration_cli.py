"""`pebrel collab --principal ID ...`: the CLI over the integration socket (I1.3, I1.7; #17).

The credential file is the token's only way in, and an unsafe one (missing, a symbolic link,
group- or world-readable, not a regular file, another user's, another principal's) is refused
before any connection is made: a stand-in server listening on the socket counts the
connections it accepts. The token never shows in argv, the environment, output or the log. A
service of another protocol is INCOMPATIBLE_INTEGRATION_PROTOCOL (exit 1, no fallback); no
socket is exit 3. Against a real runtime the answer line is printed as it came, exit 0 or 1,
and `capabilities` carries `cli_version` (with `--session` too).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import pebrel
from pebrel import integration_wire as wire
from pebrel.integration_client import CREDENTIAL_ENV as CRED_ENV
from tests.agent_fixtures import fake_agents_env
from tests.collab_fixtures import collab, serving
from tests.conftest import PEBREL, Runtime, base_env, started_runtime, wait_for
from tests.integration_fixtures import (
    add_principal,
    group,
    listening,
    revoke_principal,
    write_credential,
)

pytestmark = pytest.mark.timeout(120)

TOKEN = "tok-" + "s3cr3t" * 8


class FakeService:
    """Listens on `<data_dir>/integration.sock`: counts connections, keeps the lines each sends,
    answers its Nth line with ``answers[N]`` (None: holds the connection until `close`)."""

    def __init__(self, data_dir: Path, *answers: bytes | None) -> None:
        self.answers = answers
        self.accepted = 0
        self.lines: list[bytes] = []
        self.release = threading.Event()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(wire.socket_path(data_dir))
        self.listener.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            with conn, conn.makefile("rb") as reader:
                conn.settimeout(10)
                for answer in self.answers:
                    self.lines.append(reader.readline())
                    if answer is None:
                        self.release.wait(30)
                        break
                    conn.sendall(answer)

    def close(self) -> None:
        self.release.set()
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    return data


@pytest.fixture
def fake(data_dir: Path) -> Iterator[FakeService]:
    hello = wire.encode(wire.hello_answer("bridge", "9.9.9"))
    service = FakeService(data_dir, hello, wire.encode(wire.result_line(1, {"tasks": []})))
    yield service
    service.close()


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEBREL, "collab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def env_for(tmp_path: Path, credential: Path | None) -> dict[str, str]:
    env = base_env(tmp_path)
    if credential is not None:
        env[CRED_ENV] = str(credential)
    return env


# ---- the credential file, refused before connecting ------------------------------------------


def refusals(tmp_path: Path) -> list[tuple[str, Path | None]]:
    good = write_credential(tmp_path / "good.json", "bridge", TOKEN)
    cases: list[tuple[str, Path | None]] = [("unset", None), ("missing", tmp_path / "none.json")]
    link = tmp_path / "link.json"
    link.symlink_to(good)
    cases.append(("symlink", link))
    for mode in (0o644, 0o640, 0o604, 0o660, 0o620):
        cases.append(
            (f"mode {mode:o}", write_credential(tmp_path / f"m{mode:o}", "bridge", TOKEN, mode))
        )
    cases.append(("directory", tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    cases.append(("fifo", fifo))
    cases.append(("other principal", write_credential(tmp_path / "o.json", "someone", TOKEN)))
    junk = tmp_path / "junk.json"
    junk.write_text(f"not json {TOKEN}")
    junk.chmod(0o600)
    cases.append(("not a credential", junk))
    if os.geteuid() == 0:
        theirs = write_credential(tmp_path / "theirs.json", "bridge", TOKEN)
        os.chown(theirs, 65534, 65534)
        cases.append(("another user's", theirs))
    return cases


def test_unsafe_credential_files_are_refused_before_connecting(
    tmp_path: Path, fake: FakeService
) -> None:
    """I1.3: exit 2, a message naming the file and why; nothing was sent (no connection)."""
    for name, credential in refusals(tmp_path):
        done = cli(env_for(tmp_path, credential), "--principal", "bridge", "task", "list")
        assert done.returncode == 2, (name, done)
        assert done.stdout == "", (name, done)
        assert TOKEN not in done.stderr, (name, done.stderr)
        assert "credential" in done.stderr or CRED_ENV in done.stderr, (name, done.stderr)
        assert fake.accepted == 0, name
    good = tmp_path / "good.json"
    done = cli(env_for(tmp_path, good), "--principal", "bridge", "task", "list")
    assert done.returncode == 0, done
    assert json.loads(done.stdout) == wire.result_line(1, {"tasks": []})
    assert fake.accepted == 1
    assert json.loads(fake.lines[0]) == wire.hello("bridge", TOKEN)  # only over the socket
    assert json.loads(fake.lines[1]) == wire.request(1, "task.list", {})


def test_usage_errors_are_refused_before_connecting(tmp_path: Path, fake: FakeService) -> None:
    """A principal's write needs its own --idempotency-key; --principal with --session is a
    usage error; a credential for another protocol version is INCOMPATIBLE (exit 1)."""
    env = env_for(tmp_path, write_credential(tmp_path / "c.json", "bridge", TOKEN))
    write = ("task", "create", "--group", "g", "--title", "t", "--content", "c")
    done = cli(env, "--principal", "bridge", *write)
    assert done.returncode == 2 and "--idempotency-key" in done.stderr, done
    done = cli(env, "--principal", "bridge", "--session", "ses_00", "task", "list")
    assert done.returncode == 2 and "--principal" in done.stderr, done
    newer = tmp_path / "v2.json"
    newer.write_text(json.dumps({"principal": "bridge", "token": TOKEN, "version": 2}))
    newer.chmod(0o600)
    done = cli(env_for(tmp_path, newer), "--principal", "bridge", "task", "list")
    assert done.returncode == 1, done
    assert json.loads(done.stdout)["code"] == "INCOMPATIBLE_INTEGRATION_PROTOCOL"
    assert fake.accepted == 0


@pytest.mark.parametrize(
    "answer",
    [
        wire.encode({**wire.hello_answer("bridge", "9.9.9"), "version": 2}),
        wire.encode({**wire.hello_answer("bridge", "9.9.9"), "protocol": "termdock"}),
        b'{"protocol": "nebula.runtime", "version": 1, "id": null, "ok": false}\n',
        b"HTTP/1.1 400 Bad Request\r\n\r\n",
    ],
    ids=["version-2", "other-protocol", "runtime-api", "not-json"],
)
def test_a_service_of_another_protocol_is_incompatible(
    tmp_path: Path, data_dir: Path, answer: bytes
) -> None:
    """I1.7: exit 1 with INCOMPATIBLE_INTEGRATION_PROTOCOL; nothing else is tried."""
    service = FakeService(data_dir, answer)
    try:
        env = env_for(tmp_path, write_credential(tmp_path / "c.json", "bridge", TOKEN))
        done = cli(env, "--principal", "bridge", "capabilities")
        assert done.returncode == 1, done
        line = json.loads(done.stdout)
        assert line["type"] == "error" and line["code"] == "INCOMPATIBLE_INTEGRATION_PROTOCOL"
        assert line["retryable"] is False and TOKEN not in done.stdout + done.stderr
        assert service.accepted == 1
    finally:
        service.close()


def test_no_socket_is_exit_3(tmp_path: Path, data_dir: Path) -> None:
    """No collab service listening (no runtime, or a stale socket file): exit 3 with a
    retryable INTEGRATION_RUNTIME_UNAVAILABLE line."""
    env = env_for(tmp_path, write_credential(tmp_path / "c.json", "bridge", TOKEN))
    for stale in (False, True):
        if stale:
            with socket.socket(socket.AF_UNIX) as dead:
                dead.bind(wire.socket_path(data_dir))
        done = cli(env, "--principal", "bridge", "task", "list")
        assert done.returncode == 3, done
        line = json.loads(done.stdout)
        assert line["code"] == "INTEGRATION_RUNTIME_UNAVAILABLE" and line["retryable"] is True


def test_the_token_is_in_no_argv_and_no_environment(tmp_path: Path, data_dir: Path) -> None:
    """I1.3: while the CLI waits for its hello's answer, its argv and environment (what `ps`
    and a pane's environment show) hold the credential file's name, never the token."""
    service = FakeService(data_dir, None)
    credential = write_credential(tmp_path / "c.json", "bridge", TOKEN)
    proc = subprocess.Popen(
        [PEBREL, "collab", "--principal", "bridge", "task", "list"],
        env=env_for(tmp_path, credential),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: service.lines or None, 20, "the CLI's hello")
        seen = psutil.Process(proc.pid)
        assert TOKEN not in " ".join(seen.cmdline())
        environ = seen.environ()
        assert environ[CRED_ENV] == str(credential)
        assert all(TOKEN not in value for value in environ.values())
        ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True)
        assert TOKEN not in ps.stdout
    finally:
        service.close()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, (out, err)  # closed without an answer
    assert TOKEN.encode() not in out + err


# ---- against a real runtime ------------------------------------------------------------------


@pytest.fixture
def principal_runtime(tmp_path: Path) -> Iterator[tuple[Runtime, dict[str, str]]]:
    """A runtime, a principal `bridge` allowed to read, and the CLI's env with its credential."""
    with started_runtime(base_env(tmp_path)) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        listening(rt)
        token = add_principal(rt, group(rt))
        credential = write_credential(tmp_path / "bridge.json", "bridge", token)
        yield rt, {**rt.env, CRED_ENV: str(credential)}


def group_of(rt: Runtime) -> str:
    (found,) = rt.ok("collab.group.list")["groups"]
    return str(found["group_id"])


def answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    line: dict[str, Any] = json.loads(done.stdout)
    return line


def test_verbs_as_a_principal_print_the_answer_line(
    principal_runtime: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    """I1.7, I3.1: exit 0 with a result line, 1 with an error line; a write the principal's
    permissions allow goes through the socket once per idempotency key; a wrong token and a
    revoked principal are refused; the token is in no log line."""
    rt, env = principal_runtime
    token = json.loads(Path(env[CRED_ENV]).read_text())["token"]
    group_id = group_of(rt)
    done = cli(env, "--principal", "bridge", "capabilities", "--pretty")
    assert done.returncode == 0, done
    assert done.stdout.startswith("{\n  ")
    line = answer(done)
    assert line["type"] == "result" and line["ok"] is True
    assert line["result"]["cli_version"] == pebrel.__version__
    assert line["result"]["server_version"] == pebrel.__version__
    assert line["result"]["integration_protocol"] == 1
    done = cli(env, "--principal", "bridge", "task", "list")
    assert done.returncode == 0 and answer(done)["result"] == {"tasks": []}, done
    done = cli(env, "--principal", "bridge", "task", "get", "tsk_00")
    assert done.returncode == 1 and answer(done)["type"] == "error", done
    write = ("task", "create", "--group", "bridges", "--title", "t", "--content", "c")
    done = cli(env, "--principal", "bridge", *write, "--idempotency-key", "k1")
    assert done.returncode == 1, done  # a principal allowed to read only
    assert answer(done)["code"] == "INTEGRATION_PERMISSION_DENIED"
    assert rt.ok("collab.task.list")["tasks"] == []

    writer = add_principal(rt, group_id, "writer", ["task.read", "task.create"])
    writer_env = {**env, CRED_ENV: str(write_credential(tmp_path / "w.json", "writer", writer))}
    first = cli(writer_env, "--principal", "writer", *write, "--idempotency-key", "k1")
    assert first.returncode == 0, first
    task = answer(first)["result"]["task"]
    again = cli(writer_env, "--principal", "writer", *write, "--idempotency-key", "k1")
    assert again.returncode == 0 and answer(again)["result"]["task"] == task, again
    (listed,) = rt.ok("collab.task.list")["tasks"]
    assert listed["task_id"] == task["task_id"] and listed["source"] == "integration"

    wrong = write_credential(tmp_path / "wrong.json", "bridge", token[::-1])
    done = cli({**env, CRED_ENV: str(wrong)}, "--principal", "bridge", "task", "list")
    assert done.returncode == 1, done
    assert answer(done)["code"] == "INTEGRATION_UNAUTHORIZED"
    revoke_principal(rt, "bridge")
    done = cli(env, "--principal", "bridge", "task", "list")
    assert done.returncode == 1 and answer(done)["code"] == "INTEGRATION_REVOKED", done
    log = (rt.data_dir / "runtime.log").read_text()
    assert token not in log and token[::-1] not in log


def test_capabilities_carry_the_cli_version_on_the_runtime_api_too(tmp_path: Path) -> None:
    """I1.7: `pebrel collab capabilities` and `pebrel collab --session ID capabilities` show
    the CLI's version beside the service's."""
    with started_runtime(fake_agents_env(tmp_path)) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        rt.ok("agent.start", {"name": "worker", "kind": "claude"})
        collab(rt, "group", "create", "team")
        session = collab(rt, "session", "register", "--agent", "worker", "--group", "team")
        session_id = session["session"]["session_id"]
        for args in ((), ("--session", session_id)):
            result = collab(rt, *args, "capabilities")
            assert result["cli_version"] == pebrel.__version__, args
            assert result["server_version"] == pebrel.__version__, args


def test_the_socket_listens_when_runtime_start_returns(tmp_path: Path) -> None:
    """I1.6: `pebrel runtime start` returns once the collab service listens (it waits a few
    seconds for it), so a principal's first call right after the start is served, not
    INTEGRATION_RUNTIME_UNAVAILABLE."""
    env = base_env(tmp_path)

    def runtime(verb: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [PEBREL, "runtime", verb], env=env, capture_output=True, text=True, timeout=90
        )

    with started_runtime(env) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        listening(rt)
        token = add_principal(rt, group(rt))
    credential = write_credential(tmp_path / "bridge.json", "bridge", token)
    started = runtime("start")
    try:
        assert started.returncode == 0, started
        done = cli({**env, CRED_ENV: str(credential)}, "--principal", "bridge", "capabilities")
        assert done.returncode == 0, done
        assert answer(done)["result"]["principal"]["id"] == "bridge"
    finally:
        stopped = runtime("stop")
    assert stopped.returncode == 0, stopped
