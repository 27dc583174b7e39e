"""Principals in a collab World (#17): policies, creating them as the user, calling as them."""

from __future__ import annotations

from typing import Any

from pebrel.collab import policy
from pebrel.integration_wire import token_hash
from tests.unit.collab_world import USER, World

ALL = list(policy.PERMISSIONS)


def as_principal(principal_id: str) -> dict[str, Any]:
    """The caller the integration server stamps on a principal's request."""
    return {"kind": "principal", "principal_id": principal_id}


def profile(profile_id: str = "agent", **changes: Any) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": profile_id,
        "agentSlug": "claude",
        "executable": "/opt/wrappers/agent",
        "argv": ["--model", "x", "-C", "{cwd}"],
        "cwdRoots": ["/srv/runs"],
        "resumeArgv": ["--resume", "{sessionId}", "{launchArgs}"],
    }
    found.update(changes)
    return found


def a_policy(
    principal_id: str,
    group_id: str,
    permissions: list[str] | None = None,
    profiles: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "id": principal_id,
        "groupId": group_id,
        "permissions": ALL if permissions is None else permissions,
        "launchProfiles": [profile()] if profiles is None else profiles,
    }


def create(
    world: World,
    principal_id: str,
    group_id: str,
    permissions: list[str] | None = None,
    profiles: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Create a principal as the user; its record."""
    found: dict[str, Any] = world.call(
        "collab.integration.create",
        USER,
        policy=a_policy(principal_id, group_id, permissions, profiles),
        token_sha256=token_hash(f"token-of-{principal_id}"),
    )["principal"]
    return found
