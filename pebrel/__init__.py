"""Pebrel: a headless terminal runtime driven through a versioned JSON Lines control API.

This package is the shared core. It must stay light: the CLI imports it on every call, so it
never imports zmq, msgpack, pyte, psutil or importlib.metadata at module level.
"""

from __future__ import annotations

__version__ = "0.1.0"
PROTOCOL = "nebula.runtime"
PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = (1,)
