"""`pebrel view`: every pane live in a local web page, with the attention inbox (#21).

A small HTTP server on 127.0.0.1 (the stdlib's threading server: one thread per request,
which suits a page or two on the user's own machine) and one poller thread that talks to the
runtime like any client:

- **Login.** The server prints a login link carrying a fresh one-time secret (never the
  runtime's token). Its first visit sets a session cookie (HttpOnly, SameSite=Strict, named
  after the port: cookies on 127.0.0.1 are shared by every port) and the secret is spent; any
  other request without the cookie is 403.
- **Host and Origin** are checked on every request: the Host must be this server
  (``127.0.0.1:PORT`` or ``localhost:PORT``), and an Origin, when sent, this server's origin
  (a page of another site or port cannot use the session).
- **What the page gets.** ``/events`` is a server-sent event stream of frames: the windows,
  tabs and layouts with every pane's record, each pane's screen (``pane.screen``: runs of
  styled text and the cursor) when it changed, and the inbox. ``/state`` is the latest whole
  frame as JSON.
- **Costs nothing when nobody looks.** The poller works only while a page is connected: then
  every ``POLL_S`` it takes the snapshot (answered from the router's copy) and, per pane, the
  time its newest published screen was captured (a one-line ``pane.read``, answered without
  the pane's worker); only a pane whose screen changed is asked for its styled screen, so a
  flooding pane costs one ``pane.screen`` per poll at most.
- **The inbox** lists every pane whose task state is ``attention`` or ``waiting_input``, the
  newest first (by when the view saw it enter that state).

Read-only: the page cannot type into a pane.
"""

from __future__ import annotations

import contextlib
import http.cookies
import json
import logging
import queue
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from pebrel.client import Client

logger = logging.getLogger(__name__)

#: How often the poller looks while a page is connected (seconds): the page's update rate.
POLL_S = 0.25
#: A page that leaves this many frames unread is dropped (it reconnects by itself).
QUEUE_FRAMES = 64
#: A comment line every so often keeps an idle stream open through proxies and timeouts.
KEEPALIVE_S = 15.0
INBOX_STATES = ("attention", "waiting_input")

Frame = dict[str, Any]


def pane_key(pane: dict[str, Any]) -> str:
    return f"{pane['window_id']}:{pane['pane_id']}"


