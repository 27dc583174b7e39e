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
  it holds a screen subscription (``events.subscribe`` with ``screens: true``: snapshots, and
  which panes published a new screen) and, at most every ``POLL_S``, asks ``pane.screen`` of
  the panes the subscription named since, so a flooding pane costs one worker request per
  ``POLL_S`` at most and a quiet one none. With the last page gone it closes the
  subscription.
- **The inbox** lists every pane whose task state is ``attention`` or ``waiting_input``, the
  newest first (by when the view saw it enter that state).

- **Typing** (``--allow-input`` only; read-only otherwise, every POST is 403): each page load
  gets its own CSRF token, bound to the session, in a ``<meta>`` tag; ``POST /input`` must carry
  it in ``X-Pebrel-CSRF`` besides the cookie, the Host and an Origin of this server, with a
  JSON body ``{window_id, pane_id, data_b64}``. The server sends the bytes with
  ``pane.user_input`` (the local user's channel: no running edge, and refused when this server
  itself runs inside a pane) and answers the runtime's envelope.
"""

from __future__ import annotations

import contextlib
import http.cookies
import json
import logging
import queue
import secrets
import select
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from pebrel.cli.event_feed import EventFeed, panes_named, snapshot_panes
from pebrel.client import Client

logger = logging.getLogger(__name__)

#: How often the poller looks while a page is connected (seconds): the page's update rate.
POLL_S = 0.25
#: The page tokens kept (the oldest is forgotten first: that page must be loaded again).
PAGE_TOKENS = 64
#: How long a connection may take to send a request, or the server to send a frame.
REQUEST_TIMEOUT_S = 30.0
#: The largest body ``POST /input`` takes.
INPUT_BODY_MAX = 16 * 1024
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
        self._feed: EventFeed | None = None
        self._snapshot: dict[str, Any] | None = None
        self._dirty: set[str] = set()  # panes whose screen changed since it was last asked
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
                if not self._listeners:
                    self._drop_client()  # nobody looks: no subscription, no request
                while not self._listeners and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    break
            started = time.monotonic()
            try:
                changed = self._poll(started + self._interval_s)
            except Exception as exc:  # the runtime went away, say: the page shows why
                logger.warning("view poll failed: %s", exc)
                self._drop_client()
                changed = {"error": f"the runtime did not answer: {exc}"}
                self.frame["error"] = changed["error"]
                time.sleep(max(0.0, self._interval_s - (time.monotonic() - started)))
            if changed:
                self._broadcast(json.dumps(changed))
        self._drop_client()

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._feed is not None:
            self._feed.close()
            self._feed = None
            self._snapshot = None
            self._dirty.clear()
            # Unwatched meanwhile: every pane's screen is asked anew with the next feed.
            self._screens.clear()

    def _call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        if self._client is None:
            self._client = self._connect()
        answer = self._client.call(method, params or {})
        if not answer.get("ok"):
            raise RuntimeError(answer.get("error", {}).get("message", "refused"))
        result: dict[str, Any] = answer["result"]
        return result

    def _listen(self, deadline: float) -> bool:
        """Take the subscription's events until `deadline`; whether any arrived."""
        if self._feed is None:
            self._feed = EventFeed(self._connect())
        heard = False
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self._feed], [], [], left)
            if not ready:
                break
            for event in self._feed.read():
                heard = True
                if event["event"] == "runtime.snapshot":
                    self._snapshot = event["snapshot"]
                elif event["event"] == "pane.screens":
                    self._dirty |= {f"{w}:{p}" for w, p in panes_named(event)}
        return heard

    def _poll(self, deadline: float) -> Frame:
        """One interval's events from the runtime; the parts of the frame that changed."""
        if not self._listen(deadline) or self._snapshot is None:
            return {}
        self.polls += 1
        snapshot = self._snapshot
        panes = snapshot_panes(snapshot)
        live = {pane_key(pane) for pane in panes}
        changed_screens: dict[str, Any] = {}
        for pane in panes:
            key = pane_key(pane)
            if key in self._screens and (key not in self._dirty or pane["exited"]):
                continue  # unchanged, or exited: its last screen stays as it was
            if pane.get("ssh", {}).get("phase", "ready") != "ready":
                continue  # an SSH pane not (or no longer) connected has no remote screen
            ids = {"window_id": pane["window_id"], "pane_id": pane["pane_id"]}
            try:
                shown = self._call("pane.screen", ids)
            except RuntimeError:
                continue  # gone or exited meanwhile (the next snapshot says so); else again
            self._dirty.discard(key)
            self._screens[key] = changed_screens[key] = _screen_part(shown)
        self._dirty &= live
        for gone in set(self._screens) - live:
            del self._screens[gone]
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

    def __init__(
        self, port: int, poller: Poller, typist: Callable[[], Client] | None = None
    ) -> None:
        super().__init__(("127.0.0.1", port), ViewHandler)
        self.poller = poller
        #: How to reach the runtime for input (None: read-only).
        self.typist = typist
        self._typing_client: Client | None = None
        self._typing_lock = threading.Lock()  # one input at a time, in order
        self._tokens_lock = threading.Lock()
        self.page_tokens: dict[str, str] = {}  # CSRF token -> the session it was given to
        self.port: int = self.server_address[1]
        self.login_secret: str | None = secrets.token_urlsafe(32)
        self.sessions: set[str] = set()
        self._login_lock = threading.Lock()  # two visits of the link at once: one session
        self.cookie_name = f"pebrel_view_{self.port}"
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.origins = {f"http://{host}" for host in self.hosts}
        self.page = resources.files("pebrel.cli").joinpath("view_page.html").read_text("utf-8")

    def page_for(self, session: str) -> str:
        """The page with a fresh CSRF token of its own when input is allowed."""
        if self.typist is None:
            return self.page
        token = secrets.token_urlsafe(32)
        with self._tokens_lock:
            self.page_tokens[token] = session
            while len(self.page_tokens) > PAGE_TOKENS:
                del self.page_tokens[next(iter(self.page_tokens))]
        return self.page.replace(
            '<meta name="pebrel-csrf" content="">', f'<meta name="pebrel-csrf" content="{token}">'
        )

    def token_ok(self, offered: str, session: str) -> bool:
        with self._tokens_lock:
            owner = next(
                (
                    owner
                    for token, owner in self.page_tokens.items()
                    if secrets.compare_digest(token.encode(), offered.encode())
                ),
                None,
            )
        return owner is not None and secrets.compare_digest(owner.encode(), session.encode())

    def type_into(self, params: dict[str, Any]) -> dict[str, Any]:
        """Send the user's bytes with pane.user_input; the runtime's envelope."""
        assert self.typist is not None
        with self._typing_lock:
            try:
                if self._typing_client is None:
                    self._typing_client = self.typist()
                return self._typing_client.call("pane.user_input", params)
            except Exception as exc:  # no runtime, no answer in time, a broken connection
                if self._typing_client is not None:
                    self._typing_client.close()
                    self._typing_client = None
                message = f"the runtime did not take the input: {exc}"
                return {"ok": False, "error": {"code": "runtime_unavailable", "message": message}}

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
    #: A request (or a body) that does not arrive in this many seconds ends its connection.
    timeout = REQUEST_TIMEOUT_S

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
        session = self._session()
        if session is None:
            self._refuse()
            return
        if url.path == "/":
            page = self.server.page_for(session)
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", page.encode())
        elif url.path == "/state":
            body = json.dumps(self.server.poller.frame).encode()
            self._send(HTTPStatus.OK, "application/json", body)
        elif url.path == "/events":
            self._stream()
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"not found\n")

    def do_POST(self) -> None:
        session = self._session() if self._trusted_origin(origin_required=True) else None
        if (
            session is None
            or self.server.typist is None  # read-only: nothing is written through the view
            or urllib.parse.urlsplit(self.path).path != "/input"
            or not self.server.token_ok(self.headers.get("X-Pebrel-CSRF", ""), session)
        ):
            self._refuse(close=True)  # its body is not read
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if not 0 < length <= INPUT_BODY_MAX:
            self._send(
                HTTPStatus.BAD_REQUEST, "text/plain; charset=utf-8", b"bad length\n", close=True
            )
            return
        try:
            body = json.loads(self.rfile.read(length))
            params = {
                "window_id": int(body["window_id"]),
                "pane_id": int(body["pane_id"]),
                "data_b64": str(body["data_b64"]),
            }
        except (ValueError, TypeError, KeyError, OverflowError, RecursionError):
            self._send(HTTPStatus.BAD_REQUEST, "text/plain; charset=utf-8", b"bad body\n")
            return
        answer = self.server.type_into(params)
        self._send(HTTPStatus.OK, "application/json", json.dumps(answer).encode())

    def _trusted_origin(self, origin_required: bool = False) -> bool:
        host = self.headers.get("Host", "")
        origin = self.headers.get("Origin")
        if origin is None:
            return host in self.server.hosts and not origin_required
        return host in self.server.hosts and origin in self.server.origins

    def _session(self) -> str | None:
        """The request's session (its cookie names one this server gave), else None."""
        cookies = http.cookies.SimpleCookie()
        try:
            cookies.load(self.headers.get("Cookie", ""))
        except http.cookies.CookieError:
            return None
        morsel = cookies.get(self.server.cookie_name)
        if morsel is None:
            return None
        for session in self.server.sessions:
            if secrets.compare_digest(morsel.value.encode(), session.encode()):
                return session
        return None

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

    def _refuse(self, close: bool = False) -> None:
        self._send(HTTPStatus.FORBIDDEN, "text/plain; charset=utf-8", b"forbidden\n", close)

    def _send(self, status: HTTPStatus, kind: str, body: bytes, close: bool = False) -> None:
        self.send_response(status)
        if close:  # a body left unread: this connection takes no further request
            self.close_connection = True
            self.send_header("Connection", "close")
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
