"""runtime.log lines carry a record's `extra=` fields, so an `internal_error`'s incident id can
be found there as its answer says (R2.2)."""

from __future__ import annotations

import logging

from pebrel.logfile import ExtraFormatter


def record(**extra: object) -> logging.LogRecord:
    rec = logging.makeLogRecord({"msg": "internal error", "levelname": "ERROR", "name": "x"})
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_extra_fields_follow_the_message() -> None:
    text = ExtraFormatter("%(levelname)s %(message)s").format(
        record(incident="ab12", method="pane.read")
    )
    assert text == "ERROR internal error [incident='ab12' method='pane.read']"


def test_a_plain_record_is_unchanged() -> None:
    assert ExtraFormatter("%(message)s").format(record()) == "internal error"


def test_a_traceback_stays_below_the_first_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        rec = record(incident="cd34")
        rec.exc_info = sys.exc_info()
    lines = ExtraFormatter("%(message)s").format(rec).splitlines()
    assert lines[0] == "internal error [incident='cd34']"
    assert lines[-1] == "ValueError: boom"
