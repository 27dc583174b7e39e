"""SSH panes (R11.1) against a real SSH server on loopback: tests/sshserver.py (asyncssh, a real
bash on a real PTY) and, where installed, Debian's OpenSSH sshd; no mock of the SSH layer.

Phases and their revisions, host key refusals (unknown, changed), a refused key, the server
going away mid-command, every refusal (ssh_not_ready, remote_process_unavailable,
remote_exec_unsupported, remote_worktree_unsupported, local content into pane.paste), the
environment contract, exit codes with and without integration, and 16 panes to one host.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runtime, started_runtime, wait_for
from tests.e2e.test_events import Subscriber
from tests.e2e.test_schema import problems
from tests.sshhost import SSHD_USABLE, SshHost, ssh_host

pytestmark = pytest.mark.timeout(120)

LEFT_BY_A_RUNTIME = {"runtime.log", "runtime.lock", "start.lock", "settings.toml", "collab"}
PHASES = ["resolving", "connecting", "authenticating", "opening_shell", "ready"]
KINDS = [
    "asyncssh",
    pytest.param(
        "openssh", marks=pytest.mark.skipif(not SSHD_USABLE, reason="needs sshd, as root")
    ),
]


@pytest.fixture(params=KINDS)
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SshHost]:
    with ssh_host(tmp_path / "sshhost", request.param) as found:
        yield found


@pytest.fixture
def rt(host: SshHost, runtime_env: dict[str, str]) -> Iterator[Runtime]:
    data = Path(runtime_env["PEBREL_DATA_DIR"])
    (data / "settings.toml").write_text(host.profiles_toml())
    with started_runtime(runtime_env) as started:
        yield started
    # Nothing of the SSH panes stays behind (their connection slots lived in the ipc dir).
    assert {p.name for p in data.iterdir()} <= LEFT_BY_A_RUNTIME


def record(rt: Runtime, pane_id: int, window_id: int = 1) -> dict[str, Any]:
    for window in rt.snapshot()["windows"]:
        if window["window_id"] != window_id:
            continue
        for tab in window["tabs"]:
            for pane in tab["panes"]:
                if pane["pane_id"] == pane_id:
                    found: dict[str, Any] = pane
                    return found
    raise AssertionError(f"no pane {window_id}:{pane_id}")


def new_tab(rt: Runtime, shell: str, **extra: Any) -> int:
    pane_id: int = rt.ok("tab.new", {"window_id": 1, "shell": shell, **extra})["pane_id"]
    return pane_id


def settled_phase(rt: Runtime, pane_id: int, timeout_s: float = 30) -> dict[str, Any]:
    """The pane's record once its phase is ready or failed."""

    def done() -> dict[str, Any] | None:
        pane = record(rt, pane_id)
        return pane if pane["ssh"]["phase"] in ("ready", "failed") else None

    found: dict[str, Any] = wait_for(done, timeout_s, f"pane {pane_id} ready or failed")
    return found


def prompt_drawn(rt: Runtime, pane_id: int) -> str:
    def drawn() -> str | None:
        text: str = rt.ok("pane.read", {"pane_id": pane_id, "lines": 50})["text"]
        last = text.rstrip().rsplit("\n", 1)[-1]
        return text if last.endswith(("#", "$")) else None

    found: str = wait_for(drawn, 20, f"a prompt in pane {pane_id}")
    return found


