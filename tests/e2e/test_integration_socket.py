"""The integration socket `<data_dir>/integration.sock` (FEATURES I1.6, I1.3; #17 item 2).

A real runtime in a temp data dir, its collab service serving the socket, raw JSON Lines: the
socket is private (0600 in a 0700 dir); the hello admits a stored principal and refuses, with
the spec's error line and a close, a wrong token, an unknown id (the same answer), a revoked
principal, another protocol or version and a line that is no hello; requests are answered by
id; a line over 1 MiB is refused; the adapter's limits hold (a hello deadline, unauthenticated
connections bounded in number and bytes, a client that pipelines and never reads paused without
stalling the others); a SIGKILLed service's stale socket is replaced when the router restarts
it; a data dir too long for a Unix socket path keeps the service from starting, and says why.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pebrel import integration_wire as wire
from pebrel.router import adapter_limits
from tests.collab_fixtures import collab_pids, kill_collab, serving
from tests.conftest import Runtime, base_env, inject_env, started_runtime, wait_for
from tests.e2e.test_transport_limits import peak_rss
from tests.integration_fixtures import (
    Line,
    add_principal,
    admitted,
    group,
    listening,
    revoke_principal,
    signed_in,
    socket_file,
)

pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024


@pytest.fixture
def principal(runtime: Runtime) -> tuple[str, str]:
    """A principal `bridge` of a new group, allowed to read; (its id, its token)."""
    wait_for(lambda: serving(runtime), 20, "the collab service")
    listening(runtime)
    return "bridge", add_principal(runtime, group(runtime))


def runtime_log(rt: Runtime) -> str:
    return (rt.data_dir / "runtime.log").read_text(errors="replace")


def assert_error(line: dict[str, object], code: str, request_id: object = None) -> None:
    assert line["type"] == "error" and line["ok"] is False and line["code"] == code, line
    assert isinstance(line["error"], str) and line["retryable"] is False, line
    assert isinstance(line["details"], dict), line
    assert line.get("id") == request_id, line


def collab_process(rt: Runtime) -> psutil.Process:
    (pid,) = wait_for(lambda: collab_pids(rt) or None, 15, "the collab service process")
    return psutil.Process(pid)


# ---- the socket and the hello ----------------------------------------------------------------


def test_the_socket_is_private_and_a_hello_admits_the_principal(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """I1.6: mode 0600 in a 0700 data dir (the fixture made the dir 0755: the service tightened
    it); the hello's answer names the protocol, version, principal and server version;
    requests are answered by their ids, as the principal, with the spec's error line."""
    path = socket_file(runtime)
    st = os.lstat(path)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.geteuid()
    assert stat.S_IMODE(os.stat(runtime.data_dir).st_mode) == 0o700
    principal_id, token = principal
    with Line(runtime) as line:
        answer = line.hello(principal_id, token)
        assert answer == {
            "type": "hello",
            "ok": True,
            "protocol": "pebrel.integration",
            "version": 1,
            "principal": principal_id,
            "server_version": serving(runtime)["server_version"],  # type: ignore[index]
        }
        capabilities = line.call(7, "capabilities")
        assert capabilities["type"] == "result" and capabilities["id"] == 7, capabilities
        assert capabilities["ok"] is True and capabilities["result"]["integration_protocol"] == 1
        listed = line.call("list", "task.list")
        assert listed == {"type": "result", "id": "list", "ok": True, "result": {"tasks": []}}
        unknown = line.call(8, "no.such.method")
        assert_error(unknown, "INVALID_ARGUMENT", 8)
        bad = line.call(9, "task.list", {"status": "sideways"})
        assert_error(bad, "INVALID_ARGUMENT", 9)
        assert bad["details"]["field"] == "status" and bad["details"]["method"] == "task.list"
        line.send_raw(b'{"method": "task.list"}\n')  # no id: answered without one
        assert_error(line.read(), "INVALID_ARGUMENT")
        line.send_raw(b"not json\n")
        assert_error(line.read(), "INVALID_ARGUMENT")
        line.send({"id": 10, "method": "task.list", "params": {"group": "\ud800"}})
        assert_error(line.read(), "INVALID_ARGUMENT", 10)
        # Requests run concurrently; each answer is one whole line with its id.
        line.send_raw(b"".join(wire.encode(wire.request(i, "task.list", {})) for i in range(50)))
        ids = sorted(line.read()["id"] for _ in range(50))
        assert ids == list(range(50))
        assert line.call(11, "capabilities")["ok"] is True  # still open after all that
    assert "Traceback" not in runtime_log(runtime)


