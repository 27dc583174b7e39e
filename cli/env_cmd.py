"""`pebrel env`: who am I, where is the control plane, what can I run (R7.5, R7.6).

Always succeeds: the environment half needs no runtime, and what is missing is said plainly.
"""

from __future__ import annotations

import os
from typing import Any

import click

from pebrel import PROTOCOL, __version__
from pebrel.cli.options import pretty_option
from pebrel.cli.output import emit
from pebrel.client import Client, RuntimeUnavailable
from pebrel.datadir import data_dir
from pebrel.envelope import ok_response


def _env(name: str) -> str | None:
    """PEBREL_<name>, falling back to the legacy NEBULA_<name> (R7.6)."""
    return os.environ.get(f"PEBREL_{name}") or os.environ.get(f"NEBULA_{name}")


#: Where an example must run, when not from anywhere: inside the named agent's pane (agent
#: delegate needs an origin agent), or inside a git repository (agent fork).
IN_AGENT_PANE = "inside the pane of agent helper"
IN_GIT_REPO = "inside a git repository"
#: The collab examples take the ids of earlier answers from shell variables: SESSION (the
#: session registered), TASK, REVISION and ATTEMPT (the task's), MESSAGE (the last message
#: queued), DECISION (the question asked), EVENT (the comment made). docs/collab.md.
WITH_IDS = "with the ids of the earlier collab answers in $SESSION, $TASK, ..."

S = '--session "$SESSION"'
COLLAB_ROWS: list[tuple[str, str, str] | tuple[str, str, str, str]] = [
    ("collab capabilities", "what the collab service speaks, who you are to it",
     "pebrel collab capabilities"),
    ("collab group create", "a group of agent sessions (the user's)",
     "pebrel collab group create team"),
    ("collab group list", "every group", "pebrel collab group list"),
    ("collab session register", "make agent helper a session of the group",
     "pebrel collab session register --agent helper --group team"),
    ("collab session get", "a session: its agent, binding, online",
     'pebrel collab session get "$SESSION"', WITH_IDS),
    ("collab session list", "the group's sessions", "pebrel collab session list --group team"),
    ("collab group show", "a group and its sessions", "pebrel collab group show team"),
    ("collab task create", "a task in the group (add --assignee to assign it at once)",
     'pebrel collab task create --group team --title "Summarise" --content "Summarise the README"'),
    ("collab task assign", "a new attempt for a session; its text is typed into the agent",
     'pebrel collab task assign "$TASK" --assignee "$SESSION" --revision "$REVISION"', WITH_IDS),
    ("collab task list", "the group's tasks", "pebrel collab task list --group team"),
    ("collab message get", "a message and its delivery stages",
     'pebrel collab message get "$MESSAGE"', WITH_IDS),
    ("collab task report", "the assignee reports (ack, working, blocked, complete, failed)",
     f'pebrel collab {S} task report "$TASK" --attempt "$ATTEMPT" --status ack --content "On it"',
     WITH_IDS),
    ("collab task submit-plan", "the assignee proposes a plan",
     f'pebrel collab {S} task submit-plan "$TASK" --content "Read it, then write"', WITH_IDS),
    ("collab task approve-plan", "the user approves it",
     'pebrel collab task approve-plan "$TASK"', WITH_IDS),
    ("collab task question", "the assignee asks the user",
     f'pebrel collab {S} task question "$TASK" --content "How long?"', WITH_IDS),
    ("collab task answer", "the user answers once; the answer is typed into the agent",
     'pebrel collab task answer "$TASK" --decision "$DECISION" --content "One paragraph"',
     WITH_IDS),
    ("collab task report", "the delivery: complete makes a new artifact",
     f'pebrel collab {S} task report "$TASK" --attempt "$ATTEMPT" --status complete '
     '--content "Done" --summary "summarised"', WITH_IDS),
    ("collab task accept", "the user's verdict", 'pebrel collab task accept "$TASK"', WITH_IDS),
    ("collab task comment", "a consultation typed into the assignee; keeps acceptance",
     'pebrel collab task comment "$TASK" --content "Why so short?"', WITH_IDS),
    ("collab task respond", "the assignee answers the consultation",
     f'pebrel collab {S} task respond "$TASK" --attempt "$ATTEMPT" --to-event "$EVENT" '
     '--content "As asked"', WITH_IDS),
    ("collab reply", "answer a delivered message (with --status: a report)",
     f'pebrel collab {S} reply "$MESSAGE" --content "It was asked short"', WITH_IDS),
    ("collab task get", "the whole task: attempts, history, artifacts, outbox",
     'pebrel collab task get "$TASK"', WITH_IDS),
    ("collab task revise", "change the requirement; the result loses acceptance",
     'pebrel collab task revise "$TASK" --revision "$REVISION" --content "Two paragraphs"',
     WITH_IDS),
    ("collab task close", "close the task", 'pebrel collab task close "$TASK"', WITH_IDS),
    ("collab task reopen", "reopen it", 'pebrel collab task reopen "$TASK"', WITH_IDS),
    ("collab events list", "the group's journal, in order",
     "pebrel collab events list --group team --after 0"),
    ("collab group remove", "take a session out of the group (its queued texts fail)",
     'pebrel collab group remove team "$SESSION"', WITH_IDS),
    ("collab group add", "put it back", 'pebrel collab group add team "$SESSION"', WITH_IDS),
]  # fmt: skip


