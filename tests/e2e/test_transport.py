"""The client transport over raw sockets: discovery, authentication, legacy lines, envelopes.

Every test talks to a real runtime through `socket.create_connection`, with the port and token
read from `runtime.port`, so nothing of `pebrel.client` hides what goes over the wire
(R1.1-R1.4, R2.2, R2.3, R2.6).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest

from pebrel import PROTOCOL, __version__, entrypoints
from pebrel.entrypoints import module_argv
from pebrel.envelope import MAX_REQUEST_LINE_BYTES
from tests.conftest import Runtime, wait_for

pytestmark = pytest.mark.timeout(60)

#: How long a single answer (or a silent close) may take before the test fails.
ANSWER_DEADLINE_S = 5.0


def port_info(rt: Runtime) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((rt.data_dir / "runtime.port").read_text())
    return loaded


class Wire:
    """One raw TCP connection to the runtime, read line by line with a deadline."""

    def __init__(self, rt: Runtime) -> None:
        info = port_info(rt)
        self.token: str = info["token"]
        self.sock = socket.create_connection(("127.0.0.1", info["port"]), timeout=5)
        self.buffer = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request_line(
        self,
        method: str,
        params: Any = None,
        request_id: Any = 1,
        *,
        token: Any = None,
        **overrides: Any,
    ) -> bytes:
        body: dict[str, Any] = {
            "protocol": PROTOCOL,
            "version": 1,
            "id": request_id,
            "token": self.token if token is None else token,
            "method": method,
            "params": {} if params is None else params,
        }
        body.update(overrides)
        return json.dumps(body).encode() + b"\n"

    def send(self, method: str, params: Any = None, request_id: Any = 1, **overrides: Any) -> None:
        self.send_raw(self.request_line(method, params, request_id, **overrides))

    def read_line(self, timeout_s: float = ANSWER_DEADLINE_S) -> bytes:
        """The next line (with its newline), or b"" if the server closed the connection."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no line within {timeout_s}s; partial: {bytes(self.buffer[:200])!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            if not chunk:
                leftover = bytes(self.buffer)
                self.buffer.clear()
                return leftover
            self.buffer += chunk
        newline = self.buffer.index(b"\n")
        line = bytes(self.buffer[: newline + 1])
        del self.buffer[: newline + 1]
        return line

    def read_json(self, timeout_s: float = ANSWER_DEADLINE_S) -> dict[str, Any]:
        line = self.read_line(timeout_s)
        assert line, "the server closed the connection instead of answering"
        loaded: dict[str, Any] = json.loads(line)
        return loaded

    def call(self, method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
        self.send(method, params, request_id)
        return self.read_json()

    def bytes_until_closed(self, timeout_s: float = ANSWER_DEADLINE_S) -> bytes:
        """Everything the server writes before it closes; fails if it keeps the line open."""
        received = bytes(self.buffer)
        self.buffer.clear()
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"connection still open after {timeout_s}s; got {received[:200]!r}")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                continue
            except ConnectionResetError:
                return received  # closed with unread input: a reset carries no bytes either
            if not chunk:
                return received
            received += chunk


def revision(rt: Runtime) -> int:
    value: int = rt.snapshot()["revision"]
    return value


# ---- R1.1 discovery ------------------------------------------------------------------------


def test_port_file_is_private_and_complete(runtime: Runtime) -> None:
    """R1.1: runtime.port is mode 0600 and holds port, token, pid, version, protocol, ids."""
    path = runtime.data_dir / "runtime.port"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    info = port_info(runtime)
    assert set(info) >= {
        "port",
        "token",
        "pid",
        "version",
        "protocol",
        "started_at",
        "runtime_id",
    }
    assert isinstance(info["port"], int) and 0 < info["port"] < 65536
    assert re.fullmatch(r"[0-9a-f]{32,}", info["token"]), info["token"]
    assert psutil.pid_exists(info["pid"])
    assert psutil.Process(info["pid"]).cmdline()[1:] == module_argv(entrypoints.ROUTER)[1:]
    assert info["version"] == __version__
    assert info["protocol"] == "nebula.runtime"
    assert isinstance(info["started_at"], int | float)
    assert info["started_at"] <= time.time()
    assert info["runtime_id"] == runtime.snapshot()["runtime_id"]


