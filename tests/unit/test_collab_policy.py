"""A principal's policy is checked whole before anything is stored (I1.2, I4.2, I4.4; #17).

Each rule has a row that breaks it (INVALID_POLICY naming the exact field path) and the
spec's own example passes. Every problem of a policy is reported at once, the first in
`details.field`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from pebrel.collab import policy
from pebrel.errors import CollabCode, CollabError

pytestmark = pytest.mark.timeout(30)


def example() -> dict[str, Any]:
    """The spec's policy example, with a Pebrel agent kind and a startup condition."""
    return {
        "id": "report-bridge",
        "groupId": "grp_0123456789abcdef0123",
        "permissions": list(policy.PERMISSIONS),
        "launchProfiles": [
            {
                "id": "report-agent",
                "agentSlug": "codex",
                "executable": "/opt/wrappers/report-agent",
                "argv": ["-m", "model-name", "-C", "{cwd}"],
                "cwdRoots": ["/srv/runs"],
                "resumeArgv": ["resume", "{sessionId}", "{launchArgs}"],
                "startupInput": {"allOf": ["model: x", "❯"], "noneOf": ["loading"]},
            }
        ],
    }


def test_the_spec_example_passes_normalised() -> None:
    checked = policy.check(example())
    assert checked["id"] == "report-bridge"
    assert checked["permissions"] == list(policy.PERMISSIONS)
    (profile,) = checked["launchProfiles"]
    assert profile["startupInput"] == {
        "allOf": ["model: x", "❯"],
        "noneOf": ["loading"],
        "stableMs": 1000,
        "timeoutMs": 120000,
    }


def test_permissions_come_back_in_the_spec_s_order() -> None:
    given = example()
    given["permissions"] = ["events.read", "task.read"]
    assert policy.check(given)["permissions"] == ["task.read", "events.read"]


Edit = Callable[[dict[str, Any]], None]


def setting(path: str, value: Any) -> Edit:
    """Set ``path`` (dots; ``[i]`` for list items) to ``value``; `DELETE` removes the key."""

    def edit(doc: dict[str, Any]) -> None:
        parts = path.replace("[", ".[").split(".")
        target: Any = doc
        for part in parts[:-1]:
            target = target[int(part[1:-1])] if part.startswith("[") else target[part]
        last = parts[-1]
        if value is DELETE:
            del target[last]
        elif last.startswith("["):
            target[int(last[1:-1])] = value
        else:
            target[last] = value

    return edit


DELETE = object()
P0 = "launchProfiles[0]"
S0 = f"{P0}.startupInput"


class Row(NamedTuple):
    id: str
    edit: Edit
    field: str  # the field path INVALID_POLICY names


