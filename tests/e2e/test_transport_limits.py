"""The adapter's limits (docs/protocol.md "Limits"), probed as a hostile local client would.

A client that never reads its answers, sockets that never authenticate, first lines that never
end, a subscriber that stops reading: each costs the runtime a bounded amount, and the other
clients go on being answered (R1.2, R1.5, R2.2, R2.7; #15).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from pebrel import PROTOCOL
from pebrel.router import adapter_limits
from tests.conftest import Runtime, at_prompt, base_env, inject_env, started_runtime, wait_for
from tests.e2e.test_transport import Wire, port_info

pytestmark = pytest.mark.timeout(90)

MIB = 1024 * 1024


def adapter_of(rt: Runtime) -> psutil.Process:
    """The runtime's process listening on its client port."""
    info = port_info(rt)
    router = psutil.Process(info["pid"])
    for proc in [router, *router.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port == info["port"]:
                    return proc
    raise AssertionError("no process listens on the client port")


def peak_rss(proc: psutil.Process) -> int:
    """The process's resident-set high-water mark (VmHWM), in bytes."""
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def closed_by_server(sock: socket.socket, timeout_s: float) -> bool:
    """True if the server closes the connection (EOF or reset) within timeout_s, no byte sent."""
    sock.settimeout(timeout_s)
    try:
        data = sock.recv(1)
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    assert data == b"", data
    return True


def runtime_log(rt: Runtime) -> str:
    return (rt.data_dir / "runtime.log").read_text(errors="replace")


# ---- a client that pipelines and never reads (R1.5, R2.2) ----------------------------------


def test_a_client_that_never_reads_is_paused_and_others_are_served(runtime: Runtime) -> None:
    """The adapter stops reading a connection whose answers pile up unsent: its memory stays
    bounded while the hostile client sends ~100 MiB worth of answers' requests, another client
    is answered meanwhile, and once it reads, every answer arrives exactly once."""
    at_prompt(runtime)
    runtime.run(1, "seq 1 3000")
    adapter = adapter_of(runtime)
    rss_before = adapter.memory_info().rss
    count = 4000
    with Wire(runtime) as probe:
        line = probe.request_line("pane.read", {"window_id": 1, "pane_id": 1, "lines": 2000})
        probe.send_raw(line)
        answer_size = len(probe.read_line())
    assert answer_size * count > 10 * (adapter_limits.MAX_UNSENT_ANSWER_BYTES + 2 * MIB)
    # Requests enough to fill the kernel's buffers (the adapter's receive buffer grows up to
    # tcp_rmem's maximum) behind a paused reader: the sender then stays blocked.
    rmem_max = int(Path("/proc/sys/net/ipv4/tcp_rmem").read_text().split()[2])
    pad = "p" * max(2048, 2 * rmem_max // count)
    requests = b"".join(
        line.replace(b'"id": 1', f'"id": "{pad}-{index}"'.encode()) for index in range(count)
    )
    hostile = Wire(runtime)
    hostile.sock.settimeout(None)
    sender = threading.Thread(target=hostile.send_raw, args=(requests,), daemon=True)
    try:
        sender.start()
        with Wire(runtime) as other:
            for attempt in range(3):
                answer = other.call("runtime.snapshot", request_id=attempt)
                assert answer["ok"] and answer["id"] == attempt, answer
        assert sender.is_alive(), "the adapter read every request of a client that reads nothing"
        assert peak_rss(adapter) - rss_before < 48 * MIB
        ids = []
        with Wire(runtime) as other:
            for index in range(count):
                got = hostile.read_json(timeout_s=30)
                assert got["ok"], got
                ids.append(got["id"])
                if index % 1000 == 0:  # served while the backlog drains, too
                    assert other.call("runtime.snapshot", request_id=index)["id"] == index
        sender.join(timeout=10)
        assert not sender.is_alive()
        assert sorted(ids, key=lambda i: int(i.rsplit("-", 1)[1])) == [
            f"{pad}-{index}" for index in range(count)
        ]
    finally:
        hostile.close()
    assert peak_rss(adapter) - rss_before < 48 * MIB
    assert runtime.ok("runtime.describe")["app"] == "pebrel"


# ---- before authentication (R1.2) ----------------------------------------------------------


def test_a_token_with_a_lone_surrogate_is_a_silent_close(runtime: Runtime) -> None:
    """A first line whose token holds "\\ud800" is a wrong token: no byte, no traceback."""
    for _ in range(20):
        with Wire(runtime) as wire:
            body = json.loads(wire.request_line("runtime.describe", token="SURROGATE"))
            text = json.dumps(body).replace('"SURROGATE"', '"\\ud800"')
            wire.send_raw(text.encode() + b"\n")
            assert wire.bytes_until_closed() == b""
    assert runtime.ok("runtime.describe")["app"] == "pebrel"
    log = runtime_log(runtime)
    assert "Traceback" not in log and "internal_error" not in log


@pytest.fixture
def injected_runtime(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Runtime]:
    env = {**base_env(tmp_path), **inject_env(request.param)}
    with started_runtime(env) as rt:
        yield rt


@pytest.mark.parametrize("injected_runtime", ["short_auth_deadline"], indirect=True)
def test_an_idle_unauthenticated_socket_is_closed_after_the_deadline(
    injected_runtime: Runtime,
) -> None:
    rt = injected_runtime
    info = port_info(rt)
    idle = socket.create_connection(("127.0.0.1", info["port"]))
    partial = socket.create_connection(("127.0.0.1", info["port"]))
    try:
        partial.sendall(b'{"protocol": "' + PROTOCOL.encode())
        assert closed_by_server(idle, 10)
        assert closed_by_server(partial, 10)
        # An authenticated connection is not subject to the deadline.
        with Wire(rt) as wire:
            assert wire.call("runtime.describe")["ok"]
            assert wire.call("runtime.describe", request_id=2)["ok"]
    finally:
        idle.close()
        partial.close()


def test_partial_first_lines_are_refused_past_the_budget(runtime: Runtime) -> None:
    """Unterminated first lines pin at most the unauthenticated budget: connections past it
    are closed at once, an authenticated client is served, the adapter stays small."""
    info = port_info(runtime)
    adapter = adapter_of(runtime)
    rss_before = adapter.memory_info().rss
    chunk = b'{"method": "' + b"x" * (3 * MIB)  # under the 4 MiB line limit, never ended
    total = 12  # 36 MiB asked for; the budget takes 5 of them
    sockets = [socket.create_connection(("127.0.0.1", info["port"])) for _ in range(total)]
    try:
        for sock in sockets:
            sock.settimeout(10)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(chunk)
        over = total - adapter_limits.UNAUTHENTICATED_BUDGET_BYTES // len(chunk)
        closed: set[int] = set()

        def enough_closed() -> bool:
            closed.update(i for i, s in enumerate(sockets) if closed_by_server(s, 0.01))
            return len(closed) >= over

        wait_for(enough_closed, 10, f"{over} connections refused past the budget")
        with Wire(runtime) as wire:
            assert wire.call("runtime.describe")["ok"]
        assert peak_rss(adapter) - rss_before < adapter_limits.UNAUTHENTICATED_BUDGET_BYTES + (
            24 * MIB
        )
    finally:
        for sock in sockets:
            sock.close()
    assert len(runtime_log(runtime)) < 64 * 1024


@pytest.mark.parametrize("injected_runtime", ["few_connections"], indirect=True)
def test_connections_past_the_cap_are_closed_at_once(injected_runtime: Runtime) -> None:
    rt = injected_runtime
    info = port_info(rt)
    held: list[Wire] = []
    extra: list[socket.socket] = []
    try:
        for _ in range(8):
            held.append(Wire(rt))
            assert held[-1].call("runtime.describe")["ok"]
        for _ in range(30):
            extra.append(socket.create_connection(("127.0.0.1", info["port"])))
        assert all(closed_by_server(sock, 5) for sock in extra)
        held.pop().close()
        wait_for(lambda: _answers(rt), 10, "a connection to be taken again below the cap")
    finally:
        for wire in held:
            wire.close()
        for sock in extra:
            sock.close()
    log = runtime_log(rt)
    assert log.count("connection cap") <= 2, log[-2000:]


@pytest.mark.parametrize("injected_runtime", ["few_connections"], indirect=True)
def test_idle_unauthenticated_sockets_cannot_fill_the_cap(injected_runtime: Runtime) -> None:
    """Unauthenticated connections take at most half the cap (4 of 8 here): past it the oldest
    is closed, so a crowd of idle sockets never locks an authenticated client out."""
    rt = injected_runtime
    info = port_info(rt)
    idle = [socket.create_connection(("127.0.0.1", info["port"])) for _ in range(20)]
    try:
        assert all(closed_by_server(sock, 5) for sock in idle[:16])
        for attempt in range(3):
            with Wire(rt) as wire:
                assert wire.call("runtime.describe", request_id=attempt)["ok"]
    finally:
        for sock in idle:
            sock.close()
    log = runtime_log(rt)
    assert log.count("too many unauthenticated") <= 2, log[-2000:]


@pytest.mark.parametrize("injected_runtime", ["few_fds"], indirect=True)
def test_running_out_of_descriptors_is_logged_briefly_and_recovered(
    injected_runtime: Runtime,
) -> None:
    """EMFILE on accept: the clients past it wait in the backlog and are served once others
    leave; runtime.log says so in a line or two, not one per retry."""
    rt = injected_runtime
    info = port_info(rt)
    with Wire(rt) as probe:
        line = probe.request_line("runtime.describe")
    held: list[Wire] = []
    waiting: list[socket.socket] = []
    try:
        for attempt in range(32):  # authenticated one after the other: within the limit
            held.append(Wire(rt))
            assert held[-1].call("runtime.describe", request_id=attempt)["ok"]
        for _ in range(24):  # past the limit: accept() fails with EMFILE, they wait
            waiting.append(socket.create_connection(("127.0.0.1", info["port"])))
            waiting[-1].sendall(line)
        wait_for(lambda: "out of system resource" in runtime_log(rt), 10, "EMFILE logged")
        for attempt in range(20):  # the connections it holds are served meanwhile
            assert held[0].call("runtime.describe", request_id=attempt)["ok"]
        for wire in held:
            wire.close()
        for sock in waiting:  # accepted once descriptors are free again
            sock.settimeout(10)
            assert json.loads(sock.makefile("rb").readline())["ok"]
    finally:
        for wire in held:
            wire.close()
        for sock in waiting:
            sock.close()
    assert runtime_log(rt).count("out of system resource") <= 2


def _answers(rt: Runtime) -> bool:
    with Wire(rt) as wire:
        wire.send("runtime.describe")
        line = wire.read_line()
        return bool(line) and json.loads(line)["ok"] is True


# ---- a subscriber that stops reading (R2.7) ------------------------------------------------


@pytest.fixture
def small_backlog_runtime(tmp_path: Path) -> Iterator[Runtime]:
    env = {
        **base_env(tmp_path),
        **inject_env("quick_close_flush"),
        "PEBREL_SLOW_CONSUMER_BYTES": "65536",
    }
    with started_runtime(env) as rt:
        yield rt


def test_a_dropped_subscriber_that_reads_nothing_is_aborted(small_backlog_runtime: Runtime) -> None:
    """Past its backlog bound a subscriber is dropped; if it reads nothing of what is queued,
    its connection is aborted rather than left open waiting for the flush."""
    rt = small_backlog_runtime
    for pane in range(6):
        rt.ok("pane.split", {"window_id": 1, "pane_id": 1 + pane, "direction": "down"})
    info = port_info(rt)
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(("127.0.0.1", info["port"]))
    adapter = adapter_of(rt)
    port = slow.getsockname()[1]

    def slow_is_open() -> bool:
        return any(c.raddr and c.raddr.port == port for c in adapter.net_connections(kind="inet"))

    try:
        token = info["token"]
        slow.sendall(_subscribe_line(token))
        with Wire(rt) as writer:
            names = iter(range(100_000))

            def dropped() -> bool:
                for _ in range(50):
                    answer = writer.call("tab.rename", {"tab_index": 0, "name": f"n{next(names)}"})
                    assert answer["ok"], answer
                return not slow_is_open()

            wait_for(dropped, 60, "the slow subscriber to be disconnected")
        assert rt.ok("runtime.describe")["app"] == "pebrel"
    finally:
        slow.close()


def _subscribe_line(token: str) -> bytes:
    body: dict[str, Any] = {
        "protocol": PROTOCOL,
        "version": 1,
        "id": "sub",
        "token": token,
        "method": "events.subscribe",
        "params": {},
    }
    return json.dumps(body).encode() + b"\n"
