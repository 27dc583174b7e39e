"""data_dir_name() spells the data dir exactly as str(data_dir()) does (DESIGN "Data dir and
discovery"); it exists so the CLI can find `runtime.port` without importing pathlib (issue 6)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import NamedTuple

import pytest

from pebrel.datadir import PORT_FILE, PortFileError, data_dir, data_dir_name, read_port_file


class Env(NamedTuple):
    id: str
    explicit: str | None
    xdg: str | None
    home: str


CASES = (
    Env("explicit-plain", "/srv/pebrel-data", None, "/home/u"),
    Env("explicit-trailing-slash", "/srv/data/", None, "/home/u"),
    Env("explicit-trailing-dot", "/srv/data/.", None, "/home/u"),
    Env("explicit-double-slash", "/srv//data", None, "/home/u"),
    Env("explicit-two-leading-slashes", "//srv/data", None, "/home/u"),
    Env("explicit-three-leading-slashes", "///srv/data", None, "/home/u"),
    Env("explicit-dot-part", "/srv/./data", None, "/home/u"),
    Env("explicit-dotdot-kept", "/srv/x/../data", None, "/home/u"),
    Env("explicit-relative", "rel/data", None, "/home/u"),
    Env("explicit-dot", ".", None, "/home/u"),
    Env("explicit-tilde", "~/data", None, "/home/u"),
    Env("explicit-root", "/", None, "/home/u"),
    Env("xdg-plain", None, "/xdg/share", "/home/u"),
    Env("xdg-trailing-slash", None, "/xdg/share/", "/home/u"),
    Env("xdg-root", None, "/", "/home/u"),
    Env("xdg-relative", None, "xdg", "/home/u"),
    Env("xdg-empty", None, "", "/home/u"),
    Env("home-plain", None, None, "/home/u"),
    Env("home-trailing-slash", None, None, "/home/u/"),
    Env("home-root", None, None, "/"),
)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_data_dir_name_is_str_of_data_dir(
    case: Env, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", case.home)
    for name, value in (("PEBREL_DATA_DIR", case.explicit), ("XDG_DATA_HOME", case.xdg)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert data_dir_name() == str(data_dir())


def test_missing_port_file_names_the_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PEBREL_DATA_DIR", f"{tmp_path}//data/")
    with pytest.raises(PortFileError) as raised:
        read_port_file()
    assert str(raised.value) == f"no {PORT_FILE} in {tmp_path / 'data'}"


def test_reading_the_port_file_imports_no_pathlib(tmp_path: Path) -> None:
    """Outside an editable install nothing else on the CLI path imports pathlib (~3 ms)."""
    code = (
        "import sys\n"
        "from pebrel.client import locate\n"
        "try:\n"
        "    locate()\n"
        "except Exception:\n"
        "    pass\n"
        "print(sorted({'pathlib', 'dataclasses', 'tempfile'} & set(sys.modules)))\n"
    )
    # -S: no site, so no editable-install finder that would load pathlib itself.
    paths = [str(Path(__file__).parents[2]), sysconfig.get_paths()["purelib"]]
    env = {"PEBREL_DATA_DIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(paths)}
    out = subprocess.run(
        [sys.executable, "-P", "-S", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
