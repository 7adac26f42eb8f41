"""The mock as an HTTP client of a real service (verify-provider's target, shadow mode's backend): one way to
build its httpx client, with TLS, mutual TLS, extra headers and a timeout, and to read what it answered."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mock_server.domain.answers import Answer, Noise, differences, pointer, rules_for
from mock_server.spec.openapi import Spec
from mock_server.wire.decoding import decode_json_text

if TYPE_CHECKING:
    import httpx  # imported where a client is built: a server that calls out to none never loads it

# Not forwarded to a backend: they describe one connection (RFC 9110 7.6.1), or are the mock's own.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "x-mock-session",
    }
)


@dataclass(frozen=True)
class Outbound:
    """Where and how the mock reaches a real service."""

    base_url: str
    headers: tuple[tuple[str, str], ...] = ()  # sent with every call, e.g. ("Authorization", "Bearer ...")
    cert: Path | None = None  # a client certificate (PEM), for mutual TLS; `key` is its private key
    key: Path | None = None
    cacert: Path | None = None  # the CA that signed the service's certificate (default: the system's)
    timeout: float = 10.0  # seconds, for each of connecting, sending and reading


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` -> (name, value); ValueError when it is not a header line."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c in name for c in " \t\r\n") or any(c in value for c in "\r\n"):
        raise ValueError(f"{text!r} is not a header: write it as 'Name: value'")
    return name, value.strip()


def tls_context(outbound: Outbound) -> ssl.SSLContext | bool:
    """The TLS setup for https URLs: the given CA (else the system's), and the client certificate when given.
    Raises OSError / ssl.SSLError when a file cannot be read or does not hold what it should."""
    if outbound.cacert is None and outbound.cert is None:
        return True
    context = ssl.create_default_context(cafile=str(outbound.cacert) if outbound.cacert else None)
    if outbound.cert is not None:
        context.load_cert_chain(str(outbound.cert), str(outbound.key) if outbound.key else None)
    return context


def async_client(
    outbound: Outbound, max_connections: int = 16, verify: ssl.SSLContext | bool | None = None
) -> httpx.AsyncClient:
    """A client of the service (`verify`: a TLS setup made before by tls_context, else made now)."""
    import httpx

    return httpx.AsyncClient(
        base_url=outbound.base_url,
        headers=list(outbound.headers),
        verify=tls_context(outbound) if verify is None else verify,
        timeout=outbound.timeout,
        follow_redirects=False,
        trust_env=False,  # a proxy from the environment would put another server between the two
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
    )


def decoded(response: httpx.Response) -> Any:
    """A response's body as the comparison reads it: JSON with exact decimals, else its text; None when empty."""
    if not response.content:
        return None
    text = response.content.decode("utf-8", "replace")
    try:
        return decode_json_text(text)
    except ValueError:
        return text


def answer_of(response: httpx.Response) -> Answer:
    return Answer(response.status_code, decoded(response))


def forwarded_headers(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The request's headers a backend gets: all but hop-by-hop ones and the mock's own."""
    return [(name, value) for name, value in headers if name.lower() not in HOP_BY_HOP]


def answer_differences(
    spec: Spec, operation_id: str, expected: Answer, actual: Answer, noise: Noise | None = None
) -> list[str]:
    """How a real service's answer (`actual`) departs from the mock's (`expected`) to one call of `operation_id`:
    domain/answers' rules, and what the spec finds wrong with `actual` (an undocumented status, a body off its
    schema)."""
    problems: list[tuple[str, str]] = []
    if actual.status is not None:
        found = spec.operations[operation_id].response_problems(actual.status, actual.body, actual.body is not None)
        if found is None:
            problems.append(("", f"status {actual.status} is not documented for {operation_id}"))
        else:
            problems += [(pointer(d.path), d.message) for d in found]
    return differences(expected, actual, rules_for(operation_id, noise), problems)
