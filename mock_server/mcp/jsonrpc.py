"""JSON-RPC errors the server answers itself, before the SDK reads a message (no SDK here: the admin plane and
stdio use it, whether the `mcp` extra is there or not)."""

from __future__ import annotations

import json
from typing import Any

PARSE_ERROR = -32700  # not JSON
INVALID_REQUEST = -32600  # JSON, but no JSON-RPC message
INTERNAL_ERROR = -32603  # the SDK's code for a session refused at its bound: one code for one refusal


def error_message(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error answering no request it could name (`id` null)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": None, "error": error}


def error_bytes(code: int, message: str, data: Any = None) -> bytes:
    return json.dumps(error_message(code, message, data), separators=(",", ":")).encode("utf-8")


def invalid_id(message: Any) -> bool:
    """Whether `message` (one parsed JSON-RPC message, or a batch) has an `id` no request may carry: JSON-RPC
    and MCP allow a string or an integer. The SDK reads a message whose id is an object as a notification (202,
    never answered): the client waits for an answer that never comes."""
    if isinstance(message, list):
        return any(invalid_id(item) for item in message)
    if not isinstance(message, dict) or "id" not in message:
        return False
    value = message["id"]
    return value is not None and (isinstance(value, bool) or not isinstance(value, str | int))


def is_opening(message: Any) -> bool:
    """Whether `message` is an `initialize` request: the one message that opens a session."""
    return isinstance(message, dict) and message.get("method") == "initialize" and "id" in message
