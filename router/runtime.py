"""The router's domain core: state plus the operations handlers use (close, notify, agents);
spawning a pane's worker is router/spawn.py.

Single-threaded over the event loop. Mutations happen synchronously between awaits, so they
apply in mailbox order; anything slow (process spawn, worker replies, kills) is awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pebrel import messages as m
from pebrel import proctree
from pebrel.errors import ErrorCode, PebrelError
from pebrel.model import SUBMIT_CONFIRM_MS, TaskState
from pebrel.router import agents, layout, links, sizing
from pebrel.router.delegation import Delegations
from pebrel.router.forkserver import ForkServer
from pebrel.router.links import WorkerLink
from pebrel.router.state import Pane, RouterState, Window
from pebrel.settings import Settings
from pebrel.shellids import ShellChoice

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 3.0


class Runtime:
    def __init__(
        self,
        data_dir: Path,
        settings: Settings,
        endpoint: str,
        send: Callable[[bytes, m.Message], bool],
        base_env: dict[str, str],
        launch_cwd: str,
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.endpoint = endpoint
        self.send = send
        self.base_env = base_env
        self.launch_cwd = launch_cwd
        self.state = RouterState()
        self.links: dict[tuple[int, int], WorkerLink] = {}
        #: Panes whose worker is starting: facts they report before the layout has them apply.
        self.starting: dict[tuple[int, int], Pane] = {}
        self._changed: dict[tuple[int, int], list[asyncio.Future[None]]] = {}
        self.on_revision: Callable[[], None] = lambda: None
        #: Called when answers the frontend may have kept go stale: a revision (None), or
        #: a pane's screen.
        self.on_answers_stale: Callable[[Pane | None], None] = lambda pane: None
        #: Called when a pane's worker published a new screen (its kept reads are dropped;
        #: screen subscribers are told).
        self.screen_listeners: list[Callable[[Pane], None]] = []
        #: Called when hook or program evidence says a pane's agent finished its turn.
        self.turn_listeners: list[Callable[[Pane], None]] = []
        self.delegations = Delegations(self.state)  # agent.delegate's book (R9.6)
        self.forkserver: ForkServer | None = None  # set by router.app
        self.closing = False
        #: Children the router started itself (workers, frontend): never orphans. Guarded by a
        #: lock because spawning and orphan reaping run in executor threads.
        self.background: set[asyncio.Future[Any]] = set()

    # -- change notification -----------------------------------------------------------------
    def commit(self) -> None:
        if self.delegations.pending:
            self.delegations.sweep()  # a target that exited or was replaced: cancelled
        if self.state.commit():
            self.on_answers_stale(None)
            self.on_revision()

    def touched(self, pane: Pane) -> None:
        """Something about `pane` changed: commit and wake everything waiting on it."""
        self.commit()
        for fut in self._changed.pop(pane.key, []):
            if not fut.done():
                fut.set_result(None)

    async def next_change(self, pane: Pane, timeout_s: float) -> bool:
        """Wait for the next fact about `pane`; False on timeout."""
        return await self.next_change_any((pane,), timeout_s)

    async def next_change_any(self, panes: Sequence[Pane], timeout_s: float) -> bool:
        """Wait for the next fact about any of `panes`; False on timeout."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for pane in panes:
            self._changed.setdefault(pane.key, []).append(fut)
        try:
            await asyncio.wait_for(fut, max(timeout_s, 0))
            return True
        except TimeoutError:
            return False
        finally:
            for pane in panes:
                waiters = self._changed.get(pane.key)
                if waiters and fut in waiters:
                    waiters.remove(fut)

    def schedule_expiry(self, pane: Pane) -> None:
        def expire() -> None:
            if pane.tracker.expire(time.monotonic()):
                self.touched(pane)

        asyncio.get_running_loop().call_later(SUBMIT_CONFIRM_MS / 1000 + 0.01, expire)

    # -- a new pane's cwd ----------------------------------------------------------------------
    def start_dir(self, shell: ShellChoice, cwd: str | None, default: str | None) -> str | None:
        """A new pane's directory: ``cwd``, else the shell profile's, else ``default``. An SSH
        pane's is a directory on the remote host, taken as given ("~": the remote home)."""
        if shell.ssh is not None:
            return cwd or shell.cwd or "~"
        return self.check_cwd(cwd) or self.check_cwd(shell.cwd) or default

    def check_cwd(self, cwd: str | None) -> str | None:
        if cwd is None:
            return None
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise PebrelError(
                ErrorCode.INVALID_PARAMS, f"cwd {cwd!r} is not an absolute directory", {"cwd": cwd}
            )
        return cwd

    # -- agents -----------------------------------------------------------------------------------
    def agent_foreground(self, pane: Pane, kind: str | None, program: str) -> None:
        """Recognition edges: an AI CLI took the foreground, or gave it back."""
        pa = pane.agents
        registry = self.state.registry
        if kind is not None and (pa.session is None or pa.session.kind != kind):
            if pa.session is not None:
                registry.session_ended(pa, pane.tracker.seq)
            registry.session_appeared(
                pa, pane.window_id, pane.pane_id, kind, program, pane.tracker.seq
            )
            now = time.monotonic()
            pending, pa.pending = pa.pending, []
            for ev in pending:
                if now - ev.at <= agents.PENDING_EVIDENCE_S and ev.kind in (None, kind):
                    self.agent_evidence(
                        pane, ev.state, ev.source, ev.kind, ev.session_id, ev.message
                    )
        elif kind is None and pa.session is not None:
            registry.session_ended(pa, pane.tracker.seq)
        self.sync_agent_state(pane)

    def agent_evidence(
        self,
        pane: Pane,
        state: TaskState | None,
        source: agents.EvidenceSource,
        kind: str | None,
        session_id: str | None,
        message: str | None,
    ) -> bool:
        """Hook or program evidence for the pane's agent; kept briefly if it is not seen yet."""
        pa = pane.agents
        now = time.monotonic()
        session = pa.session
        if session is None:
            # Kept for an agent about to be recognised; what a program that is none reports
            # is dropped as it ages (and never more than PENDING_EVIDENCE_MAX is kept).
            fresh = [ev for ev in pa.pending if now - ev.at <= agents.PENDING_EVIDENCE_S]
            fresh.append(agents.PendingEvidence(now, state, source, kind, session_id, message))
            pa.pending = fresh[-agents.PENDING_EVIDENCE_MAX :]
            return False
        if kind is not None and kind != session.kind:
            return False
        if session_id and session.session_id and session_id != session.session_id:
            self.state.registry.new_session_id(pa, session_id, pane.tracker.seq)
        applied = agents.apply_strong(pa, state, source, session_id, message, now)
        self.sync_agent_state(pane)
        if applied and message is not None and pa.bound is not None:
            pa.bound.message_seq = pane.tracker.seq
        if applied and state == "completed":
            for listener in self.turn_listeners:
                listener(pane)
        return applied

    def sync_agent_state(self, pane: Pane) -> None:
        own = agents.session_state(pane.agents)
        pane.tracker.set_agent(own)
        bound = pane.agents.bound
        if bound is not None and own is not None:
            bound.last_state = pane.tracker.state

    def mark_exited(self, pane: Pane, exit_code: int | None, reason: str) -> None:
        if pane.exited:
            return
        pane.exited = True
        pane.exit_code = exit_code
        pane.exit_reason = reason
        pane.program_status = pane.program_mapped = None  # its program's records end with it
        self.state.registry.session_ended(pane.agents, pane.tracker.seq)
        pane.tracker.exited(exit_code)
        logger.info("pane exited", extra={"window_id": pane.window_id, "pane_id": pane.pane_id})

    def link_gone(self, link: WorkerLink, reason: str | None = None) -> None:
        link.dead = True
        link.gone.set()
        links.fail_pending(link)
        pane = self.state.panes.get((link.window_id, link.pane_id))
        if self.links.get((link.window_id, link.pane_id)) is link:
            del self.links[(link.window_id, link.pane_id)]
        if pane is None or self.closing:
            return
        code = link.proc.returncode
        if reason is None:
            reason = (
                f"pane worker killed by signal {-code}"
                if code is not None and code < 0
                else f"pane worker exited with status {code}"
            )
        if not pane.exited:
            self.mark_exited(pane, None, reason)
        # The shell and its children were re-parented to us (subreaper): end them.
        self.keep(asyncio.get_running_loop().run_in_executor(None, self.reap_orphans))
        self.touched(pane)

    def keep(self, fut: asyncio.Future[Any]) -> None:
        """Hold a reference to background work until it is done."""
        self.background.add(fut)
        fut.add_done_callback(self.background.discard)

    def worker_exited(self, pid: int, returncode: int | None, reason: str | None = None) -> None:
        """The fork server reported that a pane worker ended (`reason` overrides the one its
        status gives: the fork server's own exit, whose workers end with it)."""
        for link in list(self.links.values()):
            if link.proc.pid == pid and not link.dead:
                link.proc.returncode = returncode
                self.link_gone(link, reason)
                return
        # Not a known link's: a spawn still in flight hears of it from the fork server.

    def adopt(self, pid: int) -> None:
        proctree.own_child(pid)

    def disown(self, pid: int) -> None:
        proctree.forget_child(pid)

    def reap_orphans(self) -> None:
        """Kill and reap every child of the router that it did not start itself.

        The router is a child subreaper: when a worker dies, its shell and the shell's
        descendants (nohup, setsid) are re-parented here.
        """
        import psutil

        for _ in range(50):
            with proctree.OWN_CHILDREN_LOCK:
                try:
                    children = psutil.Process().children()
                except psutil.Error:
                    return
                orphans = [c for c in children if c.pid not in proctree.OWN_CHILDREN]
            if not orphans:
                return
            for orphan in orphans:
                proctree.kill_processes([*proctree.descendants(orphan.pid), orphan])
            for orphan in orphans:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(orphan.pid, 0)

    # -- closing --------------------------------------------------------------------------------
    async def stop_pane_processes(self, pane: Pane) -> None:
        link = self.links.get(pane.key)
        if link is None:
            return
        try:
            await links.request(
                link, self.send, lambda rid: m.ClosePane(request_id=rid), CLOSE_TIMEOUT_S
            )
        except PebrelError:
            links.kill(link)
        try:
            await asyncio.wait_for(link.gone.wait(), CLOSE_TIMEOUT_S)
        except TimeoutError:
            links.kill(link)
            await link.gone.wait()

    def remove_pane(self, pane: Pane) -> tuple[bool, bool]:
        """Take a pane out of its tab (and tab/window if empty); say whether they closed."""
        self.state.registry.pane_closed(pane.agents, pane.tracker.seq)
        win, index, tab = self.state.locate(pane)
        root = layout.remove_leaf(tab.root, pane.pane_id)
        self.state.panes.pop(pane.key, None)
        if root is None:
            self._remove_tab(win, index)
            return True, win.window_id not in self.state.windows
        tab.root = root
        if tab.zoomed_pane == pane.pane_id:
            tab.zoomed_pane = None
        if tab.focused_pane == pane.pane_id:
            tab.focused_pane = next(layout.leaves(root))
        sizing.resize_tab(self, win, tab)
        return False, False

    def _remove_tab(self, win: Window, index: int) -> None:
        del win.tabs[index]
        if not win.tabs:
            del self.state.windows[win.window_id]
            if self.state.focused_window == win.window_id:
                self.state.focused_window = min(self.state.windows) if self.state.windows else None
            return
        if win.active_tab >= index and win.active_tab > 0:
            win.active_tab -= 1

    def drop_kept_reads(self, pane: Pane) -> None:
        """The pane's screen changed (or is about to: a resize): read answers kept for it
        (here and in the frontend) no longer hold, nor, until the worker publishes again,
        its published screen (workers/publisher.py)."""
        pane.reads.clear()
        pane.screen_current = False
        self.on_answers_stale(pane)

    async def close_panes(self, panes: list[Pane]) -> None:
        for pane in panes:
            pane.closing = True
        await asyncio.gather(*(self.stop_pane_processes(p) for p in panes))

    def busy_panes(self, panes: list[Pane]) -> list[dict[str, Any]]:
        return [
            {"window_id": p.window_id, "pane_id": p.pane_id, "task_state": p.tracker.state}
            for p in panes
            if not p.exited and p.tracker.busy
        ]