class Poller:
    """Builds frames from the runtime while anyone listens, and hands them to the listeners."""

    def __init__(self, connect: Callable[[], Client], interval_s: float = POLL_S) -> None:
        self._connect = connect
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._listeners: set[queue.Queue[str | None]] = set()
        self._wake = threading.Condition(self._lock)
        self._stopped = False
        self._client: Client | None = None
        self._captured: dict[str, float] = {}
        self._screens: dict[str, Any] = {}
        self._since: dict[str, float] = {}  # inbox: when a pane entered its state
        self.frame: Frame = {"windows": [], "screens": {}, "inbox": [], "error": None}
        self.polls = 0
        self._thread = threading.Thread(target=self._run, name="pebrel-view-poller", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._wake.notify_all()
            listeners = list(self._listeners)
        for listener in listeners:
            listener.put(None)

    def listen(self) -> queue.Queue[str | None]:
        """A new listener: it gets the whole frame first, then what changes."""
        listener: queue.Queue[str | None] = queue.Queue(QUEUE_FRAMES)
        with self._lock:
            listener.put(json.dumps({"full": True, **self.frame}))
            self._listeners.add(listener)
            self._wake.notify_all()
        return listener

    def leave(self, listener: queue.Queue[str | None]) -> None:
        with self._lock:
            self._listeners.discard(listener)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._listeners and not self._stopped:
                    self._wake.wait()  # nobody looks: no request reaches the runtime
                if self._stopped:
                    break
            started = time.monotonic()
            try:
                changed = self._poll()
            except Exception as exc:  # the runtime went away, say: the page shows why
                logger.warning("view poll failed: %s", exc)
                self._drop_client()
                changed = {"error": f"the runtime did not answer: {exc}"}
                self.frame["error"] = changed["error"]
            if changed:
                self._broadcast(json.dumps(changed))
            time.sleep(max(0.0, self._interval_s - (time.monotonic() - started)))
        self._drop_client()

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._client is None:
            self._client = self._connect()
        answer = self._client.call(method, params or {})
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error", {}).get("message", "refused"))
        result: dict[str, Any] = answer["result"]
        return result

    def _poll(self) -> Frame:
        """One look at the runtime; the parts of the frame that changed."""
        self.polls += 1
        snapshot = self._call("runtime.snapshot")
        panes = [
            pane
            for window in snapshot["windows"]
            for tab in window["tabs"]
            for pane in tab["panes"]
        ]
        live = {pane_key(pane) for pane in panes}
        changed_screens: dict[str, Any] = {}
        for pane in panes:
            key = pane_key(pane)
            ids = {"window_id": pane["window_id"], "pane_id": pane["pane_id"]}
            if pane["exited"]:
                continue  # its last screen stays as it was
            captured = self._call("pane.read", {**ids, "lines": 1})["screen_captured_at"]
            if self._captured.get(key) != captured or key not in self._screens:
                try:
                    shown = self._call("pane.screen", ids)
                except RuntimeError:
                    continue  # gone or exiting meanwhile: next time
                self._captured[key] = captured
                self._screens[key] = changed_screens[key] = _screen_part(shown)
        for gone in set(self._screens) - live:
            del self._screens[gone]
            self._captured.pop(gone, None)
            changed_screens[gone] = None
        now = time.time()
        inbox = self._inbox(panes, now)
        windows = snapshot["windows"]
        changed: Frame = {}
        if windows != self.frame["windows"]:
            changed["windows"] = windows
        if changed_screens:
            changed["screens"] = changed_screens
        if inbox != self.frame["inbox"]:
            changed["inbox"] = inbox
        if self.frame["error"] is not None:
            changed["error"] = None
        self.frame = {
            "windows": windows,
            "screens": dict(self._screens),
            "inbox": inbox,
            "error": None,
        }
        return changed

    def _inbox(self, panes: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        waiting = {pane_key(p): p for p in panes if p["task_state"] in INBOX_STATES}
        for key in list(self._since):
            if key not in waiting:
                del self._since[key]
        entries = []
        for key, pane in waiting.items():
            since = self._since.setdefault(key, now)
            status = pane.get("program_status") or {}
            agent = pane.get("agent") or {}
            entries.append(
                {
                    "key": key,
                    "window_id": pane["window_id"],
                    "pane_id": pane["pane_id"],
                    "task_state": pane["task_state"],
                    "title": pane["title"],
                    "agent": agent.get("name") or agent.get("kind"),
                    "msg": status.get("msg"),
                    "since": since,
                }
            )
        entries.sort(key=lambda entry: (-entry["since"], entry["key"]))
        return entries

    def _broadcast(self, text: str) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener.put_nowait(text)
            except queue.Full:  # a page that does not read: it is dropped, and reconnects
                self.leave(listener)
                with contextlib.suppress(queue.Empty):
                    while True:
                        listener.get_nowait()
                listener.put_nowait(None)


def _screen_part(shown: dict[str, Any]) -> dict[str, Any]:
    return {
        "cols": shown["cols"],
        "rows": shown["rows"],
        "lines": shown["lines"],
        "styles": shown["styles"],
        "cursor": shown["cursor"],
        "alt_screen": shown["alt_screen"],
    }


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, poller: Poller) -> None:
        super().__init__(("127.0.0.1", port), ViewHandler)
        self.poller = poller
        self.port: int = self.server_address[1]
        self.login_secret: str | None = secrets.token_urlsafe(32)
        self.sessions: set[str] = set()
        self._login_lock = threading.Lock()  # two visits of the link at once: one session
        self.cookie_name = f"pebrel_view_{self.port}"
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.page = resources.files("pebrel.cli").joinpath("view_page.html").read_text("utf-8")

    @property
    def login_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/login?s={self.login_secret}"

    def spend_secret(self, offered: str) -> str | None:
        """A new session for the login secret (once), else None."""
        with self._login_lock:
            secret = self.login_secret
            if secret is None or not secrets.compare_digest(offered.encode(), secret.encode()):
                return None
            self.login_secret = None
            session = secrets.token_urlsafe(32)
            self.sessions.add(session)
            return session


class ViewHandler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("view: " + format, *args)

    def do_GET(self) -> None:
        if not self._trusted_origin():
            self._refuse()
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/login":
            self._login(urllib.parse.parse_qs(url.query).get("s", [""])[0])
            return
        if not self._has_session():
            self._refuse()
            return
        if url.path == "/":
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", self.server.page.encode())
        elif url.path == "/state":
            body = json.dumps(self.server.poller.frame).encode()
            self._send(HTTPStatus.OK, "application/json", body)
        elif url.path == "/events":
            self._stream()
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")

    def do_POST(self) -> None:
        self._refuse()  # nothing is written through the view

    def _trusted_origin(self) -> bool:
        host = self.headers.get("Host", "")
        origin = self.headers.get("Origin")
        return host in self.server.hosts and (origin is None or origin in self.server.origins)

    def _has_session(self) -> bool:
        cookies = http.cookies.SimpleCookie()
        try:
            cookies.load(self.headers.get("Cookie", ""))
        except http.cookies.CookieError:
            return False
        morsel = cookies.get(self.server.cookie_name)
        return morsel is not None and any(
            secrets.compare_digest(morsel.value.encode(), session.encode())
            for session in self.server.sessions
        )

    def _login(self, offered: str) -> None:
        session = self.server.spend_secret(offered)
        if session is None:
            self._refuse()
            return
        self.send_response(HTTPStatus.SEE_OTHER)
        self.send_header(
            "Set-Cookie",
            f"{self.server.cookie_name}={session}; HttpOnly; SameSite=Strict; Path=/",
        )
        self.send_header("Location", "/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _refuse(self) -> None:
        self._send(HTTPStatus.FORBIDDEN, "text/plain; charset=utf-8", b"forbidden\n")

    def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", "default-src 'self' 'unsafe-inline'")
        self.end_headers()
        self.wfile.write(body)

    def _stream(self) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        listener = self.server.poller.listen()
        try:
            for line in _events(listener):
                self.wfile.write(line)
                self.wfile.flush()
        except OSError:
            pass  # the page went away
        finally:
            self.server.poller.leave(listener)


def _events(listener: queue.Queue[str | None]) -> Iterator[bytes]:
    while True:
        try:
            frame = listener.get(timeout=KEEPALIVE_S)
        except queue.Empty:
            yield b": keepalive\n\n"
            continue
        if frame is None:
            return
        yield b"data: " + frame.encode() + b"\n\n"
