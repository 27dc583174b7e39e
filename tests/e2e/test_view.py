"""`pebrel view` over HTTP, as a browser would use it (#21 item 1): the one-time login link,
the cookie, the 403s (no cookie, a spent link, another Host or Origin), the page, the
frames of the event stream (a pane's text and colours after pane.run, the inbox filling
when a program asks for approval and emptying when it is answered), and no polling while
no page is connected."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PEBREL, Runtime, at_prompt, prompt_read, wait_for

pytestmark = pytest.mark.timeout(90)

EMITTER = Path(__file__).resolve().parent.parent / "fakes" / "status_emitter.py"


class View:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        split = urllib.parse.urlsplit(url)
        self.port = split.port or 0
        self.login_path = f"{split.path}?{split.query}"
        self.cookie = ""

    def request(
        self, path: str, headers: dict[str, str] | None = None, cookie: bool = True
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        sent = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        if cookie and self.cookie:
            sent["Cookie"] = self.cookie
        conn.request("GET", path, headers=sent)
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, dict(response.getheaders()), body

    def post(
        self, path: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        sent = {
            "Host": f"127.0.0.1:{self.port}",
            "Origin": f"http://127.0.0.1:{self.port}",
            "Cookie": self.cookie,
            "Content-Type": "application/json",
            **(headers or {}),
        }
        conn.request("POST", path, body=body, headers={k: v for k, v in sent.items() if v})
        response = conn.getresponse()
        answer = response.read()
        conn.close()
        return response.status, answer

    def page_token(self) -> str:
        """The CSRF token of a fresh page load ("" on a read-only view)."""
        page = self.request("/")[2].decode()
        found = re.search(r'<meta name="pebrel-csrf" content="([^"]*)">', page)
        assert found is not None
        return found.group(1)

    def login(self) -> None:
        status, headers, _ = self.request(self.login_path, cookie=False)
        assert status == 303 and headers["Location"] == "/"
        self.cookie = headers["Set-Cookie"].split(";", 1)[0]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]

    @contextmanager
    def stream(self) -> Iterator[Iterator[dict[str, Any]]]:
        """The page's event stream: its frames, one by one."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request(
            "GET", "/events", headers={"Host": f"127.0.0.1:{self.port}", "Cookie": self.cookie}
        )
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"

        def frames() -> Iterator[dict[str, Any]]:
            while True:
                line = response.fp.readline()
                if not line:
                    return
                if line.startswith(b"data: "):
                    yield json.loads(line[6:])

        try:
            yield frames()
        finally:
            conn.close()


