"""A stand-in AI CLI for tests (no real agent can log in here); see README.md beside it.

Run through the entry files `claude`, `codex`, `opencode`, `agent` (cursor), `pi`, `omp`, `kimi`.
It draws a banner and a "> " prompt, reads a line (bracketed paste aware), "works" and answers,
and reports its state per FAKE_AGENT_MODE: hooks (default), program, osc26, osc7501 or none
(or several joined by "+").
"""

from __future__ import annotations

import base64
import codecs
import json
import os
import secrets
import subprocess
import sys
import time

import status_gate  # beside this file (the entry files put its directory on sys.path)

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
PROGRAM_STATE = {
    "start": "idle",
    "prompt": "running",
    "stop": "completed",
    "attention": "attention",
}
#: The hint each fake draws above its "> " prompt: the shape the shipped input-prompt screen
#: rules (pebrel/agent_rules.json, `<kind>.input`) look for, so that they can tell it is ready.
INPUT_HINTS = {
    "claude": "? for shortcuts",
    "codex": "⏎ send   ⌃J newline   ⌃C quit",
    "opencode": "enter send   ctrl+p commands",
    "cursor": "/ commands · @ files · ! shell",
    "pi": "/ for commands",
    "omp": "/ for commands",
    "kimi": "ctrl-x: switch mode",
}
#: OSC 7501 report bodies (Program Status Protocol), sent only once the terminal answered the
#: protocol's query, as Claude Code does.
OSC7501_STATUS = {
    "start": "state=idle",
    "prompt": "state=working",
    "stop": "state=done",
    "attention": "state=blocked:kind=permission",
    "end": "state=clear",
}
OSC26_STATUS = {
    "start": "idle",
    "prompt": "running",
    "stop": "finished",
    "attention": "awaiting-approval",
}