#: An integration identity for group team (docs/integration.md), its files in a private folder.
BRIDGE = "~/.config/pebrel-bridge"
AS_BRIDGE = (
    f"PEBREL_INTEGRATION_CREDENTIAL_FILE={BRIDGE}/credential.json pebrel collab --principal bridge"
)
TEAM_ID = (
    '$(pebrel integration groups | python3 -c \'import json, sys; print(next(g["group_id"]'
    ' for g in json.load(sys.stdin)["result"]["groups"] if g["name"] == "team"))\')'
)
INTEGRATION_ROWS: list[tuple[str, str, str] | tuple[str, str, str, str]] = [
    ("integration groups", "the groups an integration identity can be bound to",
     "pebrel integration groups"),
    ("integration create", "an identity for group team from a policy file; writes its credential",
     f"mkdir -p -m 700 {BRIDGE} && printf '{{\"id\":\"bridge\",\"groupId\":\"%s\","
     f"\"permissions\":[\"task.read\",\"events.read\",\"session.create\",\"session.read\","
     f"\"session.restore\"],\"launchProfiles\":[{{\"id\":\"claude\",\"agentSlug\":\"claude\","
     f"\"executable\":\"%s\",\"argv\":[],\"cwdRoots\":[\"%s\"],\"resumeArgv\":[\"--resume\","
     f"\"{{sessionId}}\",\"{{launchArgs}}\"]}}]}}' \"{TEAM_ID}\" \"$(command -v claude)\" "
     f"\"$HOME\" > {BRIDGE}/policy.json && pebrel integration create --file "
     f"{BRIDGE}/policy.json --credential-file {BRIDGE}/credential.json"),
    ("integration update", "replace its permissions and profiles from the edited policy file",
     f"pebrel integration update --file {BRIDGE}/policy.json"),
    ("integration list", "every identity (never a token)", "pebrel integration list"),
    ("agent hooks install", "install Claude Code's hooks: how Pebrel learns its session ids",
     "pebrel agent hooks install --kind claude"),
    ("collab session create", "launch a session from the identity's profile in a new window",
     "pebrel collab session create --launch-profile claude --cwd ~ --group team"),
    ("collab session restore", "once it is ready: resume exactly its conversation (unchanged "
     "while it runs)",
     'until pebrel collab session get "$SESSION" | grep -q \'"state": *"ready"\'; do sleep 0.2;'
     ' done; pebrel collab session restore "$SESSION"', WITH_IDS),
    ("collab events subscribe", "the identity's event stream, for 2 s (JSON lines)",
     f"{AS_BRIDGE} events subscribe --consumer main --jsonl --timeout 2s"),
    ("collab events ack", "ACK what the consumer stored: the last cursor it was sent",
     f"{AS_BRIDGE} events ack \"$({AS_BRIDGE} events subscribe --consumer main --jsonl "
     "--timeout 2s | python3 -c 'import json, sys; print([e[\"cursor\"] for e in "
     "map(json.loads, sys.stdin) if e[\"type\"] == \"event\"][-1])')\" --consumer main"),
    ("integration revoke", "end the identity: later requests and open streams are refused",
     "pebrel integration revoke bridge"),
]  # fmt: skip