def test_a_pane_walks_its_phases_each_a_revision_and_gets_the_remote_contract(
    rt: Runtime, host: SshHost
) -> None:
    subscriber = Subscriber(rt)
    try:
        pane_id = new_tab(rt, "build")
        seen: list[tuple[int, str]] = []
        deadline = time.monotonic() + 30
        while not seen or seen[-1][1] != "ready":
            assert time.monotonic() < deadline, seen
            event = subscriber.line(max(0.1, deadline - time.monotonic()))
            if event.get("event") != "runtime.snapshot":
                continue
            for window in event["snapshot"]["windows"]:
                for tab in window["tabs"]:
                    for pane in tab["panes"]:
                        if pane["pane_id"] == pane_id:
                            phase = pane["ssh"]["phase"]
                            if not seen or seen[-1][1] != phase:
                                seen.append((event["snapshot"]["revision"], phase))
    finally:
        subscriber.close()
    phases = [phase for _, phase in seen]
    assert phases == sorted(phases, key=PHASES.index), seen  # in order, none went back
    revisions = [revision for revision, _ in seen]
    assert revisions == sorted(set(revisions)), seen  # each change its own revision
    logged = [
        line.rsplit("phase='", 1)[1].split("'")[0]
        for line in (rt.data_dir / "runtime.log").read_text().splitlines()
        if "ssh phase" in line
    ]
    assert logged[: len(PHASES)] == PHASES, logged
    pane = record(rt, pane_id)
    assert pane["remote"] is True and pane["pid"] is None and pane["cwd"] == "~"
    assert pane["ssh"] == {
        "host": "127.0.0.1",
        "port": host.port,
        "user": pane["ssh"]["user"],
        "phase": "ready",
    }
    prompt_drawn(rt, pane_id)
    snapshot = rt.ok("runtime.snapshot")
    assert problems(snapshot, "#/methods/runtime.snapshot/result") == []
    failed = rt.error("pane.exec", {"pane_id": pane_id, "argv": ["true"]})
    assert problems(failed, "#/$defs/error") == [], failed
    line = (
        'echo "env:$PEBREL_PANE_REMOTE:$PEBREL_WINDOW_ID:$PEBREL_PANE_ID:${PEBREL_CLI-no}:'
        '${PEBREL_BIN_DIR-no}:${PEBREL_DATA_DIR-no}:$TERM_PROGRAM"'
    )
    rt.ok("pane.prompt", {"pane_id": pane_id, "text": line})
    rt.wait_text(pane_id, f"env:1:1:{pane_id}:no:no:no:pebrel")
    # Without integration the state is the screen's, and pane.run says it cannot tell.
    error = rt.error("pane.run", {"pane_id": pane_id, "command": "true"})
    assert error["code"] == "exit_code_unavailable" and error["details"]["written"] is False
    # No marks, no visible foreground: the submission's unconfirmed running edge lapses.
    wait_for(lambda: record(rt, pane_id)["task_state"] == "idle", 15, "the pane idle")
    described = rt.ok("runtime.describe")
    assert "ssh_panes" in described["features"]
    remote = described["env"]["remote_panes"]
    assert "PEBREL_PANE_REMOTE" in remote["set"] and "PEBREL_CLI" in remote["never_set"]


def test_integration_gives_real_exit_codes_and_printed_marks_still_cannot_lie(
    rt: Runtime, host: SshHost
) -> None:
    pane_id = new_tab(rt, "buildi")
    # pane.run right away: it waits for the connection as for a local pane's first prompt.
    ran = rt.ok("pane.run", {"pane_id": pane_id, "command": "(exit 7)"})
    assert (ran["status"], ran["exit_code"]) == ("failed", 7)
    fake = rt.ok("pane.run", {"pane_id": pane_id, "command": "printf '\\e]133;D;0\\a'; false"})
    assert fake["exit_code"] == 1  # a printed D;0 without the pane's secret is only output
    ok = rt.ok("pane.run", {"pane_id": pane_id, "command": "echo remote-$PEBREL_PANE_REMOTE"})
    assert ok["exit_code"] == 0
    rt.wait_text(pane_id, "remote-1")
    pane = record(rt, pane_id)
    assert (pane["task_state"], pane["last_exit_code"]) == ("completed", 0)
    # The integration's files are gone from the remote host once read (never a key left).
    leftovers = rt.ok(
        "pane.run", {"pane_id": pane_id, "command": 'test -z "$PEBREL_SHELL_KEY_FILE"'}
    )
    assert leftovers["exit_code"] == 0