class Fake:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.modes = set(os.environ.get("FAKE_AGENT_MODE", "hooks").split("+"))
        self.status_gate = False  # the terminal answered the OSC 7501 query
        self.session = os.environ.get("FAKE_AGENT_SESSION") or f"fake-{secrets.token_hex(6)}"
        #: `--session-id ID` starts that session, `--resume ID` / `resume ID` resumes it.
        self.resumed = False
        args = sys.argv[1:]
        for flag in ("--session-id", "--resume", "resume"):
            if flag in args[:-1]:
                self.session = args[args.index(flag) + 1]
                self.resumed = flag != "--session-id"
        #: Like some real CLIs, a new session may get its id only with its first prompt.
        self.session_known = self.resumed or not os.environ.get("FAKE_AGENT_SESSION_AFTER_PROMPT")
        self.work_s = int(os.environ.get("FAKE_AGENT_WORK_MS", "300")) / 1000
        self.start_s = int(os.environ.get("FAKE_AGENT_START_MS", "0")) / 1000
        self.loading_s = int(os.environ.get("FAKE_AGENT_LOADING_MS", "0")) / 1000
        self.prompt_delay_s = int(os.environ.get("FAKE_AGENT_PROMPT_DELAY_MS", "0")) / 1000
        self.stop_delay_s = int(os.environ.get("FAKE_AGENT_STOP_DELAY_MS", "0")) / 1000
        self.received_log = os.environ.get("FAKE_AGENT_RECEIVED_LOG")
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.pending = ""

    def out(self, text: str) -> None:
        sys.stdout.write(text.replace("\n", "\r\n"))
        sys.stdout.flush()

    def report(self, event: str, message: str | None = None) -> None:
        if "osc7501" in self.modes and self.status_gate and event in OSC7501_STATUS:
            body = f"{OSC7501_STATUS[event]}:app=fake-{self.kind}"
            if message is not None and event == "stop":
                body += ":msg=" + base64.b64encode(message.encode()).decode()
            self.out(f"\x1b]7501;{body}\x1b\\")
        if "hooks" in self.modes and os.environ.get("PEBREL_CLI"):
            payload = {"hook_event_name": event}
            argv = [os.environ["PEBREL_CLI"], "hook", event, "--kind", self.kind]
            if self.session_known:
                payload["session_id"] = self.session
                argv += ["--session-id", self.session]
            if message is not None:
                payload["last_assistant_message"] = message
            subprocess.run(
                argv,
                input=json.dumps(payload).encode(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        if "program" in self.modes and event in PROGRAM_STATE:
            session = [("pebrel_agent_session", self.session)] if self.session_known else []
            for name, value in [*session, ("pebrel_agent_state", PROGRAM_STATE[event])]:
                encoded = base64.b64encode(value.encode()).decode()
                self.out(f"\x1b]1337;SetUserVar={name}={encoded}\x07")
        if "osc26" in self.modes and event in OSC26_STATUS:
            status = OSC26_STATUS[event]
            self.out(f"\x1b]26;CodeAgent={self.kind};SessionId={self.session};Status={status}\x07")

    def read_line(self) -> str | None:
        """One submitted line; pasted newlines stay in it. None at end of input."""
        self.out("\x1b[?2004h")
        line, pasting = "", False
        while True:
            if not self.pending:
                data = os.read(0, 4096)
                if not data:
                    return None
                self.pending = self.decoder.decode(data)
            if self.pending.startswith(PASTE_START):
                pasting, self.pending = True, self.pending[len(PASTE_START) :]
                continue
            if self.pending.startswith(PASTE_END):
                pasting, self.pending = False, self.pending[len(PASTE_END) :]
                continue
            char, self.pending = self.pending[0], self.pending[1:]
            if char in "\r\n" and not pasting:
                self.out("\x1b[?2004l\n")
                return line
            if char in "\x7f\b":
                if line:
                    line = line[:-1]
                    self.out("\b \b")
            elif char == "\x1b":
                continue
            elif char.isprintable() or char in "\r\n\t":
                char = "\n" if char == "\r" else char
                line += char
                self.out(char)

    def received(self, line: str) -> None:
        """Append each submitted input to FAKE_AGENT_RECEIVED_LOG (one JSON line each)."""
        if self.received_log:
            with open(self.received_log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"session": self.session, "text": line}) + "\n")

    def work(self, text: str) -> None:
        time.sleep(self.prompt_delay_s)  # a slow reaction to the submitted line (test stand-in)
        self.report("prompt")
        self.out("* Thinking... (esc to interrupt)")
        time.sleep(self.work_s)  # a fake AI CLI simulating work (FAKE_AGENT_WORK_MS)
        self.out("\r\x1b[2K")
        self.out(f"answer: {text[::-1]}\n")
        time.sleep(self.stop_delay_s)  # the turn's end reported late (FAKE_AGENT_STOP_DELAY_MS)
        self.report("stop", f"final: {text}")

    def load(self) -> None:
        """Like some real TUIs: ready by its hooks, yet still loading for a while, dropping
        every byte typed meanwhile (FAKE_AGENT_LOADING_MS)."""
        import select

        self.out("Loading model...")
        deadline = time.monotonic() + self.loading_s
        while (left := deadline - time.monotonic()) > 0:
            if select.select([0], [], [], left)[0] and not os.read(0, 4096):
                break
        self.out("\r\x1b[2K")

    def run(self) -> int:
        if self.start_s:
            time.sleep(self.start_s)  # a slow start (FAKE_AGENT_START_MS)
            if os.isatty(0):
                import termios

                # Like some real TUIs: input typed before the prompt is drawn is dropped.
                termios.tcflush(0, termios.TCIFLUSH)
        if "osc7501" in self.modes and os.isatty(0):
            self.status_gate = status_gate.query()[0]
        shown = self.session if self.session_known else "(new)"
        resumed = "resumed " if self.resumed else ""
        self.out(f"Fake {self.kind} (a Pebrel test stand-in), {resumed}session {shown}\n\n")
        self.report("start")
        if self.loading_s:
            self.load()
        while True:
            self.out(f"{INPUT_HINTS[self.kind]}\n> ")
            line = self.read_line()
            if line is not None:
                self.received(line)
            if line is None or line.strip() == "/exit":
                self.report("end")
                self.out("bye\n")
                return 0
            if not line.strip():
                continue
            self.session_known = True
            if "approve" in line:
                self.out("Do you want to proceed? (y/n) ")
                self.report("attention")
                answer = self.read_line()
                self.out("\x1b[1A\r\x1b[2K")
                if answer is None:
                    return 0
                if answer.strip().lower() != "y":
                    self.out("cancelled\n")
                    self.report("stop", "cancelled")
                    continue
            self.work(line)


def main(name: str) -> None:
    kind = "cursor" if name == "agent" else name
    attrs = None
    if os.isatty(0):
        import termios

        attrs = termios.tcgetattr(0)
        raw = termios.tcgetattr(0)
        raw[3] &= ~(termios.ECHO | termios.ICANON)
        termios.tcsetattr(0, termios.TCSANOW, raw)
    try:
        code = Fake(kind).run()
    finally:
        if attrs is not None:
            termios.tcsetattr(0, termios.TCSANOW, attrs)
        sys.stdout.write("\x1b[?2004l")
        sys.stdout.flush()
    sys.exit(code)
