"""Pebrel's test matrix and checks: `nox` (every session), `nox -s tests-3.13`, `nox -s lint`.

`tests-<version>` installs Pebrel with its test extra into a fresh virtualenv of that CPython
and runs the suite; an interpreter that is not on PATH is skipped, and nox says so. `lint` runs
`ruff check`, `ruff format --check` and `mypy --strict` over the code, the tests and bench.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
#: Exactly the CPython versions Pebrel is tested on (pyproject.toml classifiers, README).
PYTHONS = ["3.11", "3.12", "3.13"]
#: setuptools' default editable mode maps pebrel.router & co. through an import hook that
#: mypy cannot follow; strict mode builds a link tree instead (re-install after adding a module).
EDITABLE = ("--config-settings", "editable_mode=strict")

nox.options.sessions = ["lint", "tests"]
nox.options.error_on_missing_interpreters = False


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite on one CPython, against Pebrel installed from this checkout."""
    session.install(".[test]")
    session.run("python", "-m", "pytest", *session.posargs)


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
            str(package),
            str(ROOT / "tests"),
            str(ROOT / "bench"),
            str(ROOT / "noxfile.py"),
            env={"MYPYPATH": str(package.parent)},
        )
        session.chdir(ROOT)