@pytest.mark.parametrize(
    ("profile", "reason"),
    [
        ("unknownkey", "unknown host key"),
        ("wrongkey", "host key mismatch"),
        ("stranger", "authentication refused"),
        ("nobody", "cannot connect"),
    ],
)
def test_a_refused_connection_fails_the_pane_with_its_reason(
    rt: Runtime, host: SshHost, profile: str, reason: str
) -> None:
    pane_id = new_tab(rt, profile)
    pane = settled_phase(rt, pane_id)
    assert pane["ssh"]["phase"] == "failed" and reason in pane["ssh"]["error"], pane
    wait_for(lambda: record(rt, pane_id)["exited"], 10, "the failed pane exited")
    pane = record(rt, pane_id)
    assert reason in pane["exit_reason"], pane
    for method, params in [
        ("pane.read", {}),
        ("pane.screen", {}),
        ("pane.prompt", {"text": "echo hi"}),
        ("pane.send_key", {"key": "enter"}),
        ("pane.paste", {"text": "a\nb"}),
    ]:
        error = rt.error(method, {"pane_id": pane_id, **params})
        assert error["code"] == "ssh_not_ready", (method, error)
        assert error["details"]["phase"] == "failed" and reason in error["details"]["error"]
    # Its wait answers: the pane has exited.
    waited = rt.call("pane.wait", {"pane_id": pane_id, "state": "running", "timeout_ms": 5000})
    assert waited["ok"] is False and waited["error"]["details"]["exited"] is True


