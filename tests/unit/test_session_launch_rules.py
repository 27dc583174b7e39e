"""Launch rules of sessions from profiles, as pure functions (I4.2, #18; collab/launch.py).

The end-to-end tests drive the same rules through a real runtime
(tests/e2e/test_session_refusals.py); these pin the expansions exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pebrel.collab import launch
from pebrel.errors import CollabCode, CollabError

pytestmark = pytest.mark.timeout(30)


def code_of(call: object, *args: object) -> CollabCode:
    with pytest.raises(CollabError) as caught:
        call(*args)  # type: ignore[operator]
    return CollabCode(str(caught.value.code))


def test_cwd_must_resolve_inside_a_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    (root / "in").symlink_to(root / "a")
    assert launch.real_cwd(str(root / "a" / ".." / "a" / "b"), [str(root)]) == str(root / "a" / "b")
    assert launch.real_cwd(str(root / "in"), [str(root)]) == str(root / "a")
    assert launch.real_cwd(str(root), [str(root)]) == str(root)
    denied = CollabCode.SESSION_CWD_DENIED
    assert code_of(launch.real_cwd, str(root / "out"), [str(root)]) == denied
    assert code_of(launch.real_cwd, str(root / ".." / "outside"), [str(root)]) == denied
    # A sibling whose name starts like the root is not inside it.
    (tmp_path / "root2").mkdir()
    assert code_of(launch.real_cwd, str(tmp_path / "root2"), [str(root)]) == denied
    assert (
        code_of(launch.real_cwd, str(root / "nope"), [str(root)]) == CollabCode.SESSION_CWD_MISSING
    )
    for bad in ("a/b", "", f"{root}\n", f"{root}\x7f"):
        assert code_of(launch.real_cwd, bad, [str(root)]) == CollabCode.INVALID_ARGUMENT


def test_the_launch_command_sets_whole_placeholders_only() -> None:
    argv = ["--session-id", "{sessionId}", "-C", "{cwd}", "--note={cwd}"]
    native = launch.new_native_id(argv)
    assert native is not None and launch.native_id_valid(native)
    assert launch.launch_command("/opt/claude", argv, "/srv/x", native) == [
        "/opt/claude",
        "--session-id",
        native,
        "-C",
        "/srv/x",
        "--note={cwd}",  # not a whole argument: never expanded (the policy refuses it anyway)
    ]
    assert launch.new_native_id(["--model", "sonnet"]) is None


def test_the_resume_command_keeps_the_launch_s_own_arguments() -> None:
    snapshot = {
        "executable": "/opt/wrap",
        "argv": json.dumps(["--model", "m", "--session-id", "{sessionId}", "-C", "{cwd}"]),
        "cwd": "/srv/x",
        "resume_argv": json.dumps(["resume", "{sessionId}", "{launchArgs}"]),
        "created_native_id": "abc-1",
    }
    assert launch.resume_command(snapshot, "abc-1") == [
        "/opt/wrap",
        "resume",
        "abc-1",
        "--model",
        "m",
        "--session-id",
        "abc-1",
        "-C",
        "/srv/x",
    ]


@pytest.mark.parametrize("native", ["abc", "0f6c1e2a-1b2c-4d5e-8f90-123456789abc", "thr_1:2.3"])
def test_native_ids_that_look_like_ids(native: str) -> None:
    assert launch.native_id_valid(native)


@pytest.mark.parametrize("native", ["", ".x", "-x", "a b", "a\nb", "x" * 129, "a/b"])
def test_native_ids_that_do_not(native: str) -> None:
    assert not launch.native_id_valid(native)


def test_hooks_missing_says_how_to_install_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert "pebrel agent hooks install --kind claude" in str(
        launch.hooks_missing("claude", str(tmp_path), home)
    )
    assert "--kind codex" in str(launch.hooks_missing("codex", str(tmp_path), home))
    assert launch.hooks_missing("kimi", str(tmp_path), home) is not None
