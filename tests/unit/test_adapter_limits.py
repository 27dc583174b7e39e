"""The adapter's rate-limited log (router/adapter_limits.py; #15, R1.5).

A flood of refused connections or failed accepts (EMFILE, retried by asyncio every second for
as long as it lasts) must not flood runtime.log: one line per kind per interval, and the next
line says how many were held back.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from pebrel.router import adapter_limits


def test_a_flood_of_one_kind_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    log = adapter_limits.RateLimitedLog()
    with caplog.at_level(logging.WARNING):
        for _ in range(1000):
            log.warning("refused", "connection refused: the connection cap is reached")
        log.warning("deadline", "connection closed: no authenticated first line in time")
    assert [r.getMessage() for r in caplog.records] == [
        "connection refused: the connection cap is reached",
        "connection closed: no authenticated first line in time",
    ]


def test_the_next_line_counts_what_was_held(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = adapter_limits.RateLimitedLog()
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            log.warning("refused", "refused")
        monkeypatch.setattr(adapter_limits, "LOG_INTERVAL_S", 0.0)
        log.warning("refused", "refused")
    assert [r.getMessage() for r in caplog.records] == [
        "refused",
        "refused (and 4 more not logged)",
    ]


def test_loop_errors_such_as_emfile_are_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    log = adapter_limits.RateLimitedLog()
    loop = asyncio.new_event_loop()
    try:
        loop.set_exception_handler(log.loop_exception)
        with caplog.at_level(logging.ERROR):
            for _ in range(1000):
                loop.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": OSError(24, "Too many open files"),
                    }
                )
    finally:
        loop.close()
    assert sum("out of system resource" in r.getMessage() for r in caplog.records) == 1