def _runtime_tree(pid: int) -> list[psutil.Process]:
    router = psutil.Process(pid)
    return [router, *router.children(recursive=True)]


def test_listens_on_loopback_only(runtime: Runtime) -> None:
    """R1.1: the client port is bound to 127.0.0.1; nothing of the runtime listens elsewhere."""
    info = port_info(runtime)
    listening = [
        conn.laddr
        for proc in _runtime_tree(info["pid"])
        for conn in proc.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert any(addr.port == info["port"] for addr in listening), listening
    assert all(addr.ip == "127.0.0.1" for addr in listening), listening
    others = [
        addr.address
        for addrs in psutil.net_if_addrs().values()
        for addr in addrs
        if addr.family == socket.AF_INET and not addr.address.startswith("127.")
    ]
    for address in others:
        with pytest.raises(OSError):
            socket.create_connection((address, info["port"]), timeout=2).close()


# ---- R1.2 silent drop ----------------------------------------------------------------------


class Unauthenticated(NamedTuple):
    name: str
    first_line: Callable[[Wire], bytes]


def _without_token(wire: Wire) -> bytes:
    body = json.loads(wire.request_line("runtime.describe"))
    del body["token"]
    return json.dumps(body).encode() + b"\n"


UNAUTHENTICATED = [
    Unauthenticated("no-token", _without_token),
    Unauthenticated("wrong-token", lambda w: w.request_line("runtime.describe", token="0" * 64)),
    Unauthenticated(
        "token-prefix", lambda w: w.request_line("runtime.describe", token=w.token[:8])
    ),
    Unauthenticated(
        "token-not-a-string", lambda w: w.request_line("runtime.describe", token=12345)
    ),
    Unauthenticated("garbage-bytes", lambda w: b"\x00\xff\xfegarbage{{\n"),
    Unauthenticated("empty-object", lambda w: b"{}\n"),
    Unauthenticated("empty-line", lambda w: b"\n"),
    Unauthenticated("json-array", lambda w: json.dumps([w.token]).encode() + b"\n"),
    Unauthenticated("oversized-line", lambda w: b"x" * (MAX_REQUEST_LINE_BYTES + 1024)),
]


def test_a_burst_of_clients_fits_the_accept_queue(runtime: Runtime) -> None:
    """R1.1: the listening socket takes the kernel's full backlog, not asyncio's 100: 128
    agents connecting at once for one request each must not overflow it (a dropped handshake
    is retried only after 0.2-1 s). `ss` shows a listener's backlog as its Send-Q."""
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("`ss` (iproute2) is not installed")
    info = port_info(runtime)
    shown = subprocess.run(
        [ss, "-ltnH", f"sport = :{info['port']}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(shown[2]) >= min(socket.SOMAXCONN, 1024), shown
    sockets = [socket.create_connection(("127.0.0.1", info["port"])) for _ in range(150)]
    try:
        line = (
            json.dumps(
                {
                    "protocol": PROTOCOL,
                    "version": 1,
                    "id": 1,
                    "method": "runtime.snapshot",
                    "params": {},
                    "token": info["token"],
                }
            ).encode()
            + b"\n"
        )
        for sock in sockets:
            sock.sendall(line)
        for sock in sockets:
            sock.settimeout(ANSWER_DEADLINE_S)
            assert json.loads(sock.makefile("rb").readline())["ok"]
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.parametrize("case", UNAUTHENTICATED, ids=[c.name for c in UNAUTHENTICATED])
def test_unauthenticated_first_line_is_dropped_silently(
    runtime: Runtime, case: Unauthenticated
) -> None:
    """R1.2: a first line without the right token closes the connection with zero bytes."""
    with Wire(runtime) as wire:
        # The server may close while we are still writing: that is silent too.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            wire.send_raw(case.first_line(wire))
        assert wire.bytes_until_closed() == b""
    assert runtime.ok("runtime.describe")["app"] == "pebrel"


# ---- R1.3 versioning -----------------------------------------------------------------------


class Mismatch(NamedTuple):
    name: str
    overrides: dict[str, Any]


MISMATCHES = [
    Mismatch("wrong-protocol", {"protocol": "other.runtime"}),
    Mismatch("missing-protocol", {"protocol": None}),
    Mismatch("version-2", {"version": 2}),
    Mismatch("version-0", {"version": 0}),
    Mismatch("version-string", {"version": "1"}),
    Mismatch("version-true", {"version": True}),
    Mismatch("missing-version", {"version": None}),
]


@pytest.mark.parametrize("case", MISMATCHES, ids=[c.name for c in MISMATCHES])
def test_protocol_or_version_mismatch(runtime: Runtime, case: Mismatch) -> None:
    """R1.3: right token, wrong protocol or version -> protocol_version_mismatch, [1] supported."""
    with Wire(runtime) as wire:
        body = json.loads(wire.request_line("runtime.describe", request_id=41))
        for key, value in case.overrides.items():
            if value is None:
                del body[key]
            else:
                body[key] = value
        wire.send_raw(json.dumps(body).encode() + b"\n")
        answer = wire.read_json()
        assert answer["ok"] is False and answer["id"] == 41
        assert answer["protocol"] == "nebula.runtime" and answer["version"] == 1
        assert answer["error"]["code"] == "protocol_version_mismatch"
        assert answer["error"]["details"]["supported_versions"] == [1]
        # The token was right: the connection stays open and usable.
        assert wire.call("runtime.describe", request_id=42)["ok"] is True


# ---- R1.4 legacy lines ---------------------------------------------------------------------


def test_ping_answers_pong_with_version(runtime: Runtime) -> None:
    """R1.4: `PING <token>` -> `PONG pebrel <version>`, and the connection stays usable."""
    with Wire(runtime) as wire:
        wire.send_raw(f"PING {wire.token}\n".encode())
        assert wire.read_line() == f"PONG pebrel {__version__}\n".encode()
        wire.send_raw(f"PING {wire.token}\r\n".encode())
        assert wire.read_line() == f"PONG pebrel {__version__}\n".encode()
        assert wire.call("runtime.describe", request_id=3)["ok"] is True


@pytest.mark.parametrize("line", [b"PING wrong\n", b"PING\n", b"PING \n", b"ATTACH wrong\n"])
def test_legacy_line_with_bad_token_is_dropped_silently(runtime: Runtime, line: bytes) -> None:
    """R1.2, R1.4: a legacy line without the right token closes the connection, zero bytes."""
    revision_before = revision(runtime)
    with Wire(runtime) as wire:
        wire.send_raw(line)
        assert wire.bytes_until_closed() == b""
    assert revision(runtime) == revision_before


def _attach(rt: Runtime, cwd: str | None = None) -> bytes:
    with Wire(rt) as wire:
        suffix = f" {cwd}" if cwd else ""
        wire.send_raw(f"ATTACH {wire.token}{suffix}\n".encode())
        return wire.read_line(timeout_s=15)


def test_attach_focuses_window_one(runtime: Runtime) -> None:
    """R1.4: `ATTACH <token>` focuses window 1 (even when another one is focused)."""
    assert runtime.ok("window.create")["window_id"] == 2
    assert runtime.snapshot()["focused_window_id"] == 2
    assert _attach(runtime) == b"ATTACHED 1\n"
    snap = runtime.snapshot()
    assert snap["focused_window_id"] == 1
    assert [w["window_id"] for w in snap["windows"] if w["focused"]] == [1]


def test_attach_falls_back_to_the_first_window_then_creates_one(
    runtime: Runtime, tmp_path: Path
) -> None:
    """R1.4: without window 1, ATTACH focuses the lowest window; with none, it creates one."""
    assert runtime.ok("window.create")["window_id"] == 2
    runtime.ok("window.close", {"window_id": 1})
    assert _attach(runtime) == b"ATTACHED 2\n"
    assert runtime.snapshot()["focused_window_id"] == 2

    runtime.ok("window.close", {"window_id": 2})
    assert runtime.snapshot()["windows"] == []
    answer = _attach(runtime, str(tmp_path))
    match = re.fullmatch(rb"ATTACHED (\d+)\n", answer)
    assert match, answer
    new_id = int(match.group(1))
    assert new_id >= 3, "window ids are never reused"
    snap = runtime.snapshot()
    assert [w["window_id"] for w in snap["windows"]] == [new_id]
    assert snap["focused_window_id"] == new_id


# ---- R2.2 / R2.3 bad requests on an authenticated connection -------------------------------


def _authenticated(rt: Runtime) -> Wire:
    wire = Wire(rt)
    answer = wire.call("runtime.describe", request_id="auth")
    assert answer["ok"] is True and answer["id"] == "auth"
    return wire


class BadRequest(NamedTuple):
    name: str
    line: Callable[[Wire], bytes]
    code: str
    request_id: Any


BAD_REQUESTS = [
    BadRequest("garbage-line", lambda w: b"this is not json\n", "invalid_request", None),
    BadRequest("invalid-utf8", lambda w: b'{"id": "\xff\xfe"}\n', "invalid_request", None),
    BadRequest("empty-line", lambda w: b"\n", "invalid_request", None),
    BadRequest("json-array", lambda w: b"[1, 2, 3]\n", "invalid_request", None),
    BadRequest(
        "unknown-method",
        lambda w: w.request_line("pane.teleport", {}, 7),
        "method_not_found",
        7,
    ),
    BadRequest(
        "legacy-method-as-json",
        lambda w: w.request_line("legacy.attach", {}, 8),
        "method_not_found",
        8,
    ),
    BadRequest(
        "lines-not-an-integer",
        lambda w: w.request_line("pane.read", {"pane_id": 1, "lines": "ten"}, "read-1"),
        "invalid_params",
        "read-1",
    ),
    BadRequest(
        "pane-id-bool",
        lambda w: w.request_line("pane.read", {"pane_id": True}, 9),
        "invalid_params",
        9,
    ),
    BadRequest(
        "missing-required",
        lambda w: w.request_line("pane.read", {}, 10),
        "invalid_params",
        10,
    ),
    BadRequest(
        "below-minimum",
        lambda w: w.request_line("pane.read", {"pane_id": 1, "lines": 0}, 11),
        "invalid_params",
        11,
    ),
    BadRequest(
        "unknown-param",
        lambda w: w.request_line("pane.read", {"pane_id": 1, "colour": "red"}, 12),
        "invalid_params",
        12,
    ),
    BadRequest(
        "unknown-param-on-mutation",
        lambda w: w.request_line("window.create", {"title": "x"}, 13),
        "invalid_params",
        13,
    ),
    BadRequest(
        "bad-enum",
        lambda w: w.request_line("pane.split", {"pane_id": 1, "direction": "up"}, 14),
        "invalid_params",
        14,
    ),
    BadRequest(
        "params-list",
        lambda w: w.request_line("runtime.snapshot", [1], 15),
        "invalid_request",
        15,
    ),
    BadRequest(
        "params-string",
        lambda w: w.request_line("runtime.snapshot", "x", 16),
        "invalid_request",
        16,
    ),
    BadRequest(
        "unknown-envelope-field",
        lambda w: w.request_line("runtime.snapshot", {}, 17, extra=1),
        "invalid_request",
        17,
    ),
    BadRequest(
        "missing-method",
        lambda w: w.request_line("", {}, 18),
        "invalid_request",
        18,
    ),
    BadRequest(
        "bool-id",
        lambda w: w.request_line("runtime.snapshot", {}, True),
        "invalid_request",
        None,
    ),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[c.name for c in BAD_REQUESTS])
def test_bad_request_is_refused_and_changes_nothing(runtime: Runtime, case: BadRequest) -> None:
    """R2.2, R2.3: a bad line gets its error code, echoes its id, changes nothing; the
    connection stays usable."""
    revision_before = revision(runtime)
    windows_before = runtime.snapshot()["windows"]
    with _authenticated(runtime) as wire:
        wire.send_raw(case.line(wire))
        answer = wire.read_json()
        assert answer["ok"] is False, answer
        assert answer["error"]["code"] == case.code, answer
        assert answer["id"] == case.request_id
        assert isinstance(answer["error"]["message"], str) and answer["error"]["message"]
        assert isinstance(answer["error"]["details"], dict)
        assert "Traceback" not in json.dumps(answer)
        after = wire.call("runtime.snapshot", request_id="after")
        assert after["ok"] is True and after["id"] == "after"
    assert revision(runtime) == revision_before
    assert runtime.snapshot()["windows"] == windows_before


def test_invalid_params_names_the_problem(runtime: Runtime) -> None:
    """R2.3: invalid_params says which field is wrong, in `details.problem`."""
    with _authenticated(runtime) as wire:
        answer = wire.call("pane.read", {"pane_id": 1, "colour": "red"}, 5)
        assert answer["error"]["details"]["method"] == "pane.read"
        assert "colour" in answer["error"]["details"]["problem"]
        answer = wire.call("pane.read", {"pane_id": 1, "lines": "ten"}, 6)
        assert "lines" in answer["error"]["details"]["problem"]


def test_oversized_line_is_refused_and_the_connection_resynchronises(runtime: Runtime) -> None:
    """DESIGN wire protocol: a line over 4 MiB -> invalid_request; the next line is served."""
    revision_before = revision(runtime)
    with _authenticated(runtime) as wire:
        huge = wire.request_line(
            "pane.prompt", {"pane_id": 1, "text": "x" * MAX_REQUEST_LINE_BYTES}
        )
        assert len(huge) > MAX_REQUEST_LINE_BYTES
        wire.send_raw(huge + wire.request_line("runtime.describe", {}, "next"))
        refused = wire.read_json()
        assert refused["ok"] is False and refused["id"] is None
        assert refused["error"]["code"] == "invalid_request"
        assert refused["error"]["details"]["limit_bytes"] == MAX_REQUEST_LINE_BYTES
        following = wire.read_json()
        assert following["ok"] is True and following["id"] == "next"
        assert following["result"]["app"] == "pebrel"
    assert revision(runtime) == revision_before


def test_ids_are_echoed_and_pipelined_requests_all_answered(runtime: Runtime) -> None:
    """R2.2: int and string ids come back as sent; pipelined requests each get their answer."""
    requests: list[tuple[Any, str, dict[str, Any]]] = [
        (1, "runtime.describe", {}),
        ("two", "runtime.snapshot", {}),
        (3, "pane.read", {"window_id": 1, "pane_id": 1, "lines": 5}),
        ("vier", "pane.wait", {"window_id": 1, "pane_id": 1, "state": "idle", "timeout_ms": 5000}),
        (0, "pane.teleport", {}),
        (-6, "pane.read", {"pane_id": 99}),
        ("", "runtime.describe", {}),
        (2**53, "runtime.snapshot", {}),
    ]
    with Wire(runtime) as wire:
        wire.send_raw(b"".join(wire.request_line(m, p, rid) for rid, m, p in requests))
        answers = [wire.read_json() for _ in requests]
    by_id = {json.dumps(a["id"]): a for a in answers}
    assert sorted(by_id) == sorted(json.dumps(rid) for rid, _, _ in requests)
    assert by_id["1"]["result"]["app"] == "pebrel"
    assert "windows" in by_id['"two"']["result"]
    assert by_id["3"]["result"]["requested_lines"] == 5
    assert by_id['"vier"']["result"]["state"] == "idle"
    assert by_id["0"]["error"]["code"] == "method_not_found"
    assert by_id["-6"]["error"]["code"] == "target_not_found"
    assert by_id['""']["ok"] is True
    assert by_id[str(2**53)]["ok"] is True


def test_client_leaving_during_a_long_wait_does_not_break_the_runtime(runtime: Runtime) -> None:
    """R1.5: a parked pane.wait whose client hangs up leaves the runtime serving others."""
    with Wire(runtime) as wire:
        wire.send(
            "pane.wait",
            {"window_id": 1, "pane_id": 1, "state": "running", "timeout_ms": 60_000},
            "long",
        )
        # Answered after the wait in mailbox order: the wait is parked by now.
        assert wire.call("runtime.describe", request_id="behind")["id"] == "behind"
    assert runtime.ok("runtime.describe")["app"] == "pebrel"
    # Let the abandoned wait resolve (running) with nobody left to answer.
    result = runtime.run(1, "sleep 0.2; echo wait-done-$((6*7))")
    assert result["status"] == "finished" and result["exit_code"] == 0
    assert "wait-done-42" in runtime.read_text(1)
    with Wire(runtime) as wire:
        answer = wire.call("pane.wait", {"pane_id": 1, "state": "settled", "timeout_ms": 5000}, 9)
        assert answer["ok"] is True, answer


def test_disconnect_mid_request_line_is_harmless(runtime: Runtime) -> None:
    """R1.5: a client that dies halfway through a request line changes nothing."""
    revision_before = revision(runtime)
    with _authenticated(runtime) as wire:
        line = wire.request_line("window.create", {}, 1)
        wire.send_raw(line[: len(line) // 2])
    assert runtime.ok("runtime.describe")["app"] == "pebrel"
    assert revision(runtime) == revision_before
    assert [w["window_id"] for w in runtime.snapshot()["windows"]] == [1]


# ---- robustness: every well-formed-enough line gets an answer ------------------------------


def test_integral_float_param_is_answered_promptly(runtime: Runtime) -> None:
    """R2.3: `lines: 10.0` passes the schema's integer check, so it must be served (or refused
    as invalid_params) at once, never left to the worker timeout."""
    with _authenticated(runtime) as wire:
        wire.send("pane.read", {"window_id": 1, "pane_id": 1, "lines": 10.0}, "float")
        answer = wire.read_json(timeout_s=3)
        assert answer["id"] == "float"
        assert answer["ok"] or answer["error"]["code"] == "invalid_params", answer


class Hostile(NamedTuple):
    name: str
    line: Callable[[Wire], bytes]
    request_id: Any


def _with_lone_surrogate(wire: Wire, key: str) -> bytes:
    body = json.loads(wire.request_line("runtime.describe", {}, "placeholder"))
    body[key] = "SURROGATE"
    return json.dumps(body).replace('"SURROGATE"', '"\\ud800"').encode() + b"\n"


HOSTILE = [
    Hostile("id-beyond-64-bits", lambda w: w.request_line("runtime.describe", {}, 2**64), 2**64),
    Hostile(
        "param-beyond-64-bits",
        lambda w: w.request_line("pane.read", {"pane_id": 2**64}, "big"),
        "big",
    ),
    Hostile("lone-surrogate-id", lambda w: _with_lone_surrogate(w, "id"), None),
    Hostile("lone-surrogate-method", lambda w: _with_lone_surrogate(w, "method"), "placeholder"),
    Hostile("deeply-nested-json", lambda w: b"[" * 100_000 + b"]" * 100_000 + b"\n", None),
]


@pytest.mark.parametrize("case", HOSTILE, ids=[c.name for c in HOSTILE])
def test_odd_but_authenticated_line_gets_an_answer(runtime: Runtime, case: Hostile) -> None:
    """R2.2: any line on an authenticated connection gets an envelope (an error if it must)
    and the connection stays usable; the frontend never drops it on an exception."""
    with _authenticated(runtime) as wire:
        wire.send_raw(case.line(wire))
        answer = wire.read_json()
        assert answer["ok"] is False, answer
        assert answer["error"]["code"] in ("invalid_request", "invalid_params"), answer
        if case.request_id is not None:
            assert answer["id"] in (case.request_id, None)
        assert wire.call("runtime.describe", request_id="after")["id"] == "after"


def test_runtime_processes_stay_up_after_hostile_lines(runtime: Runtime) -> None:
    """R1.5: whatever one client sends, the router and the frontend keep running."""
    info = port_info(runtime)
    tree_before = {p.pid for p in _runtime_tree(info["pid"])}
    for case in HOSTILE:
        with _authenticated(runtime) as wire:
            wire.send_raw(case.line(wire))
    wait_for(
        lambda: runtime.call("runtime.describe")["ok"],
        10,
        "the runtime to answer after hostile lines",
    )
    alive = {p.pid for p in _runtime_tree(info["pid"]) if p.is_running()}
    assert tree_before <= alive
    assert os.path.exists(runtime.data_dir / "runtime.port")