def test_a_pane_not_yet_ready_refuses_reads_and_writes(
    rt: Runtime, host: SshHost, tmp_path: Path
) -> None:
    """A server that accepts TCP and never speaks: the pane stays in authenticating."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    port = silent.getsockname()[1]
    try:
        known = tmp_path / "known"
        known.write_text("")
        settings = rt.data_dir / "settings.toml"
        silent_profile = f'ssh = {{ host = "127.0.0.1", port = {port}, known_hosts = "{known}" }}'
        settings.write_text(f"{settings.read_text()}\n[profiles.silent]\n{silent_profile}\n")
        rt.cli("runtime", "stop", timeout=60)
        assert rt.cli("runtime", "start", timeout=60).code == 0
        pane_id = new_tab(rt, "silent")
        wait_for(
            lambda: record(rt, pane_id)["ssh"]["phase"] == "authenticating", 15, "authenticating"
        )
        error = rt.error("pane.read", {"pane_id": pane_id})
        assert error["code"] == "ssh_not_ready" and error["details"]["phase"] == "authenticating"
        error = rt.error("pane.prompt", {"pane_id": pane_id, "text": "hi"})
        assert error["code"] == "ssh_not_ready" and error["details"]["written"] is False
    finally:
        silent.close()


def test_what_a_local_runtime_cannot_do_for_a_remote_pane_is_refused(
    rt: Runtime, host: SshHost, tmp_path: Path
) -> None:
    pane_id = new_tab(rt, "build")
    assert settled_phase(rt, pane_id)["ssh"]["phase"] == "ready"
    error = rt.error("pane.procs", {"pane_id": pane_id})
    assert error["code"] == "remote_process_unavailable" and error["details"]["remote"] is True
    error = rt.error("pane.exec", {"pane_id": pane_id, "argv": ["true"]})
    assert error["code"] == "remote_exec_unsupported"
    error = rt.error("agent.fork", {"source_pane_id": pane_id, "name": "f", "kind": "codex"})
    assert error["code"] == "remote_worktree_unsupported"
    # Local content is not forwarded into a remote pane; the text itself is.
    local = tmp_path / "local.txt"
    local.write_text("secret\nlines\n")
    before = prompt_drawn(rt, pane_id)
    refused = rt.cli("pane", "paste", str(pane_id), "--from-file", str(local))
    assert refused.code == 1, refused
    envelope = json.loads(refused.stdout)
    assert envelope["error"]["code"] == "invalid_params"
    assert envelope["error"]["details"]["field"] == "--from-file"
    refused = rt.cli("ctl", "paste", "--pane", str(pane_id), "--stdin")  # stdin: /dev/null
    assert refused.code == 1 and json.loads(refused.stdout)["error"]["details"]["remote"] is True
    assert prompt_drawn(rt, pane_id) == before
    # A relative --cwd of an SSH shell is a remote directory, passed on as given.
    made = rt.ok("pane.run", {"pane_id": 1, "command": f"mkdir -p {host.home}/sub-dir"})
    assert made["exit_code"] == 0
    created = rt.cli("ctl", "new-tab", "--cwd", "sub-dir", "--shell", "build")
    assert created.code == 0, created
    sub = json.loads(created.stdout)["result"]["pane_id"]
    assert record(rt, sub)["cwd"] == "sub-dir"
    assert settled_phase(rt, sub)["ssh"]["phase"] == "ready"
    rt.ok("pane.prompt", {"pane_id": sub, "text": "pwd"})
    rt.wait_text(sub, f"{host.home}/sub-dir")


def test_the_server_going_away_mid_command_fails_the_pane_and_answers_its_waits(
    rt: Runtime, host: SshHost
) -> None:
    pane_id = new_tab(rt, "buildi")
    assert settled_phase(rt, pane_id)["ssh"]["phase"] == "ready"
    started = rt.ok("pane.run", {"pane_id": pane_id, "command": "sleep 60", "wait": False})
    host.kill()
    waited = rt.call(
        "pane.wait",
        {
            "pane_id": pane_id,
            "state": "completed",
            "after_seq": started["state_change_seq"],
            "timeout_ms": 20000,
        },
    )
    assert waited["ok"] is False and waited["error"]["details"]["exited"] is True, waited
    pane = record(rt, pane_id)
    assert pane["exited"] is True and "connection lost" in pane["exit_reason"]
    assert pane["ssh"]["phase"] == "failed" and "connection lost" in pane["ssh"]["error"]
    assert rt.error("pane.read", {"pane_id": pane_id})["code"] == "ssh_not_ready"


def test_sixteen_panes_to_one_host_at_once(rt: Runtime, host: SshHost) -> None:
    """A stock sshd drops unauthenticated connections past MaxStartups (10): Pebrel staggers."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        panes = list(pool.map(lambda _: new_tab(rt, "build"), range(16)))
    for pane_id in panes:
        assert settled_phase(rt, pane_id, 60)["ssh"]["phase"] == "ready", record(rt, pane_id)
    for pane_id in panes:
        prompt_drawn(rt, pane_id)
        rt.ok("pane.prompt", {"pane_id": pane_id, "text": "echo pane-$PEBREL_PANE_ID-ok"})
    for pane_id in panes:
        rt.wait_text(pane_id, f"pane-{pane_id}-ok")