def commands(window_id: int, pane_id: int) -> list[dict[str, str]]:
    """Every command with a copy-and-run example, in an order that runs top to bottom on a
    fresh runtime (the agent examples need the AI CLI they name on PATH)."""
    w, p = window_id, pane_id
    target = f"{p} --window {w}"
    ctl = f"--window {w} --pane {p}"
    workflow = '\'{"steps":[{"id":"side","op":"split","direction":"down"}]}\''
    rows: list[tuple[str, str, str] | tuple[str, str, str, str]] = [
        ("env", "who and where am I, is the runtime up", "pebrel env --pretty"),
        ("runtime status", "is a runtime answering", "pebrel runtime status"),
        ("runtime start", "start the runtime (idempotent)", "pebrel runtime start"),
        ("pane list", "all panes as flat rows", "pebrel pane list"),
        ("pane read", "last logical lines of a pane", f"pebrel pane read {target} --lines 40"),
        (
            "pane send",
            "type a line, press Enter, wait until it settles",
            f'pebrel pane send {target} "echo hello from pebrel" --wait',
        ),
        (
            "pane wait",
            "wait for a task state (use --after-seq from a previous answer)",
            f"pebrel pane wait {target} --state settled --timeout-ms 5000",
        ),
        ("pane run", "run a command, get its real exit code", f'pebrel pane run {target} "ls"'),
        (
            "pane exec",
            "run argv beside the pane (its cwd), capture both streams",
            f"pebrel pane exec {target} -- ls -la",
        ),
        ("pane procs", "the process tree under the pane's shell", f"pebrel pane procs {target}"),
        (
            "pane screen",
            "the visible screen with colours and attributes",
            f"pebrel pane screen {target}",
        ),
        ("pane key", "send a named key (here ctrl-c)", f"pebrel pane key {target} c --control"),
        (
            "pane paste",
            "bracketed paste of text, then Enter",
            f'pebrel pane paste {target} "echo pasted"',
        ),
        (
            "ctl describe",
            "versions, methods, features, env contract",
            "pebrel ctl describe --pretty",
        ),
        ("ctl snapshot", "windows, tabs, panes, states", "pebrel ctl snapshot --pretty"),
        ("ctl subscribe", "stream snapshots as JSON lines", "pebrel ctl subscribe --count 1"),
        ("ctl read", "pane.read", f"pebrel ctl read {ctl} --lines 120"),
        ("ctl run", "pane.run", f'pebrel ctl run {ctl} --command "true"'),
        ("ctl exec-pane", "pane.exec", f"pebrel ctl exec-pane {ctl} -- pwd"),
        ("ctl procs", "pane.procs", f"pebrel ctl procs {ctl}"),
        (
            "ctl prompt",
            "pane.prompt, then wait from the post-submit baseline",
            f'pebrel ctl prompt {ctl} --text "echo done" --wait settled',
        ),
        ("ctl paste", "pane.paste", f'pebrel ctl paste {ctl} --text "echo pasted again"'),
        ("ctl send-key", "pane.send_key", f"pebrel ctl send-key {ctl} --key c --control"),
        ("ctl wait", "pane.wait", f"pebrel ctl wait {ctl} --state settled --timeout-ms 5000"),
        ("ctl focus", "focus a window or pane", f"pebrel ctl focus {ctl}"),
        ("ctl new-tab", "open a tab", f"pebrel ctl new-tab --window {w}"),
        ("ctl split", "split the focused pane", f"pebrel ctl split --window {w} --direction right"),
        ("pane split", "split a given pane", f"pebrel pane split {target} --direction down"),
        (
            "pane wait-any",
            "the first of several panes to reach a state (W:P or P each)",
            f"pebrel pane wait-any {w}:{p + 1} {w}:{p} --state settled --timeout-ms 5000",
        ),
        (
            "pane zoom",
            "zoom a pane to its tab (explicit)",
            f"pebrel pane zoom {target} --zoomed true",
        ),
        ("pane resize", "set a pane's share of its split", f"pebrel pane resize {target} 0.6"),
        ("pane focus", "focus a pane", f"pebrel pane focus {target}"),
        ("tab new", "open a tab", f"pebrel tab new --window {w} --cols 120 --rows 40"),
        (
            "tab rename",
            "name a tab (--clear removes it)",
            f"pebrel tab rename 2 scratch --window {w}",
        ),
        ("tab move", "move a tab within its window", f"pebrel tab move 2 0 --window {w}"),
        ("tab close", "close an idle tab by index", f"pebrel tab close 0 --window {w}"),
        ("window create", "open a window", "pebrel window create --cols 120 --rows 40"),
        ("window focus", "focus a window", f"pebrel window focus {w}"),
        (
            "pane close",
            "close an idle pane (busy needs --confirm)",
            f"pebrel pane close {p + 2} --window {w}",
        ),
        ("window close", "close an idle window", f"pebrel window close {w + 1}"),
        (
            "agent start",
            "start a named AI agent in a new tab, once ready",
            "pebrel agent start helper --kind claude",
        ),
        ("agent list", "only the panes running an AI agent", "pebrel agent list"),
        (
            "agent send",
            "give the agent a task, wait for its turn, print its final message",
            'pebrel agent send helper "summarise the README" --wait',
        ),
        ("agent read", "what the agent printed", "pebrel agent read helper --lines 40"),
        (
            "agent paste",
            "multi-line input as one paste",
            'pebrel agent paste helper "review this" --wait',
        ),
        ("agent get", "the agent's id, generation, state", "pebrel agent get helper"),
        (
            "agent wait",
            "wait for this exact generation's state",
            "pebrel agent wait helper --generation 1 --state settled --timeout-ms 5000",
        ),
        ("ctl agents", "agents.list", "pebrel ctl agents"),
        ("ctl agent-get", "agent.get", "pebrel ctl agent-get --agent helper"),
        (
            "ctl agent-prompt",
            "agent.prompt bound to a generation",
            'pebrel ctl agent-prompt --agent helper --generation 1 --text "and the tests" '
            "--wait settled",
        ),
        (
            "ctl agent-wait",
            "agent.wait",
            "pebrel ctl agent-wait --agent helper --generation 1 --state settled --timeout-ms 5000",
        ),
        ("ctl agent-read", "agent.read", "pebrel ctl agent-read --agent helper --generation 1"),
        *COLLAB_ROWS,
        *INTEGRATION_ROWS,
        ("agent start", "a second agent", "pebrel agent start reviewer --kind codex"),
        (
            "agent launch",
            "type an agent's own command line into a new window (answers once typed)",
            "pebrel agent launch launched --kind claude --cwd ~ -- claude --model sonnet",
        ),
        (
            "agent delegate",
            "hand a task to another agent; its answer comes back to you by itself",
            'pebrel agent delegate reviewer "check the diff"',
            IN_AGENT_PANE,
        ),
        (
            "agent hooks install",
            "write (or --print) the hook settings of Claude Code or Codex",
            "pebrel agent hooks install --kind claude --print",
        ),
        ("hook", "what an agent's hook runs (always exits 0)", "pebrel hook stop --kind claude"),
        (
            "ctl orchestrate",
            "a whole layout in one request",
            f"echo {workflow} | pebrel ctl orchestrate --file -",
        ),
        (
            "ctl agent-fork",
            "an agent in a new git worktree of this repository",
            "pebrel ctl agent-fork --source-cwd . --name forked --kind claude",
            IN_GIT_REPO,
        ),
        (
            "view",
            "every pane live in a local web page (prints a one-time login link; here for 2 s)",
            "timeout --preserve-status 2 pebrel view",
        ),
        (
            "attach",
            "for people: one pane in your own terminal, typed into; Ctrl-] detaches (here in a"
            " throwaway terminal for 2 s; inside a pane it is read-only)",
            f"script -qec 'timeout --preserve-status 2 pebrel attach {target}' /dev/null",
        ),
        ("runtime stop", "stop the runtime and everything it started", "pebrel runtime stop"),
    ]
    listed = []
    for row in rows:
        entry = {"command": row[0], "description": row[1], "example": row[2]}
        if len(row) > 3:
            entry["run_in"] = row[3]
        listed.append(entry)
    return listed