@contextmanager
def view(rt: Runtime, *args: str) -> Iterator[View]:
    proc = subprocess.Popen(
        [PEBREL, "view", *args],
        env=rt.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        envelope = json.loads(proc.stdout.readline())
        assert envelope["ok"], envelope
        yield View(proc, envelope["result"]["url"])
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def until(frames: Iterator[dict[str, Any]], what: str, check: Any) -> dict[str, Any]:
    """Frames merged as the page merges them, until ``check`` holds for the merged state."""
    merged: dict[str, Any] = {"windows": [], "screens": {}, "inbox": []}
    deadline = time.monotonic() + 20
    for frame in frames:
        if frame.get("full"):
            merged["screens"] = {}
        for key in ("windows", "inbox"):
            if key in frame:
                merged[key] = frame[key]
        for key, screen in frame.get("screens", {}).items():
            merged["screens"][key] = screen
        if check(merged):
            return merged
        if time.monotonic() > deadline:
            break
    pytest.fail(f"no frame showed {what}")


def screen_text(merged: dict[str, Any], key: str = "1:1") -> str:
    screen = merged["screens"].get(key)
    if not screen:
        return ""
    return "\n".join("".join(text for text, _ in runs) for runs in screen["lines"])


def test_login_once_and_every_request_without_the_cookie_is_refused(runtime: Runtime) -> None:
    with view(runtime) as page:
        assert page.request("/", cookie=False)[0] == 403
        assert page.request("/state", cookie=False)[0] == 403
        assert page.request("/login?s=wrong", cookie=False)[0] == 403
        page.login()
        assert page.request(page.login_path, cookie=False)[0] == 403  # the link is spent
        status, headers, body = page.request("/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert b"EventSource" in body
        # Another Host (DNS rebinding) or a page of another origin: refused with the cookie.
        assert page.request("/", {"Host": f"evil.example:{page.port}"})[0] == 403
        assert page.request("/state", {"Origin": "http://127.0.0.1:1"})[0] == 403
        ok_origin = {"Origin": f"http://localhost:{page.port}", "Host": f"localhost:{page.port}"}
        assert page.request("/state", ok_origin)[0] == 200
        assert page.request("/nothing")[0] == 404
        forged = page.request("/state", {"Cookie": f"pebrel_view_{page.port}=guess"}, False)
        assert forged[0] == 403


def test_the_stream_shows_text_colours_and_layout(runtime: Runtime) -> None:
    at_prompt(runtime)
    with view(runtime) as page:
        page.login()
        with page.stream() as frames:
            until(frames, "the first screen", lambda m: "1:1" in m["screens"])
            runtime.run(1, r"printf '\033[1;31mVIEW-RED\033[0m\n'")
            merged = until(frames, "the red text", lambda m: "VIEW-RED" in screen_text(m))
        runs = [run for row in merged["screens"]["1:1"]["lines"] for run in row]
        style = next(merged["screens"]["1:1"]["styles"][s] for t, s in runs if t == "VIEW-RED")
        assert style["fg"] == "red" and style["bold"]
        pane = merged["windows"][0]["tabs"][0]["panes"][0]
        assert (pane["pane_id"], pane["task_state"]) == (1, "completed")
        state = json.loads(page.request("/state")[2])
        assert "VIEW-RED" in screen_text(state)


def test_the_inbox_lists_a_pane_that_asks_for_approval_until_answered(
    runtime: Runtime, tmp_path: Path
) -> None:
    at_prompt(runtime)
    fifo = tmp_path / "commands"
    os.mkfifo(fifo)
    runtime.ok("pane.prompt", {"pane_id": 1, "text": f"{sys.executable} {EMITTER} --fifo {fifo}"})
    with open(fifo, "w") as pipe, view(runtime) as page:
        page.login()
        with page.stream() as frames:
            until(frames, "the first screen", lambda m: "1:1" in m["screens"])
            msg = base64.b64encode(b"Deploy to prod?").decode()
            pipe.write(f"7501 state=blocked:kind=permission:msg={msg}\n")
            pipe.flush()
            merged = until(frames, "the inbox entry", lambda m: m["inbox"])
            entry = merged["inbox"][0]
            assert (entry["key"], entry["task_state"], entry["msg"]) == (
                "1:1",
                "attention",
                "Deploy to prod?",
            )
            pipe.write("7501 state=working\n")
            pipe.flush()
            until(frames, "the inbox emptied", lambda m: m["inbox"] == [])


def test_nothing_is_polled_while_no_page_is_connected(runtime: Runtime) -> None:
    """No page, no requests: the runtime's counters of reads do not move."""
    at_prompt(runtime)
    with view(runtime) as page:
        page.login()
        time.sleep(1.0)  # four poll intervals: time enough for a poller that polls unasked
        before = runtime.snapshot()["revision"]
        status, _, body = page.request("/state")
        assert status == 200 and json.loads(body)["windows"] == []  # never polled
        assert runtime.snapshot()["revision"] == before
        with page.stream() as frames:
            until(frames, "a poll", lambda m: m["windows"])
        wait_for(lambda: json.loads(page.request("/state")[2])["windows"], 5, "a frame")


def typing_body(text: bytes, pane_id: int = 1) -> bytes:
    data = base64.b64encode(text).decode()
    return json.dumps({"window_id": 1, "pane_id": pane_id, "data_b64": data}).encode()


def test_a_read_only_view_refuses_every_post(runtime: Runtime) -> None:
    at_prompt(runtime)
    before = prompt_read(runtime)["text"]
    with view(runtime) as page:
        page.login()
        assert page.page_token() == ""
        status, _ = page.post("/input", typing_body(b"echo nope"), {"X-Pebrel-CSRF": "x"})
        assert status == 403
    assert prompt_read(runtime)["text"] == before


def test_input_needs_the_page_token_cookie_and_origin(runtime: Runtime) -> None:
    at_prompt(runtime)
    before_text, before = prompt_read(runtime)["text"], runtime.pane(1)
    with view(runtime, "--allow-input") as page:
        page.login()
        token = page.page_token()
        assert len(token) > 20 and page.page_token() != token  # one per page load
        body = typing_body(b"echo typed-in-the-view")
        refusals = [
            page.post("/input", body),  # no token
            page.post("/input", body, {"X-Pebrel-CSRF": "forged"}),
            page.post("/input", body, {"X-Pebrel-CSRF": token, "Cookie": ""}),
            page.post("/input", body, {"X-Pebrel-CSRF": token, "Origin": "http://127.0.0.1:1"}),
            page.post("/input", body, {"X-Pebrel-CSRF": token, "Origin": ""}),  # none sent
            page.post("/input", body, {"X-Pebrel-CSRF": token, "Host": "evil.example"}),
            page.post("/other", body, {"X-Pebrel-CSRF": token}),
        ]
        assert [status for status, _ in refusals] == [403] * len(refusals)
        assert prompt_read(runtime)["text"] == before_text
        for bad in (
            b"{",
            b'{"window_id": 1e999, "pane_id": 1, "data_b64": ""}',
            b"[" * 5000 + b"]" * 5000,
        ):
            assert page.post("/input", bad, {"X-Pebrel-CSRF": token})[0] == 400
        status, answer = page.post("/input", body, {"X-Pebrel-CSRF": token})
        assert status == 200, answer
        envelope = json.loads(answer)
        assert envelope["ok"] and envelope["result"]["written_bytes"] == 22, envelope
        runtime.wait_text(1, "echo typed-in-the-view")
        after = runtime.pane(1)  # typed, not submitted: no running edge
        assert after["state_change_seq"] == before["state_change_seq"]
        status, answer = page.post("/input", typing_body(b"x", pane_id=9), {"X-Pebrel-CSRF": token})
        assert status == 200 and json.loads(answer)["error"]["code"] == "target_not_found"