def profile_with(**changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = copy.deepcopy(example()["launchProfiles"][0])
    found.update(changes)
    return found


REFUSED = [
    # the policy itself
    Row("unknown top-level key", setting("extra", 1), "extra"),
    Row("id missing", setting("id", DELETE), "id"),
    Row("id empty", setting("id", ""), "id"),
    Row("id with a slash", setting("id", "a/b"), "id"),
    Row("id with a space", setting("id", "a b"), "id"),
    Row("id of 65 characters", setting("id", "a" * 65), "id"),
    Row("id not a string", setting("id", 7), "id"),
    Row("groupId missing", setting("groupId", DELETE), "groupId"),
    Row("groupId empty", setting("groupId", ""), "groupId"),
    Row("groupId with a control character", setting("groupId", "grp\n"), "groupId"),
    Row("permissions missing", setting("permissions", DELETE), "permissions"),
    Row("permissions not a list", setting("permissions", "task.read"), "permissions"),
    Row(
        "unknown permission", setting("permissions", ["task.read", "task.drive"]), "permissions[1]"
    ),
    Row("a permission twice", setting("permissions", ["task.read", "task.read"]), "permissions[1]"),
    Row("a permission not a string", setting("permissions", [1]), "permissions[0]"),
    Row("launchProfiles missing", setting("launchProfiles", DELETE), "launchProfiles"),
    Row("launchProfiles not a list", setting("launchProfiles", {}), "launchProfiles"),
    Row("a profile not an object", setting("launchProfiles", [1]), P0),
    Row(
        "too many profiles",
        setting(
            "launchProfiles",
            [profile_with(id=f"p{i}") for i in range(policy.MAX_PROFILES + 1)],
        ),
        "launchProfiles",
    ),
    # a launch profile
    Row("unknown profile key", setting(f"{P0}.model", "x"), f"{P0}.model"),
    Row(
        "profile id twice",
        setting("launchProfiles", [profile_with(), profile_with()]),
        "launchProfiles[1].id",
    ),
    Row("profile id unsafe", setting(f"{P0}.id", "../x"), f"{P0}.id"),
    Row("profile id missing", setting(f"{P0}.id", DELETE), f"{P0}.id"),
    Row("agentSlug unknown", setting(f"{P0}.agentSlug", "traex"), f"{P0}.agentSlug"),
    Row("agentSlug missing", setting(f"{P0}.agentSlug", DELETE), f"{P0}.agentSlug"),
    Row("executable relative", setting(f"{P0}.executable", "bin/x"), f"{P0}.executable"),
    Row("executable empty", setting(f"{P0}.executable", ""), f"{P0}.executable"),
    Row(
        "executable with a control character",
        setting(f"{P0}.executable", "/bin/x\x1b"),
        f"{P0}.executable",
    ),
    Row("executable missing", setting(f"{P0}.executable", DELETE), f"{P0}.executable"),
    Row("argv not a list", setting(f"{P0}.argv", "-m x"), f"{P0}.argv"),
    Row("argv item not a string", setting(f"{P0}.argv", ["-m", 5]), f"{P0}.argv[1]"),
    Row("argv with a newline", setting(f"{P0}.argv", ["a\nb"]), f"{P0}.argv[0]"),
    Row("argv with DEL", setting(f"{P0}.argv", ["a\x7f"]), f"{P0}.argv[0]"),
    Row("argv with a C1 control", setting(f"{P0}.argv", ["a\x9b"]), f"{P0}.argv[0]"),
    Row("argv with --last", setting(f"{P0}.argv", ["--last"]), f"{P0}.argv[0]"),
    Row("argv with --last=1", setting(f"{P0}.argv", ["--last=1"]), f"{P0}.argv[0]"),
    Row("argv {cwd} inside a token", setting(f"{P0}.argv", ["-C{cwd}"]), f"{P0}.argv[0]"),
    Row(
        "argv {sessionId} inside a token",
        setting(f"{P0}.argv", ["--id={sessionId}"]),
        f"{P0}.argv[0]",
    ),
    Row("argv holds {launchArgs}", setting(f"{P0}.argv", ["{launchArgs}"]), f"{P0}.argv"),
    Row("argv missing", setting(f"{P0}.argv", DELETE), f"{P0}.argv"),
    Row("cwdRoots empty", setting(f"{P0}.cwdRoots", []), f"{P0}.cwdRoots"),
    Row("cwdRoots relative", setting(f"{P0}.cwdRoots", ["runs"]), f"{P0}.cwdRoots[0]"),
    Row("cwdRoots not a list", setting(f"{P0}.cwdRoots", "/srv"), f"{P0}.cwdRoots"),
    Row("cwdRoots with a tab", setting(f"{P0}.cwdRoots", ["/srv\truns"]), f"{P0}.cwdRoots[0]"),
    Row("cwdRoots missing", setting(f"{P0}.cwdRoots", DELETE), f"{P0}.cwdRoots"),
    Row("resumeArgv missing", setting(f"{P0}.resumeArgv", DELETE), f"{P0}.resumeArgv"),
    Row(
        "resumeArgv without {sessionId}",
        setting(f"{P0}.resumeArgv", ["resume", "{launchArgs}"]),
        f"{P0}.resumeArgv",
    ),
    Row(
        "resumeArgv without {launchArgs}",
        setting(f"{P0}.resumeArgv", ["resume", "{sessionId}"]),
        f"{P0}.resumeArgv",
    ),
    Row(
        "resumeArgv {sessionId} twice",
        setting(f"{P0}.resumeArgv", ["{sessionId}", "{sessionId}", "{launchArgs}"]),
        f"{P0}.resumeArgv",
    ),
    Row(
        "resumeArgv {launchArgs} twice",
        setting(f"{P0}.resumeArgv", ["{sessionId}", "{launchArgs}", "{launchArgs}"]),
        f"{P0}.resumeArgv",
    ),
    Row(
        "resumeArgv {sessionId} inside a token",
        setting(f"{P0}.resumeArgv", ["--resume={sessionId}", "{sessionId}", "{launchArgs}"]),
        f"{P0}.resumeArgv[0]",
    ),
    Row(
        "resumeArgv with --last",
        setting(f"{P0}.resumeArgv", ["resume", "--last", "{sessionId}", "{launchArgs}"]),
        f"{P0}.resumeArgv[1]",
    ),
    Row(
        "argv with --continue",
        setting(f"{P0}.argv", ["--continue"]),
        f"{P0}.argv[0]",
    ),
    Row(
        "resumeArgv with --continue=x",
        setting(f"{P0}.resumeArgv", ["--continue=x", "{sessionId}", "{launchArgs}"]),
        f"{P0}.resumeArgv[0]",
    ),
    Row(
        "resumeArgv {cwd} inside a token",
        setting(f"{P0}.resumeArgv", ["-C", "x{cwd}", "{sessionId}", "{launchArgs}"]),
        f"{P0}.resumeArgv[1]",
    ),
    # startupInput (I4.4)
    Row("startupInput not an object", setting(S0, ["x"]), S0),
    Row("startupInput unknown key", setting(f"{S0}.regex", "x"), f"{S0}.regex"),
    Row("allOf missing", setting(f"{S0}.allOf", DELETE), f"{S0}.allOf"),
    Row("allOf empty", setting(f"{S0}.allOf", []), f"{S0}.allOf"),
    Row("allOf not a list", setting(f"{S0}.allOf", "x"), f"{S0}.allOf"),
    Row("allOf empty text", setting(f"{S0}.allOf", [""]), f"{S0}.allOf[0]"),
    Row("allOf text of 257", setting(f"{S0}.allOf", ["x" * 257]), f"{S0}.allOf[0]"),
    Row("allOf control character", setting(f"{S0}.allOf", ["a\rb"]), f"{S0}.allOf[0]"),
    Row("allOf blanks only", setting(f"{S0}.allOf", ["  "]), f"{S0}.allOf"),
    Row("a text in allOf and noneOf", setting(f"{S0}.noneOf", ["model: x"]), f"{S0}.noneOf"),
    Row("the same text once folded", setting(f"{S0}.noneOf", ["model:   x"]), f"{S0}.noneOf"),
    Row("noneOf inside an allOf text", setting(f"{S0}.noneOf", ["odel"]), f"{S0}.noneOf"),
    Row(
        "stableMs above timeoutMs",
        setting(S0, {"allOf": ["x"], "stableMs": 3000, "timeoutMs": 2000}),
        f"{S0}.stableMs",
    ),
    Row("allOf 17 texts", setting(f"{S0}.allOf", [f"t{i}" for i in range(17)]), f"{S0}.allOf"),
    Row("noneOf 17 texts", setting(f"{S0}.noneOf", [f"t{i}" for i in range(17)]), f"{S0}.noneOf"),
    Row("noneOf empty text", setting(f"{S0}.noneOf", [""]), f"{S0}.noneOf[0]"),
    Row("noneOf control character", setting(f"{S0}.noneOf", ["\x00"]), f"{S0}.noneOf[0]"),
    Row("stableMs 499", setting(f"{S0}.stableMs", 499), f"{S0}.stableMs"),
    Row("stableMs 5001", setting(f"{S0}.stableMs", 5001), f"{S0}.stableMs"),
    Row("stableMs not an integer", setting(f"{S0}.stableMs", 1000.5), f"{S0}.stableMs"),
    Row("stableMs a boolean", setting(f"{S0}.stableMs", True), f"{S0}.stableMs"),
    Row("stableMs a string", setting(f"{S0}.stableMs", "1000"), f"{S0}.stableMs"),
    Row("timeoutMs 999", setting(f"{S0}.timeoutMs", 999), f"{S0}.timeoutMs"),
    Row("timeoutMs 120001", setting(f"{S0}.timeoutMs", 120001), f"{S0}.timeoutMs"),
]


@pytest.mark.parametrize("row", REFUSED, ids=[r.id for r in REFUSED])
def test_each_rule_refuses_naming_the_field(row: Row) -> None:
    doc = example()
    row.edit(doc)
    with pytest.raises(CollabError) as caught:
        policy.check(doc)
    error = caught.value
    assert error.code == CollabCode.INVALID_POLICY
    assert row.field in [p["field"] for p in error.details["problems"]], error.details
    assert error.details["retryable"] is False


ACCEPTED = [
    Row("no launch profiles", setting("launchProfiles", []), ""),
    Row("no permissions", setting("permissions", []), ""),
    Row("no startupInput", setting(S0, DELETE), ""),
    Row("noneOf omitted", setting(f"{S0}.noneOf", DELETE), ""),
    Row("noneOf empty", setting(f"{S0}.noneOf", []), ""),
    Row("16 allOf texts", setting(f"{S0}.allOf", [f"t{i}" for i in range(16)]), ""),
    Row("a text of 256", setting(f"{S0}.allOf", ["x" * 256]), ""),
    Row("stableMs 500", setting(f"{S0}.stableMs", 500), ""),
    Row("stableMs 5000", setting(f"{S0}.stableMs", 5000), ""),
    Row("timeoutMs 1000", setting(f"{S0}.timeoutMs", 1000), ""),
    Row("timeoutMs 120000", setting(f"{S0}.timeoutMs", 120000), ""),
    Row("id of 64 safe characters", setting("id", "A-z_0.9" + "x" * 57), ""),
    Row("{sessionId} whole in argv", setting(f"{P0}.argv", ["--session-id", "{sessionId}"]), ""),
    Row("an empty argument", setting(f"{P0}.argv", [""]), ""),
    Row("empty argv", setting(f"{P0}.argv", []), ""),
    Row("JSON braces in argv", setting(f"{P0}.argv", ['{"a": 1}']), ""),
    Row("--last-mile is not --last", setting(f"{P0}.argv", ["--last-mile"]), ""),
    Row("two profiles", setting("launchProfiles", [profile_with(), profile_with(id="b")]), ""),
    Row(
        "resume ids whole, anywhere",
        setting(f"{P0}.resumeArgv", ["{launchArgs}", "--resume", "{sessionId}", "-C", "{cwd}"]),
        "",
    ),
]


@pytest.mark.parametrize("row", ACCEPTED, ids=[r.id for r in ACCEPTED])
def test_edge_values_are_accepted(row: Row) -> None:
    doc = example()
    row.edit(doc)
    policy.check(doc)


def test_every_problem_is_named_the_first_in_field() -> None:
    doc = example()
    doc["id"] = "a b"
    doc["launchProfiles"][0]["resumeArgv"] = ["resume"]
    doc["launchProfiles"][0]["startupInput"]["stableMs"] = 1
    with pytest.raises(CollabError) as caught:
        policy.check(doc)
    fields = [p["field"] for p in caught.value.details["problems"]]
    assert caught.value.details["field"] == "id" == fields[0]
    assert f"{P0}.resumeArgv" in fields and f"{S0}.stableMs" in fields
    assert "(and " in str(caught.value)


@pytest.mark.parametrize("doc", [None, [], "policy", 3])
def test_a_policy_is_an_object(doc: Any) -> None:
    with pytest.raises(CollabError) as caught:
        policy.check(doc)
    assert caught.value.code == CollabCode.INVALID_POLICY
    assert caught.value.details["field"] == "policy"


def test_a_public_profile_never_shows_the_command() -> None:
    """I1.7: what a principal and the admin see of a profile."""
    (profile,) = policy.check(example())["launchProfiles"]
    shown = policy.public_profile(profile)
    assert shown == {
        "id": "report-agent",
        "agent_slug": "codex",
        "cwd_roots": ["/srv/runs"],
        "startup_input_condition": True,
    }
    del profile["startupInput"]
    assert policy.public_profile(profile)["startup_input_condition"] is False
