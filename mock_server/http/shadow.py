"""Shadow mode (`mock-server --shadow URL`): a public call is forwarded to the real backend and answered with the
backend's answer, while the mock answers the same call in the same session; where the two differ, the session
journals a divergence. Ids the backend generates are mapped to the mock's, so later calls naming them compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from mock_server.domain.answers import Answer, generated_id
from mock_server.http.outbound import (
    Outbound,
    answer_differences,
    async_client,
    decoded,
    forwarded_headers,
    tls_context,
)
from mock_server.spec.openapi import Spec
from mock_server.wire.decoding import decode_json_text
from mock_server.wire.encoding import encode_json

# Path parameters that name an id the backend generated (a recipient's): read as the mock's own id.
MAPPED_PATH_PARAMETERS = ("recipient_id",)
# The backend's response headers the client gets besides its body and Content-Type.
PASSED_HEADERS = ("location", "allow", "retry-after", "www-authenticate", "cache-control")


@dataclass(frozen=True)
class BackendReply:
    """What the backend answered: as compared, and as sent on to the client."""

    answer: Answer
    content: bytes = b""
    media_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


class Shadow:
    def __init__(self, outbound: Outbound, spec: Spec) -> None:
        self.outbound = outbound
        self.spec = spec
        tls = tls_context(outbound)  # read once: loading certificates is the costly part of a client
        # `True` would have httpx load its CA bundle again for each call's client (0.2 s a call on a busy machine).
        self._tls = httpx.create_ssl_context(trust_env=False) if tls is True else tls

    @property
    def backend(self) -> str:
        return self.outbound.base_url

    async def forward(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> BackendReply:
        """The call sent on to the backend (`target`: the path and query as received). A client per call: its
        connection is closed with the call, whatever event loop the server (or a test client) runs."""
        try:
            async with async_client(self.outbound, verify=self._tls) as client:
                response = await client.request(
                    method, target, headers=forwarded_headers(headers), content=body or None
                )
        except httpx.HTTPError as exc:
            return BackendReply(Answer(None, error=f"{type(exc).__name__}: {exc}".rstrip(": ")))
        passed = tuple((name, response.headers[name]) for name in PASSED_HEADERS if name in response.headers)
        return BackendReply(
            Answer(response.status_code, decoded(response)),
            response.content,
            response.headers.get("content-type"),
            passed,
        )

    def compare(self, operation_id: str, mine: Answer, theirs: Answer) -> list[str]:
        """verify-provider's rules: the mock's answer as expected, the backend's as got."""
        return answer_differences(self.spec, operation_id, mine, theirs)


def mock_answer(status: int, body: Any) -> Answer:
    """The mock's reply as the client would have read it (through JSON: exact decimals become numbers)."""
    return Answer(status, None if body is None else decode_json_text(encode_json(body).decode()))


def id_pair(operation_id: str, mine: Answer, theirs: Answer) -> tuple[str, str] | None:
    """(the backend's id, the mock's) for a later call to name, when both sides generated one."""
    ours, backends = generated_id(operation_id, mine), generated_id(operation_id, theirs)
    return (backends, ours) if ours is not None and backends is not None else None
