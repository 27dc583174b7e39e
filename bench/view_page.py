"""A `pebrel view` with one page connected, for the many-readers phase's view turn (#21).

It starts `pebrel view`, logs in with the printed one-time link, and reads the page's event
stream in a thread the way a browser would (every frame taken as it arrives), until closed.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field

import psutil

from bench.common import BenchError
from bench.pebrel_side import PebrelSide


@dataclass
class ViewPage:
    proc: subprocess.Popen[str]
    port: int
    cookie: str = ""
    frames: int = 0
    frame_bytes: int = 0
    conn: http.client.HTTPConnection | None = None
    thread: threading.Thread | None = None
    errors: list[str] = field(default_factory=list)

    def _read(self, response: http.client.HTTPResponse) -> None:
        try:
            while line := response.fp.readline():
                if line.startswith(b"data: "):
                    self.frames += 1
                    self.frame_bytes += len(line)
        except (OSError, ValueError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def cpu_s(self) -> float:
        try:
            times = psutil.Process(self.proc.pid).cpu_times()
        except psutil.Error:
            return 0.0
        return float(times.user + times.system)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self.thread is not None:
            self.thread.join(10)


def open_view(side: PebrelSide) -> ViewPage:
    """`pebrel view` started, logged in, its page's stream being read."""
    proc = subprocess.Popen(
        [side.exe, "view"],
        env=side.env,
        cwd=side.cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    envelope = json.loads(proc.stdout.readline() or "{}")
    if not envelope.get("ok"):
        proc.kill()
        proc.wait(10)
        raise BenchError(f"pebrel view did not start: {envelope}")
    url = urllib.parse.urlsplit(envelope["result"]["url"])
    page = ViewPage(proc=proc, port=url.port or 0)
    try:
        host = {"Host": f"127.0.0.1:{page.port}"}
        login = http.client.HTTPConnection("127.0.0.1", page.port, timeout=10)
        login.request("GET", f"{url.path}?{url.query}", headers=host)
        answer = login.getresponse()
        answer.read()
        login.close()
        if answer.status != 303:
            raise BenchError(f"the view's login link answered {answer.status}")
        page.cookie = (answer.getheader("Set-Cookie") or "").split(";", 1)[0]
        page.conn = http.client.HTTPConnection("127.0.0.1", page.port, timeout=60)
        page.conn.request("GET", "/events", headers={**host, "Cookie": page.cookie})
        stream = page.conn.getresponse()
        if stream.status != 200:
            raise BenchError(f"the view's event stream answered {stream.status}")
        page.thread = threading.Thread(target=page._read, args=(stream,), daemon=True)
        page.thread.start()
        return page
    except BaseException:
        page.close()
        raise
