"""Pebrel's test matrix and checks: `nox` (every session), `nox -s tests-3.13`, `nox -s lint`.

`tests-<version>` installs Pebrel with its test extra into a fresh virtualenv of that CPython
and runs the suite; an interpreter that is not on PATH is skipped, and nox says so. `lint` runs
`ruff check`, `ruff format --check` and `mypy --strict` over the code, the tests and bench.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
#: Exactly the CPython versions Pebrel is tested on (pyproject.toml classifiers, README).
PYTHONS = ["3.11", "3.12", "3.13"]
#: setuptools' default editable mode maps pebrel.router & co. through an import hook that
#: mypy cannot follow; strict mode builds a link tree instead (re-install after adding a module).
EDITABLE = ("--config-settings", "editable_mode=strict")

#: Files the wheel must carry besides modules.
WHEEL_FILES = (
    "pebrel/py.typed",
    "pebrel/runtime-api-v1.schema.json",
    "pebrel/router/__main__.py",
    "pebrel/workers/shellinit/bash.sh",
    "pebrel/workers/shellinit/zsh/.zshenv",
    "pebrel/cli/main.py",
    "pebrel/collab/__main__.py",
)

nox.options.sessions = ["lint", "wheel", "tests"]
nox.options.error_on_missing_interpreters = False


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite on one CPython, against Pebrel installed from this checkout."""
    session.install(".[test]")
    env = {}
    if session.python == PYTHONS[-1]:
        # Nothing Pebrel runs may lean on what the next CPython removes: on the newest tested
        # one, a DeprecationWarning is an error in the tests and in the runtime's processes.
        env["PYTHONWARNINGS"] = "error::DeprecationWarning"
    session.run("python", "-m", "pytest", *session.posargs, env=env)


@nox.session
def wheel(session: nox.Session) -> None:
    """The wheel installs one import package, and runs when started from this clone's root.

    Started here, `python -m pebrel.router` would find the clone's pebrel/ folder (the core
    only) before the installed package: Pebrel starts its processes with `python -P`.
    """
    with tempfile.TemporaryDirectory() as tmp:
        session.run("python", "-m", "pip", "wheel", "--no-deps", "-w", tmp, ".", silent=True)
        (built,) = Path(tmp).glob("pebrel-*.whl")
        session.log(check_wheel(built))
        session.install(str(built))
        env = {"PEBREL_DATA_DIR": str(Path(tmp) / "data")}
        session.chdir(ROOT)
        session.run("pebrel", "runtime", "start", env=env)
        try:
            answer = session.run("pebrel", "pane", "run", "1", "echo hi", env=env, silent=True)
            assert isinstance(answer, str) and '"exit_code": 0' in answer, answer
        finally:
            session.run("pebrel", "runtime", "stop", env=env)


def check_wheel(path: Path) -> str:
    """Fail unless every file of the wheel lies under pebrel/ or its .dist-info."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
    tops = {name.split("/", 1)[0] for name in names}
    stray = {top for top in tops if top != "pebrel" and not top.endswith(".dist-info")}
    if stray:
        raise SystemExit(f"{path.name}: top-level entries besides pebrel: {sorted(stray)}")
    for needed in WHEEL_FILES:
        if needed not in names:
            raise SystemExit(f"{path.name}: {needed} missing")
    return f"{path.name}: one top-level package, pebrel ({len(names)} files)"


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy --strict (code, tests, bench)."""
    session.install("-e", ".[test,dev]", *EDITABLE)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    installed = session.run(
        "python",
        "-P",
        "-c",
        "import os, pebrel; print(os.path.dirname(pebrel.__file__))",
        silent=True,
    )
    assert isinstance(installed, str)
    package = Path(installed.strip())
    # From a neutral directory, with the link tree first on mypy's path: run from the clone,
    # mypy would take the clone's pebrel/ folder (the core only) for the package.
    with tempfile.TemporaryDirectory() as neutral:
        session.chdir(neutral)
        session.run(
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(package),
            str(ROOT / "tests"),
            str(ROOT / "bench"),
            str(ROOT / "noxfile.py"),
            env={"MYPYPATH": str(package.parent)},
        )
        session.chdir(ROOT)