@click.command()
@pretty_option
def env(pretty: bool) -> None:
    """Describe this pane's identity, the runtime's reachability and every command."""
    window = _env("WINDOW_ID")
    pane = _env("PANE_ID")
    cli_path = _env("CLI")
    missing: list[str] = []
    in_pane = os.environ.get("TERM_PROGRAM") in ("pebrel", "nebula") and pane is not None
    if not in_pane:
        missing.append("not inside a Pebrel pane (no PEBREL_PANE_ID / TERM_PROGRAM=pebrel)")
    elif window is None:
        missing.append("PEBREL_WINDOW_ID is not set (pane ids are only unique within a window)")
    runtime: dict[str, Any] = {"reachable": False, "data_dir": str(data_dir())}
    try:
        with Client(timeout_s=3) as client:
            answer = client.ping()
            runtime.update(
                reachable=answer.startswith("PONG"),
                pid=client.info.pid,
                port=client.info.port,
                runtime_id=client.info.runtime_id,
                version=client.info.version,
            )
    except (RuntimeUnavailable, OSError) as exc:
        runtime["problem"] = str(exc)
        missing.append(f"no runtime reachable: {exc}")
    w = int(window) if window and window.isdigit() else 1
    p = int(pane) if pane and pane.isdigit() else 1
    result = {
        "in_pebrel_pane": in_pane,
        "window_id": int(window) if window and window.isdigit() else None,
        "pane_id": int(pane) if pane and pane.isdigit() else None,
        "remote": _env("PANE_REMOTE") == "1",
        "cli": cli_path,
        "bin_dir": _env("BIN_DIR"),
        "term_program": os.environ.get("TERM_PROGRAM"),
        "cli_version": __version__,
        "protocol": PROTOCOL,
        "runtime": runtime,
        "missing": missing,
        "commands": commands(w, p),
    }
    emit(ok_response(None, result), pretty)
