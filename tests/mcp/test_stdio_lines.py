"""stdio's reading (mcp/stdio.py): a line bounded, and every line that is no message answered with a JSON-RPC
error instead of dropped. The process itself: tests/mcp/test_stdio.py (e2e)."""

from __future__ import annotations

import io
import json

import anyio
import pytest


def test_a_line_past_the_bound_is_read_to_its_end_and_refused_and_the_next_one_read() -> None:
    from mock_server.mcp.stdio import BoundedLines

    lines = BoundedLines(io.BytesIO(b"x" * 100 + b"\n" + b'{"a": 1}\n'), limit=10)

    async def read() -> list[str]:
        return [line async for line in lines]

    got = anyio.run(read)
    assert got == ["\0\n", '{"a": 1}\n']
    assert lines.refused == (-32700, "Parse error: a line longer than 10 bytes")


def test_a_message_whose_id_is_an_object_is_refused_as_an_invalid_request() -> None:
    from mock_server.mcp.stdio import BoundedLines

    lines = BoundedLines(io.BytesIO(b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}\n'))

    async def read() -> list[str]:
        return [line async for line in lines]

    assert anyio.run(read) == ["\0\n"]
    assert lines.refused == (-32600, "Invalid Request: an id is a string or an integer")


@pytest.mark.parametrize(
    ("line", "code"),
    [("{not json", -32700), ('{"jsonrpc": "2.0", "id": 1}', -32600), ("[]", -32600)],
)
def test_a_line_that_is_no_message_is_answered_with_an_error_of_id_null(line: str, code: int) -> None:
    import mcp_types
    from pydantic import ValidationError

    from mock_server.mcp.stdio import refusal

    with pytest.raises(ValidationError) as failure:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    answer = json.loads(refusal(failure.value, None).message.model_dump_json(by_alias=True, exclude_unset=True))
    assert answer["id"] is None and answer["error"]["code"] == code
