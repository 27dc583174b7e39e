"""The hot CLI verbs against a real runtime import nothing heavy (issue 6, TRAPS "CLI").

Each verb runs in a fresh interpreter that reports the modules it loaded; no timing is asserted
here (bench/ measures it), only what the verbs' successful path pulls in.
"""

from __future__ import annotations

from tests.conftest import Runtime, at_prompt
from tests.unit.test_cli_imports import HEAVY, HOT_VERBS, PANE_ENV, SLOW_STDLIB, run_cli


def test_hot_verbs_import_no_heavy_module(runtime: Runtime) -> None:
    """Issue 6: pane read/send/exec/wait and hook answer (exit 0) without zmq, msgpack, pyte,
    psutil or importlib.metadata, and without the slow standard modules the floor lacks."""
    at_prompt(runtime)
    env = {**runtime.env, **PANE_ENV}
    for verb in HOT_VERBS:
        run = run_cli(verb.args, env)
        assert run.status in (0, None), (verb.id, run.status)
        assert set(HEAVY) & run.modules == set(), verb.id
        assert set(SLOW_STDLIB) & (run.modules - run.floor) == set(), verb.id
