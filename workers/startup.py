"""A pane worker's process entry: logging, the parent-death signal, the shell report.

The fork server calls :func:`run_worker` in each forked child; :func:`configure_logging` is
also run once in the fork server itself, so its children inherit the handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys

import zmq

from pebrel import messages as m
from pebrel import proctree
from workers.app import Worker, WorkerConfig

logger = logging.getLogger(__name__)


def configure_logging(log_path: str) -> None:
    """Log to the runtime log, one line per record, tagged with the worker's pid."""
    logging.basicConfig(
        filename=log_path,
        level=os.environ.get("PEBREL_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s worker[%(process)d] %(levelname)s %(name)s: %(message)s",
    )


def run_worker(config: WorkerConfig, report_fd: int | None = None) -> None:
    """Run one pane worker until its pane closes (the fork server's child entry).

    Once the shell runs, its pid goes to ``report_fd`` (one JSON line, then the fd is closed),
    so the fork server can answer the router before this worker has even connected.
    """
    configure_logging(config.log_path)  # a no-op in a fork server's child: already done
    proctree.set_parent_death_signal(signal.SIGTERM)
    proctree.set_child_subreaper()
    if os.getppid() == 1:
        sys.exit(0)

    def report(shell_pid: int, integrated: bool) -> None:
        nonlocal report_fd
        if report_fd is not None:
            line = json.dumps({"shell_pid": shell_pid, "integrated": integrated}).encode()
            with contextlib.suppress(OSError):
                os.write(report_fd, line + b"\n")
            os.close(report_fd)
            report_fd = None

    try:
        worker = Worker(config, report)
    except Exception as exc:
        if report_fd is not None:
            os.close(report_fd)
        logger.exception("pane start failed")
        ctx = zmq.Context()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 2000)
        sock.connect(config.endpoint)
        sock.send(
            m.encode(
                m.PaneStartFailed(
                    window_id=config.window_id, pane_id=config.pane_id, reason=str(exc)
                )
            )
        )
        sock.close()
        ctx.term()
        sys.exit(1)
    asyncio.run(worker.run())
