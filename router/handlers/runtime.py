"""runtime.describe and runtime.snapshot (R2.4-R2.6)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pebrel import PROTOCOL, PROTOCOL_VERSION, SUPPORTED_VERSIONS, __version__
from pebrel.envcontract import describe_env
from pebrel.envelope import EncodedResult
from pebrel.method_params import NoParams
from pebrel.router.handlers import Method, Result
from pebrel.router.runtime import Runtime
from pebrel.schema import method_names

FEATURES = (
    "env.pane_identity",
    "env.window_identity",
    "cli.resource_verbs",
    "pane.wait.after_seq",
    "pane.read.logical_lines",
    "pane.run.osc133",
    "shell.integration.bash",
    "shell.integration.zsh",
    "shell.integration.fish",
    "ssh_panes",
    "ssh_panes.integration.bash",
)
NOT_SUPPORTED = ("windows_host",)


async def describe(rt: Runtime, params: NoParams) -> Result:
    return {
        "app": "pebrel",
        "version": __version__,
        "protocol": PROTOCOL,
        "protocol_version": PROTOCOL_VERSION,
        "supported_versions": list(SUPPORTED_VERSIONS),
        "runtime_id": rt.state.runtime_id,
        "pid": os.getpid(),
        "capabilities": method_names(),
        "features": list(FEATURES),
        "env": describe_env(),
        "data_dir": str(rt.data_dir),
        "not_supported": list(NOT_SUPPORTED),
    }


async def snapshot(rt: Runtime, params: NoParams) -> EncodedResult:
    return EncodedResult(rt.state.snapshot_json(), reusable=True)  # until the next revision


METHODS: Mapping[str, Method] = {"runtime.describe": describe, "runtime.snapshot": snapshot}
