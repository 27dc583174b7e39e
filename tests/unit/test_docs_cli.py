"""Every `pebrel` command the docs name exists, with the options they give it (R8.1, R8.3, R7.8).

The commands are read from the docs' own text: each code span and each line of a fenced block
that starts with `pebrel ` (README.md, docs/*.md, the Skill). `a|b|c` after a group names
several of its verbs (`pebrel tab new|close|rename|move`). The verbs are followed down the CLI's
command tree: a word after a group must be one of its commands, and `pebrel <verbs...> --help`
must exit 0 (in-process, through the same click group the console script runs). Once a leaf
command is reached, each `--option` the docs give it must be one of its options. So a doc that
names a verb or an option the CLI does not have fails here, and the docs cannot drift again.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pebrel.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "docs" / "skills" / "pebrel-runtime" / "SKILL.md",
]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`]+)`")
#: A word that can be a verb (`exec-pane`, `agent-get`) or several (`start|stop|status`).
VERB_WORDS = re.compile(r"[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*")


@dataclass(frozen=True)
class DocCommand:
    """One `pebrel ...` command as a doc writes it, and where."""

    where: str
    text: str

    def words(self) -> list[str]:
        try:
            return shlex.split(self.text, comments=True)
        except ValueError:  # an unbalanced quote in prose: plain words are enough
            return self.text.split()


def doc_commands() -> list[DocCommand]:
    found: list[DocCommand] = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        for block in FENCE.findall(text):
            for number, line in enumerate(block.splitlines()):
                if line.strip().startswith("pebrel "):
                    found.append(DocCommand(f"{name} (block line {number})", line.strip()))
        prose = FENCE.sub("", text)
        for span in CODE_SPAN.findall(prose):
            flat = " ".join(span.split())  # a span may wrap over lines
            if flat.startswith("pebrel ") or flat == "pebrel":
                found.append(DocCommand(f"{name} (`{flat}`)", flat))
    return found


DOC_COMMANDS = doc_commands()


def group_option(group: click.Group, ctx: click.Context, word: str) -> click.Option | None:
    """The option of the group itself that ``word`` (``--name`` or ``--name=value``) names."""
    name = word.split("=", 1)[0]
    for param in group.get_params(ctx):
        if isinstance(param, click.Option) and name in param.opts and name != "--help":
            return param
    return None


def paths_of(command: DocCommand) -> list[tuple[list[str], list[str]]]:
    """Each command path a doc command names (`a|b` expanded), with the words that follow it.

    Raises AssertionError when a word after a group is not one of its commands.
    """
    words = command.words()[1:]
    paths: list[tuple[list[str], list[str]]] = []

    def walk(group: click.Command, path: list[str], rest: list[str]) -> None:
        ctx = click.Context(group, info_name=path[-1] if path else "pebrel")
        if isinstance(group, click.Group) and rest and rest[0].startswith("--"):
            own = group_option(group, ctx, rest[0])
            if own is not None:  # a group's own option (`collab --session ID task ...`)
                walk(group, path, rest[1 if own.is_flag or "=" in rest[0] else 2 :])
                return
        if not isinstance(group, click.Group) or not rest or not VERB_WORDS.fullmatch(rest[0]):
            paths.append((path, rest))
            return
        for verb in rest[0].split("|"):
            sub = group.get_command(ctx, verb)
            assert sub is not None, (
                f"{command.where}: `pebrel {' '.join(path)}` has no command {verb!r}"
            )
            walk(sub, [*path, verb], rest[1:])

    walk(main, [], words)
    return paths


def test_the_docs_name_commands() -> None:
    """The extraction finds the docs' commands (so the tests below test something)."""
    texts = {c.text for c in DOC_COMMANDS}
    assert len(DOC_COMMANDS) > 100
    assert "pebrel pane list" in texts
    assert any(t.startswith("pebrel ctl agents|agent-get") for t in texts)
    assert {c.where.split(" ")[0] for c in DOC_COMMANDS} >= {
        "README.md",
        "docs/protocol.md",
        "docs/skills/pebrel-runtime/SKILL.md",
    }


def test_every_documented_verb_exists() -> None:
    """R8.1, R8.3: `pebrel <verbs...> --help` exits 0 for every command path the docs name."""
    runner = CliRunner()
    checked: set[tuple[str, ...]] = set()
    for command in DOC_COMMANDS:
        for path, _ in paths_of(command):
            if tuple(path) in checked:
                continue
            checked.add(tuple(path))
            result = runner.invoke(main, [*path, "--help"], prog_name="pebrel")
            assert result.exit_code == 0, (command.where, path, result.output)
    assert ("ctl", "orchestrate") in checked and ("agent", "hooks", "install") in checked


def option_words(words: list[str]) -> list[str]:
    """The `--option` names among a command's words (`[--a]`, `X|--b`, `--c=1`), up to `--`."""
    names: list[str] = []
    for word in words:
        if word == "--":
            break
        for part in word.strip("[]").split("|"):
            if part.startswith("--") and len(part) > 2:
                names.append(part.split("=", 1)[0].rstrip(".,;:)]"))
    return names


def test_every_documented_option_exists() -> None:
    """R8.1: each `--option` the docs give a command is one of that command's options."""
    ctx = click.Context(main, info_name="pebrel")
    for command in DOC_COMMANDS:
        for path, rest in paths_of(command):
            leaf: click.Command = main
            for verb in path:
                assert isinstance(leaf, click.Group)
                found = leaf.get_command(ctx, verb)
                assert found is not None
                leaf = found
            if leaf.context_settings.get("ignore_unknown_options"):
                continue  # `pebrel hook` takes whatever its agent passes
            known = {
                name
                for param in leaf.get_params(ctx)
                if isinstance(param, click.Option)
                for name in (*param.opts, *param.secondary_opts)
            }
            for name in option_words(rest):
                assert name in known, f"{command.where}: `pebrel {' '.join(path)}` has no {name}"


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("pebrel pane lsit", "lsit"),
        ("pebrel tab new|clone", "clone"),
        ("pebrel agnet list", "agnet"),
    ],
)
def test_a_verb_that_does_not_exist_is_caught(text: str, wrong: str) -> None:
    """The check itself: an unknown verb anywhere in the path fails."""
    with pytest.raises(AssertionError, match=wrong):
        paths_of(DocCommand("example", text))


def test_a_group_s_own_option_is_passed_over() -> None:
    """`pebrel collab --session ID task respond ...`: the group's option and its value are
    not verbs; the walk goes on to the verbs after them (#16)."""
    text = "pebrel collab --session ses_1 task respond tsk_1 --attempt att_1 --content x"
    assert paths_of(DocCommand("example", text)) == [
        (["collab", "task", "respond"], ["tsk_1", "--attempt", "att_1", "--content", "x"])
    ]
