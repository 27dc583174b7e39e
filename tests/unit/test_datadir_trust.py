"""What Pebrel trusts in a data dir (docs/protocol.md "Security", #15): only what this user
owns, and never a symbolic link for `runtime.port`. The e2e tests chown a data dir when they run
as root; these check the same refusals anywhere, by pretending to be another user."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pebrel.client import RuntimeUnavailable, locate
from pebrel.datadir import (
    PORT_FILE,
    PortFileError,
    UnsafeFileError,
    check_owner,
    ensure_data_dir,
    read_port_file,
    refuse_symlink,
)

PORT = {
    "port": 1,
    "token": "t",
    "pid": 1,
    "version": "0",
    "protocol": "p",
    "started_at": 0.0,
    "runtime_id": "r",
}


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(mode=0o700)
    (folder / PORT_FILE).write_text(json.dumps(PORT))
    monkeypatch.setenv("PEBREL_DATA_DIR", str(folder))
    return folder


def another_user(monkeypatch: pytest.MonkeyPatch) -> int:
    other = os.geteuid() + 1
    monkeypatch.setattr(os, "geteuid", lambda: other)
    return other


def test_check_owner_refuses_another_users(tmp_path: Path) -> None:
    st = os.stat(tmp_path)
    check_owner(st, str(tmp_path), st.st_uid)
    with pytest.raises(UnsafeFileError, match=f"owned by uid {st.st_uid}, not by this user"):
        check_owner(st, str(tmp_path), st.st_uid + 1)


def test_the_port_file_is_read_when_this_user_owns_it(data: Path) -> None:
    assert read_port_file(data).token == "t"


def test_a_data_dir_of_another_user_is_refused(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = another_user(monkeypatch)
    with pytest.raises(PortFileError, match=f"not by this user \\(uid {other}\\)") as caught:
        read_port_file(data)
    assert caught.value.unsafe
    with pytest.raises(RuntimeUnavailable, match="not by this user"):
        locate(data)
    with pytest.raises(UnsafeFileError, match="not by this user"):
        ensure_data_dir()


def test_a_port_file_of_another_user_is_refused(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the file is someone else's (the check looks at the open file, not just its dir)."""
    real = os.fstat
    theirs = os.stat(data / PORT_FILE).st_ino

    def fstat(fd: int) -> os.stat_result:
        st = real(fd)
        if st.st_ino != theirs:
            return st
        fields = list(st)
        fields[4] = st.st_uid + 1  # st_uid
        return os.stat_result(fields)

    monkeypatch.setattr(os, "fstat", fstat)
    with pytest.raises(PortFileError, match=f"{PORT_FILE} is owned by uid") as caught:
        read_port_file(data)
    assert caught.value.unsafe


def test_a_symlinked_port_file_is_not_followed(data: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    (data / PORT_FILE).rename(target)
    (data / PORT_FILE).symlink_to(target)
    with pytest.raises(PortFileError, match="is a symbolic link") as caught:
        read_port_file(data)
    assert caught.value.unsafe
    with pytest.raises(RuntimeUnavailable, match="is a symbolic link"):
        locate(data)
    with pytest.raises(UnsafeFileError, match="is a symbolic link"):
        refuse_symlink(data / PORT_FILE)
    refuse_symlink(target)
    refuse_symlink(data / "missing")
