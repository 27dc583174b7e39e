"""Task-state projection of one pane (DESIGN "Model"; FEATURES R5.1-R5.4, R9.1).

Pure bookkeeping: no I/O, no clock (callers pass `now` in seconds). The router feeds it facts
(a submitted prompt, OSC 133 marks, foreground changes, exit, agent evidence, program status)
and asks for the projection. The shell's command state is tracked underneath; a foreground
program's own status report (OSC 7501, OSC 9;4: `program_state`) replaces it while the program
holds the foreground, and while a recognised agent owns the foreground, its state replaces
both (`agent_state`). `state_change_seq` moves by one on
every real transition of the projected `state` and never otherwise.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pebrel.model import SETTLED, SUBMIT_CONFIRM_MS, TASK_STATE_PRIORITY, TaskState

HISTORY_LEN = 256


def strongest(states: list[TaskState]) -> TaskState:
    """The highest-priority state among signals of the same source."""
    return min(states, key=TASK_STATE_PRIORITY.index) if states else "idle"


def matches(target: str, state: str) -> bool:
    return state in SETTLED if target == "settled" else state == target


@dataclass(slots=True)
class PendingEdge:
    deadline: float
    previous: TaskState


class ShellTracker:
    """Command state of one pane's shell, with the submit barrier and transition history."""

    def __init__(self) -> None:
        self.shell_state: TaskState = "idle"
        self.agent_state: TaskState | None = None
        self.program_state: TaskState | None = None
        # The projection: agent_state if set, else program_state if set, else shell_state.
        self.state: TaskState = "idle"
        self.seq = 1
        self.history: deque[tuple[int, TaskState]] = deque([(1, "idle")], maxlen=HISTORY_LEN)
        self.integrated = False  # the shell was launched with OSC 133 integration
        self.prompt_seen = False  # an OSC 133 A proved the integration works
        self.at_prompt = False  # last mark was A/B and no command started since
        self.command_running = False  # C seen, D not yet
        self.commands_started = 0
        self.shell_in_foreground = True
        self.pending: PendingEdge | None = None
        #: Exit code (None: unknown) of each finished command, by its 1-based start number.
        self.results: dict[int, int | None] = {}
        #: The exit code of the last command that ended (None before one, or when unknown).
        self.last_exit_code: int | None = None
        #: Seqs of transitions that only reverted an unconfirmed submit edge: no turn ended there.
        self.reverted: deque[int] = deque(maxlen=HISTORY_LEN)

    # -- transitions -------------------------------------------------------------------------
    def _project(self) -> bool:
        state = self.agent_state
        if state is None:
            state = self.program_state if self.program_state is not None else self.shell_state
        if state == self.state:
            return False
        self.state = state
        self.seq += 1
        self.history.append((self.seq, state))
        return True

    def _set(self, state: TaskState) -> bool:
        self.shell_state = state
        return self._project()

    def set_agent(self, state: TaskState | None) -> bool:
        """Agent evidence (None: no agent owns the pane any more).

        Evidence of work (running, completed, attention, ...) confirms a pending submit edge.
        An `idle` report while an edge is pending is older news that raced the submission (a
        late `start` hook, say): the edge stands until it is confirmed or expires.
        """
        if state == "idle" and self.pending is not None and self.agent_state is not None:
            return False
        self.agent_state = state
        if state is not None:
            self.pending = None
        return self._project()

    def set_program(self, state: TaskState | None, left: bool = False) -> bool:
        """The foreground program's own status (None: it reports nothing any more; ``left``:
        because it left the foreground).

        `idle` after `completed` or `failed` keeps that result until the next command (a
        submitted line, a command's start). Evidence of work confirms a pending submit edge;
        `idle` while one is pending raced the submission and is dropped. A program that left
        the foreground while a command runs under the shell's integration leaves its state
        to the command's done mark: its exit code decides (and clears this). Without
        integration its leaving ends the command: the shell's state (idle) shows.
        """
        if state is None and left:
            if self.command_running:
                return False
            if self.program_state is not None:
                # The program is gone, and with it what a pending edge on it was about (an
                # edge of a later command, with no program state yet, is not its to end).
                self.pending = None
                fallback = not (self.integrated or self.prompt_seen)
                if fallback and self.shell_in_foreground and self.shell_state == "running":
                    self.shell_state = "idle"
        if state == "idle" and self.program_state in ("completed", "failed"):
            return False
        if state == "idle" and self.pending is not None and self.program_state is not None:
            return False
        self.program_state = state
        if state is not None:
            self.pending = None
        return self._project()

    def input_blocked(self, now: float) -> bool:
        """True while a submitted write's running edge is still unconfirmed (submit barrier)."""
        return self.pending is not None and now < self.pending.deadline

    def submit(self, now: float) -> bool:
        """A prompt with Enter was written: establish the running edge synchronously."""
        if self.state == "running":
            return False
        self.pending = PendingEdge(now + SUBMIT_CONFIRM_MS / 1000, self.state)
        if self.agent_state is not None:
            self.agent_state = "running"
            return self._project()
        if self.program_state is not None:
            self.program_state = "running"
            return self._project()
        return self._set("running")

    def expire(self, now: float) -> bool:
        """Revert an edge that no evidence confirmed in time (with a seq bump)."""
        if self.pending is None or now < self.pending.deadline:
            return False
        previous = self.pending.previous
        self.pending = None
        if self.agent_state is not None:
            if self.agent_state != "running":
                return False
            self.agent_state = previous
            moved = self._project()
        elif self.program_state is not None:
            if self.program_state != "running":
                return False
            self.program_state = previous
            moved = self._project()
        elif self.command_running or not self.shell_in_foreground:
            return False
        else:
            moved = self._set(previous)
        if moved:
            self.reverted.append(self.seq)
        return moved

    def mark(self, mark: str, exit_code: int | None) -> bool:
        if mark in ("A", "B"):
            self.prompt_seen = self.prompt_seen or mark == "A"
            self.at_prompt = True
            if self.command_running:
                # A new prompt without a done mark: the command ended, its status is unknown.
                self.command_running = False
                self._record(None)
                self.pending = None
                self.program_state = None
                return self._set("idle")
            return False
        if mark == "C":
            self.at_prompt = False
            self.command_running = True
            self.commands_started += 1
            self.pending = None
            self.program_state = None  # a new command: an earlier program's result is over
            return self._set("running")
        if mark == "D":
            if not self.command_running:
                return False
            self.command_running = False
            self.pending = None
            self.program_state = None  # the shell's exit code wins over program status
            self._record(exit_code)
            if exit_code is None:
                return self._set("idle")
            return self._set("completed" if exit_code == 0 else "failed")
        return False

    def _record(self, exit_code: int | None) -> None:
        self.results[self.commands_started] = exit_code
        self.last_exit_code = exit_code
        if len(self.results) > HISTORY_LEN:
            del self.results[min(self.results)]

    def foreground(self, shell_in_foreground: bool) -> bool:
        """Fallback evidence for shells without integration: the PTY's foreground group."""
        self.shell_in_foreground = shell_in_foreground
        if self.integrated or self.prompt_seen:
            return False
        if not shell_in_foreground:
            self.pending = None
            return self._set("running")
        if self.shell_state == "running" and self.pending is None:
            return self._set("idle")
        return False

    def exited(self, exit_code: int | None) -> bool:
        """The pane's shell (or worker) is gone: a running command ends with it."""
        self.pending = None
        self.command_running = False
        self.at_prompt = False
        self.agent_state = None
        self.program_state = None
        if self.shell_state == "running":
            return self._set("completed" if exit_code == 0 else "failed")
        return self._project()

    @property
    def command_active(self) -> bool:
        """A command runs (by the marks, or by the submit edge not yet confirmed)."""
        return self.state == "running" or self.command_running

    @property
    def busy(self) -> bool:
        """Something runs in the pane: a command, or any program holding the foreground."""
        return self.command_active or not self.shell_in_foreground

    def turn_observation(
        self, target: str, after_seq: int
    ) -> tuple[tuple[int, TaskState] | None, bool]:
        """Like :meth:`observation` after ``after_seq``, but a revert of an unconfirmed submit
        edge is never a matching observation (no turn ended there). Also says whether such a
        revert was passed over (the submission is unconfirmed so far)."""
        unconfirmed = False
        for seq, state in self.history:
            if seq <= after_seq:
                continue
            if seq in self.reverted:
                unconfirmed = True
                continue
            if matches(target, state):
                return (seq, state), unconfirmed
            if state == "running":
                unconfirmed = False  # the turn's own evidence came after the revert
        return None, unconfirmed

    def observation(self, target: str, after_seq: int | None) -> tuple[int, TaskState] | None:
        """First observation matching `target` with seq > after_seq (or the current one)."""
        if after_seq is None:
            return (self.seq, self.state) if matches(target, self.state) else None
        for seq, state in self.history:
            if seq > after_seq and matches(target, state):
                return seq, state
        return None
