"""Recognising AI CLIs from argv: whole names only, never a substring (DESIGN "Agents")."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pebrel.agentkinds import DISPLAY_NAMES, KINDS, classify, describe


class Case(NamedTuple):
    id: str
    argv: list[str]
    kind: str | None
    program: str


CASES = [
    # plain executables
    Case("claude", ["claude"], "claude", "claude"),
    Case("claude-path-args", ["/home/u/.local/bin/claude", "--resume", "x"], "claude", "claude"),
    Case("codex", ["codex", "exec", "hi"], "codex", "codex"),
    Case("opencode", ["/usr/bin/opencode"], "opencode", "opencode"),
    Case("cursor-agent-exe", ["agent"], "cursor", "agent"),
    Case("cursor-agent-long", ["cursor-agent", "-p"], "cursor", "cursor-agent"),
    Case("pi", ["pi"], "pi", "pi"),
    Case("omp", ["omp"], "omp", "omp"),
    Case("kimi", ["kimi"], "kimi", "kimi"),
    Case("login-dash", ["-claude"], "claude", "claude"),
    Case("windows-exe", ["C:\\bin\\codex.exe"], "codex", "codex"),
    # node and friends
    Case("node-shebang", ["node", "/usr/local/bin/claude"], "claude", "claude"),
    Case("node-options", ["node", "--no-warnings", "-r", "x", "/bin/codex"], "codex", "codex"),
    Case("node-opt-eq", ["/usr/bin/node", "--import=tsx", "./pi.ts"], "pi", "pi"),
    Case(
        "node-modules-entry",
        ["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"],
        "claude",
        "claude-code",
    ),
    Case(
        "node-modules-bin",
        ["node", "/p/node_modules/@openai/codex/bin/codex.js"],
        "codex",
        "codex",
    ),
    Case("nodejs-mjs", ["nodejs", "opencode.mjs"], "opencode", "opencode"),
    Case("node-cjs", ["node", "kimi.cjs"], "kimi", "kimi"),
    Case("bun-script", ["bun", "--smol", "omp.ts"], "omp", "omp"),
    Case("bun-run", ["bun", "run", "/x/claude.js"], "claude", "claude"),
    Case("bun-x", ["bun", "x", "opencode-ai@latest"], "opencode", "opencode-ai"),
    Case("bunx", ["bunx", "@openai/codex"], "codex", "codex"),
    Case(
        "deno-run-npm",
        ["deno", "run", "-A", "npm:@anthropic-ai/claude-code"],
        "claude",
        "claude-code",
    ),
    Case("npx", ["npx", "-y", "@anthropic-ai/claude-code@1.0.0"], "claude", "claude-code"),
    Case("npx-package-opt", ["npx", "--package", "@openai/codex", "codex"], "codex", "codex"),
    Case("pnpx", ["pnpx", "opencode-ai"], "opencode", "opencode-ai"),
    Case("npm-exec", ["npm", "exec", "--yes", "--", "@openai/codex"], "codex", "codex"),
    Case("npm-x", ["npm", "x", "opencode-ai"], "opencode", "opencode-ai"),
    Case("pnpm-dlx", ["pnpm", "dlx", "cursor-agent"], "cursor", "cursor-agent"),
    # python and uvx
    Case("python-script", ["python3", "-u", "/venv/bin/kimi"], "kimi", "kimi"),
    Case("python-x-w", ["python3.12", "-X", "dev", "-W", "ignore", "pi.py"], "pi", "pi"),
    Case("python-cluster", ["python", "-uB", "claude.py"], "claude", "claude"),
    Case("python-m", ["python3", "-m", "kimi_cli"], "kimi", "kimi_cli"),
    Case("python-m-attached", ["python3.11", "-mkimi_cli"], "kimi", "kimi_cli"),
    Case("python2-digits", ["python2.7", "codex"], "codex", "codex"),
    Case("uvx", ["uvx", "kimi-cli"], "kimi", "kimi-cli"),
    Case("uvx-version", ["uvx", "--python", "3.12", "kimi-cli==0.5"], "kimi", "kimi-cli"),
    Case("uvx-from", ["uvx", "--from", "kimi-cli", "kimi"], "kimi", "kimi"),
    # shell scripts (a fake CLI with a #!/bin/sh line runs as `sh /path/claude`)
    Case("sh-shebang", ["/bin/sh", "/tmp/bin/claude"], "claude", "claude"),
    Case("bash-opts-script", ["bash", "-e", "-o", "pipefail", "./codex"], "codex", "codex"),
    Case("zsh-sh-ext", ["zsh", "opencode.sh"], "opencode", "opencode"),
    Case("fish-init-command", ["fish", "-C", "set x 1", "kimi"], "kimi", "kimi"),
    # negatives: never a substring of the command line
    Case("bash-cluster-c", ["bash", "-ec", "claude"], None, "bash"),
    Case("sh-stdin", ["sh", "-s", "codex"], None, "sh"),
    Case("fish-command", ["fish", "--command", "claude"], None, "fish"),
    Case("interactive-shell", ["bash", "--rcfile", "/x/rc", "-i"], None, "bash"),
    Case("login-shell", ["-zsh"], None, "zsh"),
    Case("vim-codex-py", ["vim", "codex.py"], None, "vim"),
    Case("cat-claude-md", ["cat", "claude.md"], None, "cat"),
    Case("grep-claude", ["grep", "claude"], None, "grep"),
    Case("less-codex", ["less", "codex"], None, "less"),
    Case("sleep", ["sleep", "30"], None, "sleep"),
    Case("make", ["make"], None, "make"),
    Case("bash-c", ["bash", "-c", "claude"], None, "bash"),
    Case("python-c", ["python3", "-c", 'print("claude")'], None, "python3"),
    Case("python-m-other", ["python3", "-m", "http.server"], None, "http.server"),
    Case("python-repl", ["python3"], None, "python3"),
    Case("node-eval", ["node", "-e", "require('claude')"], None, "node"),
    Case("node-require-value", ["node", "-r", "claude"], None, "node"),
    Case("npx-call", ["npx", "-c", "claude"], None, "npx"),
    Case("npm-install", ["npm", "install", "@openai/codex"], None, "npm"),
    Case("deno-eval", ["deno", "eval", "claude"], None, "deno"),
    Case("substring-exe", ["claude-helper"], None, "claude-helper"),
    Case("prefix-exe", ["mycodex"], None, "mycodex"),
    Case("script-in-claude-dir", ["node", "/home/u/claude/index.js"], None, "index"),
    Case("empty", [], None, ""),
    Case("empty-arg0", [""], None, ""),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_describe(case: Case) -> None:
    assert describe(case.argv) == (case.kind, case.program)
    assert classify(case.argv) == case.kind


def test_every_kind_has_a_display_name() -> None:
    assert set(DISPLAY_NAMES) == set(KINDS)
    assert DISPLAY_NAMES["cursor"] == "Cursor Agent"