def test_the_shorthand_uses_the_default_known_hosts_and_keys(rt: Runtime, host: SshHost) -> None:
    home = Path(rt.env["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_bytes(host.client_key.read_bytes())
    (home / ".ssh" / "id_ed25519").chmod(0o600)
    shorthand = f"ssh:127.0.0.1:{host.port}"
    pane_id = new_tab(rt, shorthand)
    pane = settled_phase(rt, pane_id)
    assert pane["ssh"]["phase"] == "failed" and "no known_hosts file" in pane["ssh"]["error"]
    (home / ".ssh" / "known_hosts").write_bytes(host.known_hosts.read_bytes())
    pane_id = new_tab(rt, shorthand)
    pane = settled_phase(rt, pane_id)
    assert pane["ssh"]["phase"] == "ready", pane
    assert pane["shell"] == shorthand
    for bad in ("ssh:", "ssh:@host", "ssh:host:0", "ssh:host:x", "ssh:a b"):
        assert rt.error("tab.new", {"shell": bad})["code"] == "invalid_shell", bad


def test_resizes_reach_the_remote_pty_and_an_exit_keeps_the_last_screen(
    rt: Runtime, host: SshHost
) -> None:
    pane_id = new_tab(rt, "buildi")
    assert settled_phase(rt, pane_id)["ssh"]["phase"] == "ready"
    before = record(rt, pane_id)
    assert rt.ok("pane.run", {"pane_id": pane_id, "command": "stty size"})["exit_code"] == 0
    rt.wait_text(pane_id, f"{before['rows']} {before['cols']}")
    split = rt.ok("pane.split", {"pane_id": pane_id, "direction": "right"})
    assert record(rt, split["pane_id"])["remote"] is False  # a split without shell is local
    after = record(rt, pane_id)
    assert after["cols"] < before["cols"]
    rt.ok("pane.run", {"pane_id": pane_id, "command": "clear; stty size"})
    rt.wait_text(pane_id, f"{after['rows']} {after['cols']}")
    rt.ok("pane.prompt", {"pane_id": pane_id, "text": "exit 3"})
    wait_for(lambda: record(rt, pane_id)["exited"], 15, "the remote shell's exit")
    pane = record(rt, pane_id)
    assert pane["exit_reason"] == "remote shell exited with status 3", pane
    assert pane["ssh"]["phase"] == "ready"  # it ended by itself: the connection did not fail
    assert "exit 3" in rt.ok("pane.read", {"pane_id": pane_id})["text"]
    error = rt.error("pane.prompt", {"pane_id": pane_id, "text": "echo more"})
    assert error["code"] == "invalid_state" and error["details"]["exited"] is True


def test_a_key_from_the_agent(host: SshHost, runtime_env: dict[str, str], tmp_path: Path) -> None:
    """No identity_file, no default key: the key comes from a real ssh-agent."""
    agent_bin, add_bin = shutil.which("ssh-agent"), shutil.which("ssh-add")
    if agent_bin is None or add_bin is None:
        pytest.skip("no ssh-agent")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen([agent_bin, "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        wait_for(sock.exists, 10, "the agent's socket")
        env = {**runtime_env, "SSH_AUTH_SOCK": str(sock)}
        added = subprocess.run(
            [add_bin, str(host.client_key)], env=env, capture_output=True, timeout=10
        )
        assert added.returncode == 0, added
        profile = (
            f'[profiles.viaagent]\nssh = {{ host = "127.0.0.1", port = {host.port}, '
            f'known_hosts = "{host.known_hosts}" }}\n'
        )
        (Path(env["PEBREL_DATA_DIR"]) / "settings.toml").write_text(profile)
        with started_runtime(env) as rt:
            pane_id = new_tab(rt, "viaagent")
            assert settled_phase(rt, pane_id)["ssh"]["phase"] == "ready", record(rt, pane_id)
            prompt_drawn(rt, pane_id)
    finally:
        agent.terminate()
        agent.wait(10)


def test_a_flood_over_ssh_arrives_whole(rt: Runtime, host: SshHost) -> None:
    """Remote output faster than the screen takes it: the channel pauses, nothing is lost."""
    pane_id = new_tab(rt, "buildi")
    assert settled_phase(rt, pane_id)["ssh"]["phase"] == "ready"
    ran = rt.ok(
        "pane.run",
        {"pane_id": pane_id, "command": "seq 1 1500000; echo flood-done", "timeout_ms": 90_000},
    )
    assert ran["exit_code"] == 0
    text = rt.wait_text(pane_id, "flood-done")
    lines = text.split("\n")
    assert "1500000" in lines and lines.index("1500000") + 1 == lines.index("flood-done")
    assert rt.ok("pane.run", {"pane_id": pane_id, "command": "true"})["exit_code"] == 0