def test_hellos_that_are_refused_get_an_error_line_and_a_close(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """I1.6, I1.4: a wrong token and an unknown id are the same INTEGRATION_UNAUTHORIZED (no
    oracle for ids); a revoked principal INTEGRATION_REVOKED; another protocol or version
    INCOMPATIBLE_INTEGRATION_PROTOCOL; a first line that is no JSON object INVALID_ARGUMENT.
    Each is followed by a close; the token is in no log line."""
    principal_id, token = principal
    refusals: list[tuple[dict[str, object] | bytes, str]] = [
        (wire.hello(principal_id, token[:-1] + ("x" if token[-1] != "x" else "y")), "UNAUTH"),
        (wire.hello("nobody", token), "UNAUTH"),
        (wire.hello(principal_id, ""), "UNAUTH"),
        ({"protocol": "pebrel.integration", "version": 1, "principal": principal_id}, "UNAUTH"),
        ({**wire.hello(principal_id, token), "token": "\ud800"}, "UNAUTH"),
        ({**wire.hello(principal_id, token), "protocol": "nebula.runtime"}, "INCOMPATIBLE"),
        ({**wire.hello(principal_id, token), "version": 2}, "INCOMPATIBLE"),
        ({**wire.hello(principal_id, token), "version": True}, "INCOMPATIBLE"),
        ({"id": 1, "method": "task.list", "params": {}}, "INCOMPATIBLE"),
        (b"garbage\n", "INVALID_ARGUMENT"),
        (b"[1, 2]\n", "INVALID_ARGUMENT"),
    ]
    codes = {
        "UNAUTH": "INTEGRATION_UNAUTHORIZED",
        "INCOMPATIBLE": "INCOMPATIBLE_INTEGRATION_PROTOCOL",
        "INVALID_ARGUMENT": "INVALID_ARGUMENT",
    }
    messages = set()
    for first, code in refusals:
        with Line(runtime) as line:
            if isinstance(first, bytes):
                line.send_raw(first)
            else:
                line.send(first)
            answer = line.read()
            assert_error(answer, codes[code])
            if code == "INCOMPATIBLE":
                assert answer["details"]["versions"] == [1], answer
            if code == "UNAUTH":
                messages.add(answer["error"])
            assert line.closed(), first
    assert len(messages) == 1, messages
    revoke_principal(runtime, principal_id)
    with Line(runtime) as line:
        answer = line.hello(principal_id, token)
        assert_error(answer, "INTEGRATION_REVOKED")
        assert line.closed()
    log = runtime_log(runtime)
    assert token not in log and token[:-1] not in log
    assert "Traceback" not in log


def test_a_line_over_one_mib_is_refused_and_closes(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """A line longer than 1 MiB, before or after the hello: INVALID_ARGUMENT (with the limit),
    then the connection is closed; the service goes on serving."""
    principal_id, token = principal
    with Line(runtime) as line:
        line.send_raw(b'{"protocol": "' + b"p" * wire.MAX_LINE_BYTES + b'"}\n')
        answer = line.read()
        assert_error(answer, "INVALID_ARGUMENT")
        assert answer["details"]["limit_bytes"] == wire.MAX_LINE_BYTES
        assert line.closed()
    with signed_in(runtime, principal_id, token) as line:
        params = {"group": "g" * wire.MAX_LINE_BYTES}
        line.send_raw(wire.encode(wire.request(1, "task.list", params)))
        answer = line.read()
        assert_error(answer, "INVALID_ARGUMENT")
        assert answer["details"]["limit_bytes"] == wire.MAX_LINE_BYTES
        assert line.closed()
    with signed_in(runtime, principal_id, token) as line:
        assert line.call(1, "task.list")["ok"] is True


# ---- the adapter's limits ----------------------------------------------------------------------


def send_all(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd`` whatever its blocking mode: the reading thread sets the
    socket's timeout (which makes the fd non-blocking) while this one is still sending."""
    view = memoryview(data)
    while view:
        select.select([], [fd], [])
        try:
            view = view[os.write(fd, view[: 256 * 1024]) :]
        except BlockingIOError:
            continue


def test_a_client_that_pipelines_and_never_reads_is_paused_and_others_are_served(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """#17 item 8: the same backpressure as the adapter. Answers pile up unread (~50 MiB of
    them asked for): the service stops reading that connection, its memory stays bounded,
    other connections are answered meanwhile; once the client reads, every answer arrives
    exactly once."""
    principal_id, token = principal
    service = collab_process(runtime)
    rss_before = peak_rss(service)
    count = 400
    name = "x" * (64 * 1024)  # an unknown method: its error line names it twice (~128 KiB)
    requests = b"".join(wire.encode(wire.request(i, f"{name}.{i}", {})) for i in range(count))
    hostile = signed_in(runtime, principal_id, token)
    hostile.sock.settimeout(None)
    sender = threading.Thread(target=send_all, args=(hostile.sock.fileno(), requests), daemon=True)
    try:
        sender.start()
        hostile.sock.settimeout(20)  # answers flow: the service took some of the requests
        assert hostile.sock.recv(1, socket.MSG_PEEK)
        hostile.sock.settimeout(None)
        for attempt in range(3):
            with signed_in(runtime, principal_id, token) as other:
                assert other.call(attempt, "capabilities", {})["ok"] is True
        assert sender.is_alive(), "the service read every request of a client that reads none"
        assert peak_rss(service) - rss_before < 48 * MIB
        ids = []
        for _ in range(count):
            answer = hostile.read(timeout_s=30)
            assert answer["code"] == "INVALID_ARGUMENT", answer["error"][:100]
            ids.append(answer["id"])
        sender.join(timeout=10)
        assert not sender.is_alive()
        assert sorted(ids) == list(range(count))
    finally:
        hostile.close()
    assert peak_rss(service) - rss_before < 48 * MIB
    assert serving(runtime) is not None


def test_partial_hellos_are_refused_past_the_budget(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """Unterminated hellos pin at most the unauthenticated budget (16 MiB): connections past it
    are closed; a principal is still admitted and served."""
    principal_id, token = principal
    chunk = b'{"protocol": "' + b"p" * (MIB - 64)  # under the line limit, never ended
    total = 24
    budget_holds = adapter_limits.UNAUTHENTICATED_BUDGET_BYTES // len(chunk)
    sockets = [Line(runtime) for _ in range(total)]
    try:
        for line in sockets:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                line.send_raw(chunk)
        over = total - budget_holds
        closed: set[int] = set()

        def enough_closed() -> bool:  # silently (no hello deadline's line: 5 s not reached)
            closed.update(i for i, line in enumerate(sockets) if line.closed(timeout_s=0.01))
            return len(closed) >= over

        wait_for(enough_closed, adapter_limits.AUTH_DEADLINE_S - 1, f"{over} refused")
        with signed_in(runtime, principal_id, token) as line:
            assert line.call(1, "task.list")["ok"] is True
    finally:
        for line in sockets:
            line.close()


@pytest.fixture
def injected_runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runtime]:
    env = {**base_env(tmp_path), **inject_env(request.param)}
    with started_runtime(env) as rt:
        wait_for(lambda: serving(rt), 20, "the collab service")
        listening(rt)
        yield rt


@pytest.mark.parametrize("injected_runtime", ["short_auth_deadline"], indirect=True)
def test_no_hello_within_the_deadline_is_an_error_line_and_a_close(
    injected_runtime: Runtime,
) -> None:
    rt = injected_runtime
    principal_id, token = "bridge", add_principal(rt, group(rt))
    with Line(rt) as idle, Line(rt) as partial:
        partial.send_raw(b'{"protocol": "pebrel.integration"')
        for line in (idle, partial):
            answer = line.read(timeout_s=10)
            assert_error(answer, "INTEGRATION_UNAUTHORIZED")
            assert "hello" in answer["error"]
            assert line.closed()
    with signed_in(rt, principal_id, token) as line:  # an admitted one has no deadline
        for attempt in range(3):
            line.sock.settimeout(1)
            with pytest.raises(TimeoutError):
                line.sock.recv(1)
            assert line.call(attempt, "task.list")["ok"] is True


@pytest.mark.parametrize("injected_runtime", ["few_connections"], indirect=True)
def test_unauthenticated_connections_are_bounded_in_number(injected_runtime: Runtime) -> None:
    """At most half the cap (4 of 8 here) wait for their hello: past it the oldest is closed,
    so idle sockets never lock a principal out; past the cap a connection is closed at once."""
    rt = injected_runtime
    principal_id, token = "bridge", add_principal(rt, group(rt))
    idle = [Line(rt) for _ in range(20)]
    held: list[Line] = []
    extra: list[Line] = []
    try:
        assert all(line.closed(timeout_s=5) for line in idle[:16])
        for line in idle:
            line.close()
        for _ in range(8):  # the idle ones' closes may still be on their way to the service
            held.append(wait_for(lambda: admitted(rt, principal_id, token), 10, "admitted"))
        for _ in range(5):
            extra.append(Line(rt))
        assert all(line.closed(timeout_s=5) for line in extra)
        assert held[0].call(1, "task.list")["ok"] is True
        held.pop().close()
        again = wait_for(lambda: admitted(rt, principal_id, token), 10, "one below the cap")
        again.close()
    finally:
        for line in [*idle, *held, *extra]:
            line.close()
    log = runtime_log(rt)
    assert log.count("too many unauthenticated") <= 2, log[-2000:]
    assert log.count("connection cap") <= 2, log[-2000:]


# ---- restarts and refusals -----------------------------------------------------------------


def test_the_socket_is_back_after_the_service_is_killed(
    runtime: Runtime, principal: tuple[str, str]
) -> None:
    """A SIGKILLed service leaves its socket file behind; the router restarts the service,
    which replaces the stale file with a new 0600 socket and admits the principal again."""
    principal_id, token = principal
    assert runtime_log(runtime).count("integration socket listening") == 1
    line = signed_in(runtime, principal_id, token)
    try:
        killed = kill_collab(runtime)
        assert line.closed()
    finally:
        line.close()
    wait_for(lambda: serving(runtime), 30, "the restarted collab service")
    assert killed not in collab_pids(runtime)
    assert stat.S_IMODE(os.lstat(socket_file(runtime)).st_mode) == 0o600
    assert runtime_log(runtime).count("integration socket listening") == 2
    with signed_in(runtime, principal_id, token) as again:
        assert again.call(1, "task.list")["ok"] is True


def test_a_data_dir_too_long_for_the_socket_keeps_the_service_from_starting(
    tmp_path: Path,
) -> None:
    """I1.6: `<data_dir>/integration.sock` longer than a Unix socket path may be: the runtime
    runs without its collab service, says why in runtime.log and in every collab answer."""
    env = base_env(tmp_path)
    room = wire.SOCKET_PATH_MAX_BYTES - len(os.fsencode(tmp_path)) - len(wire.SOCKET_NAME)
    data = tmp_path / ("d" * (room + 8))
    data.mkdir()
    assert wire.path_problem(data) is not None
    env["PEBREL_DATA_DIR"] = str(data)
    with started_runtime(env) as rt:
        assert rt.ok("runtime.describe")["app"] == "pebrel"
        envelope = rt.call("collab.capabilities")
        assert envelope["ok"] is False, envelope
        error = envelope["error"]
        assert error["code"] == "INTEGRATION_RUNTIME_UNAVAILABLE", error
        assert "integration.sock" in error["message"] and "PEBREL_DATA_DIR" in error["message"]
        assert collab_pids(rt) == []
        assert "the collab service is not started" in runtime_log(rt)
        assert not (data / wire.SOCKET_NAME).exists()


def test_something_else_at_the_socket_path_is_left_alone(tmp_path: Path) -> None:
    """Only a socket at `integration.sock` is taken for a killed service's: a regular file
    there is never removed (the service does not start, and the log says why)."""
    env = base_env(tmp_path)
    keep = Path(env["PEBREL_DATA_DIR"]) / wire.SOCKET_NAME
    keep.write_text("not a socket")
    with started_runtime(env) as rt:
        wait_for(lambda: "exists and is not a socket" in runtime_log(rt), 20, "the refusal logged")
        assert keep.read_text() == "not a socket"
        assert rt.call("collab.capabilities")["ok"] is False
        with pytest.raises(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(keep))
