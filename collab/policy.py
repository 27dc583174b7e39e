"""A principal's policy file, checked whole before anything is stored (I1.2, I4.2, I4.4; #17).

The policy is the spec's JSON exactly: `id`, `groupId`, `permissions` and `launchProfiles`
(each with `id`, `agentSlug`, `executable`, `argv`, `cwdRoots`, `resumeArgv` and an optional
`startupInput`). `check` reads one and returns it normalised (the permissions sorted, the
startup-input defaults filled in), or raises INVALID_POLICY whose details name every problem
by its field path (`launchProfiles[0].resumeArgv`), the first one in `details.field`.
Unknown keys are refused at every level: a misspelt `startupInput` must never be ignored.

Whether `groupId` names an existing group is the caller's to check (it needs the database);
`field_error` builds that refusal in the same shape.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Final

from pebrel.agentkinds import KINDS
from pebrel.errors import CollabCode, CollabError

#: Every permission a policy may grant (FEATURES I1.2), in the spec's order.
PERMISSIONS: Final = (
    "task.read",
    "task.create",
    "task.assign",
    "task.comment",
    "task.revise",
    "task.answer",
    "events.read",
    "session.create",
    "session.read",
    "session.restore",
)
#: An identity's or a profile's id: letters, digits, '.', '_', '-' (1-64 characters).
SAFE_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: The placeholders a launch template may hold, each only as a whole argument (I4.2).
CWD: Final = "{cwd}"
SESSION_ID: Final = "{sessionId}"
LAUNCH_ARGS: Final = "{launchArgs}"
PLACEHOLDERS: Final = (CWD, SESSION_ID, LAUNCH_ARGS)
#: Bounds that keep a policy a policy (not a data store).
MAX_PROFILES: Final = 32
MAX_ARGS: Final = 256
MAX_ROOTS: Final = 32
MAX_TEXT: Final = 4096
#: startupInput (I4.4).
MAX_SCREEN_TEXTS: Final = 16
#: Arguments that pick "the most recent" conversation instead of an exact one (I4.2).
RECENT: Final = ("--last", "--continue")
SCREEN_TEXT_CHARS: Final = (1, 256)
STABLE_MS: Final = (500, 5000)
STABLE_MS_DEFAULT: Final = 1000
TIMEOUT_MS: Final = (1000, 120_000)
TIMEOUT_MS_DEFAULT: Final = 120_000
#: Live sessions (any state but failed) one principal may hold (INTEGRATION_SESSION_LIMIT).
MAX_SESSIONS: Final = (1, 256)
MAX_SESSIONS_DEFAULT: Final = 16

POLICY_KEYS: Final = frozenset({"id", "groupId", "permissions", "launchProfiles", "maxSessions"})
PROFILE_KEYS: Final = frozenset(
    {"id", "agentSlug", "executable", "argv", "cwdRoots", "resumeArgv", "startupInput"}
)
STARTUP_KEYS: Final = frozenset({"allOf", "noneOf", "stableMs", "timeoutMs"})


def field_error(path: str, message: str) -> CollabError:
    """INVALID_POLICY for one field."""
    return CollabError(
        CollabCode.INVALID_POLICY,
        f"{path}: {message}",
        {"field": path, "problems": [{"field": path, "message": message}]},
    )


_BLANKS: Final = re.compile(r"[^\S\n]+")


def fold(text: str) -> str:
    """Runs of horizontal whitespace as one space (newlines kept): how a startup condition's
    texts and the screen are compared (I4.4)."""
    return _BLANKS.sub(" ", text)


def has_control(text: str) -> bool:
    """A control character (C0, DEL, C1) or a Unicode line or paragraph separator."""
    return any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in text)


class Checker:
    """Collects every problem of one policy (a path and a message each)."""

    def __init__(self) -> None:
        self.problems: list[dict[str, str]] = []

    def bad(self, path: str, message: str) -> None:
        self.problems.append({"field": path, "message": message})

    def keys(self, value: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
        for key in sorted(set(value) - allowed):
            self.bad(f"{path}.{key}" if path else key, "unknown key")

    def mapping(self, value: Any, path: str) -> Mapping[str, Any] | None:
        if isinstance(value, Mapping):
            return value
        self.bad(path, "must be a JSON object")
        return None

    def text(self, value: Any, path: str, max_chars: int = MAX_TEXT) -> str | None:
        """A non-empty string without control characters."""
        if not isinstance(value, str) or not value:
            self.bad(path, "must be a non-empty string")
            return None
        if len(value) > max_chars:
            self.bad(path, f"must be at most {max_chars} characters")
            return None
        if has_control(value):
            self.bad(path, "must not contain control characters")
            return None
        return value

    def name(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
            self.bad(path, "must be 1-64 letters, digits, '.', '_' or '-'")
            return None
        return value

    def absolute(self, value: Any, path: str) -> str | None:
        found = self.text(value, path)
        if found is not None and not found.startswith("/"):
            self.bad(path, "must be an absolute path")
            return None
        return found

    def strings(
        self, value: Any, path: str, check: Callable[[Any, str], str | None]
    ) -> list[str] | None:
        if not isinstance(value, list):
            self.bad(path, "must be a JSON array")
            return None
        out = [check(item, f"{path}[{i}]") for i, item in enumerate(value)]
        kept = [item for item in out if item is not None]
        return kept if len(kept) == len(out) else None

    def integer(self, value: Any, path: str, bounds: tuple[int, int]) -> int | None:
        low, high = bounds
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            self.bad(path, f"must be an integer from {low} to {high}")
            return None
        return value

    # -- the parts -----------------------------------------------------------------------------
    def permissions(self, value: Any) -> list[str] | None:
        if not isinstance(value, list):
            self.bad("permissions", "must be a JSON array of permission names")
            return None
        seen: set[str] = set()
        for i, item in enumerate(value):
            path = f"permissions[{i}]"
            if not isinstance(item, str) or item not in PERMISSIONS:
                self.bad(path, f"unknown permission; one of {', '.join(PERMISSIONS)}")
            elif item in seen:
                self.bad(path, f"{item} is given twice")
            else:
                seen.add(item)
        return [name for name in PERMISSIONS if name in seen]

    def template(self, value: Any, path: str, resume: bool) -> list[str] | None:
        """argv or resumeArgv: placeholders only as whole arguments, no --last (I4.2)."""
        args = self.strings(value, path, self.argument)
        if args is None:
            return None
        if len(args) > MAX_ARGS:
            self.bad(path, f"at most {MAX_ARGS} arguments")
        for i, arg in enumerate(args):
            if arg in RECENT or arg.startswith(tuple(f"{flag}=" for flag in RECENT)):
                self.bad(f"{path}[{i}]", f"{arg} is refused: a session resumes by its exact id")
            for mark in PLACEHOLDERS:
                if mark in arg and arg != mark:
                    self.bad(f"{path}[{i}]", f"{mark} must be a whole argument")
        if not resume and LAUNCH_ARGS in args:
            self.bad(path, f"{LAUNCH_ARGS} belongs in resumeArgv only")
        if resume:
            for mark in (SESSION_ID, LAUNCH_ARGS):
                if args.count(mark) != 1:
                    self.bad(path, f"must contain {mark} exactly once, as a whole argument")
        return args

    def argument(self, value: Any, path: str) -> str | None:
        """One argument: a string without control characters (it may be empty)."""
        if not isinstance(value, str):
            self.bad(path, "must be a string")
            return None
        if len(value) > MAX_TEXT or has_control(value):
            self.bad(path, f"at most {MAX_TEXT} characters, no control characters")
            return None
        return value

    def screen_texts(self, value: Any, path: str, required: bool) -> list[str] | None:
        low, high = SCREEN_TEXT_CHARS
        texts = self.strings(value, path, lambda item, where: self.text(item, where, high))
        if texts is None:
            return None
        if required and not texts:
            self.bad(path, "must hold at least one text")
        if len(texts) > MAX_SCREEN_TEXTS:
            self.bad(path, f"at most {MAX_SCREEN_TEXTS} texts")
        if any(len(text) < low for text in texts):
            self.bad(path, f"each text has {low}-{high} characters")
        if any(not text.strip() for text in texts):
            self.bad(path, "a text of blanks only would match almost any screen")
        return texts

    def startup_input(self, value: Any, path: str) -> dict[str, Any] | None:
        """startupInput (I4.4), with its defaults filled in."""
        found = self.mapping(value, path)
        if found is None:
            return None
        self.keys(found, STARTUP_KEYS, path)
        all_of = self.screen_texts(found.get("allOf", []), f"{path}.allOf", True)
        none_of = self.screen_texts(found.get("noneOf", []), f"{path}.noneOf", False)
        stable = self.integer(
            found.get("stableMs", STABLE_MS_DEFAULT), f"{path}.stableMs", STABLE_MS
        )
        timeout = self.integer(
            found.get("timeoutMs", TIMEOUT_MS_DEFAULT), f"{path}.timeoutMs", TIMEOUT_MS
        )
        for absent in none_of or ():
            for present in all_of or ():
                if fold(absent) in fold(present):  # as the screen is matched (collab/startup.py)
                    self.bad(
                        f"{path}.noneOf",
                        f"{absent!r} is part of allOf text {present!r}: the screen could never"
                        " match",
                    )
        if stable is not None and timeout is not None and stable > timeout:
            self.bad(f"{path}.stableMs", "is longer than timeoutMs: it could never be observed")
        return {"allOf": all_of, "noneOf": none_of, "stableMs": stable, "timeoutMs": timeout}

    def profile(self, value: Any, path: str) -> dict[str, Any] | None:
        found = self.mapping(value, path)
        if found is None:
            return None
        self.keys(found, PROFILE_KEYS, path)
        for key in sorted(PROFILE_KEYS - {"startupInput"} - set(found)):
            self.bad(f"{path}.{key}", "is required")
        slug = found.get("agentSlug")
        if "agentSlug" in found and slug not in KINDS:
            self.bad(f"{path}.agentSlug", f"must be a Pebrel agent kind: {', '.join(KINDS)}")
        roots = None
        if "cwdRoots" in found:
            roots = self.strings(found["cwdRoots"], f"{path}.cwdRoots", self.absolute)
            if roots is not None and not roots:
                self.bad(f"{path}.cwdRoots", "must hold at least one absolute path")
            if roots is not None and len(roots) > MAX_ROOTS:
                self.bad(f"{path}.cwdRoots", f"at most {MAX_ROOTS} paths")
        out: dict[str, Any] = {
            "id": self.name(found.get("id"), f"{path}.id") if "id" in found else None,
            "agentSlug": slug,
            "executable": (
                self.absolute(found["executable"], f"{path}.executable")
                if "executable" in found
                else None
            ),
            "argv": (
                self.template(found["argv"], f"{path}.argv", False) if "argv" in found else None
            ),
            "cwdRoots": roots,
            "resumeArgv": (
                self.template(found["resumeArgv"], f"{path}.resumeArgv", True)
                if "resumeArgv" in found
                else None
            ),
        }
        if "startupInput" in found:
            out["startupInput"] = self.startup_input(found["startupInput"], f"{path}.startupInput")
        return out

    def profiles(self, value: Any) -> list[dict[str, Any]]:
        if not isinstance(value, list):
            self.bad("launchProfiles", "must be a JSON array (it may be empty)")
            return []
        if len(value) > MAX_PROFILES:
            self.bad("launchProfiles", f"at most {MAX_PROFILES} profiles")
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for i, item in enumerate(value):
            found = self.profile(item, f"launchProfiles[{i}]")
            if found is None:
                continue
            profile_id = found["id"]
            if profile_id is not None and profile_id in seen:
                self.bad(f"launchProfiles[{i}].id", f"profile id {profile_id!r} is given twice")
            if profile_id is not None:
                seen.add(profile_id)
            out.append(found)
        return out


def check(policy: Any) -> dict[str, Any]:
    """The policy, normalised; INVALID_POLICY naming every problem otherwise."""
    c = Checker()
    found = c.mapping(policy, "policy")
    if found is None:
        raise CollabError(
            CollabCode.INVALID_POLICY, "the policy must be a JSON object", {"field": "policy"}
        )
    c.keys(found, POLICY_KEYS, "")
    for key in ("id", "groupId", "permissions", "launchProfiles"):
        if key not in found:
            c.bad(key, "is required")
    out = {
        "id": c.name(found["id"], "id") if "id" in found else None,
        "groupId": c.text(found["groupId"], "groupId", 256) if "groupId" in found else None,
        "permissions": c.permissions(found["permissions"]) if "permissions" in found else None,
        "launchProfiles": c.profiles(found["launchProfiles"]) if "launchProfiles" in found else [],
        "maxSessions": (
            c.integer(found["maxSessions"], "maxSessions", MAX_SESSIONS)
            if "maxSessions" in found
            else MAX_SESSIONS_DEFAULT
        ),
    }
    if c.problems:
        first = c.problems[0]
        more = f" (and {len(c.problems) - 1} more)" if len(c.problems) > 1 else ""
        raise CollabError(
            CollabCode.INVALID_POLICY,
            f"{first['field']}: {first['message']}{more}",
            {"field": first["field"], "problems": c.problems},
        )
    return out


def public_profile(profile: Mapping[str, Any]) -> dict[str, Any]:
    """What a principal and the admin see of a launch profile (I1.7): never its executable,
    argv or resume template."""
    return {
        "id": profile["id"],
        "agent_slug": profile["agentSlug"],
        "cwd_roots": list(profile["cwdRoots"]),
        "startup_input_condition": profile.get("startupInput") is not None,
    }
