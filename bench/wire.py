"""Raw runtime requests for the phases that need many connections at once (concurrent exec,
event fan-out, exec under load): the JSON line of one request, and one request sent on its
own new connection with its answer, or what went wrong instead."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any


def _request(token: str, request_id: int, method: str, params: dict[str, Any]) -> bytes:
    body = {
        "protocol": "nebula.runtime",
        "version": 1,
        "id": request_id,
        "token": token,
        "method": method,
        "params": params,
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


async def one_request(
    port: int,
    token: str,
    request_id: int,
    method: str,
    params: dict[str, Any],
    timeout_s: float | None = None,
) -> dict[str, Any] | str:
    """One request on its own new connection: the answer, or what went wrong instead."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        return f"connect: {exc}"
    try:
        writer.write(_request(token, request_id, method, params))
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout_s)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except OSError as exc:
        return f"connection: {exc}"
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    if not line:
        return "connection closed without an answer"
    response: dict[str, Any] = json.loads(line)
    return response
