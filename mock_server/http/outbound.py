"""The mock as an HTTP client of a real service (verify-provider's target, shadow mode's backend): one way to
build its httpx client, with TLS, mutual TLS, extra headers and a timeout, and to read what it answered."""

from __future__ import annotations

import functools
import ssl
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import Cookie, CookieJar
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from mock_server.domain.answers import Answer, Noise, differences, pointer, rules_for
from mock_server.domain.errors import ApiError
from mock_server.http.failures import describe
from mock_server.spec.openapi import Spec
from mock_server.wire.decoding import parse_json
from mock_server.wire.excerpt import excerpt

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
        "accept-encoding",  # the mock's own (ACCEPTED_ENCODINGS): it reads the answer before the client does
    }
)


MAX_BODY_BYTES = 8 * 1024 * 1024  # of a service's answer, decompressed, unless a flag says otherwise
# The content codings the mock asks for and reads (bounded: see _Inflater); a client's own Accept-Encoding is not
# forwarded, so a backend never answers in a coding the mock cannot read for a client that could.
ACCEPTED_ENCODINGS = "gzip, deflate"
COMPARED_BODY_BYTES = 256 * 1024  # of an answer compared field by field; a larger one is compared as text
EXCERPT_BYTES = 32 * 1024  # of a body over COMPARED_BODY_BYTES kept as its text (within what a divergence keeps)
_PIECE = 64 * 1024  # bytes one step of decompression may produce: a gzip bomb grows in steps this size
_MAX_CODINGS = 4  # content codings applied one over the other (`gzip, gzip`): more is no honest answer


@dataclass(frozen=True)
class Outbound:
    """Where and how the mock reaches a real service."""

    base_url: str
    headers: tuple[tuple[str, str], ...] = ()  # sent with every call, e.g. ("Authorization", "Bearer ...")
    cert: Path | None = None  # a client certificate (PEM), for mutual TLS; `key` is its private key
    key: Path | None = None
    cacert: Path | None = None  # the CA that signed the service's certificate (default: the system's)
    timeout: float = 10.0  # seconds for a whole call: connecting, sending, and reading the whole answer
    max_body: int = MAX_BODY_BYTES  # bytes of an answer read, decompressed; a larger one is no usable answer
    flags: str = "--"  # how the command's options for these start (`--shadow-`): named in what goes wrong


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` -> (name, value); ValueError when it is not a header line."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c in name for c in " \t\r\n") or any(c in value for c in "\r\n"):
        raise ValueError(f"{text!r} is not a header: write it as 'Name: value'")
    try:
        name.encode("ascii")
        value.encode("latin-1")  # what HTTP/1.1 carries: httpx refused anything else at every call (a 500 each)
    except UnicodeEncodeError:
        raise ValueError(f"{text!r} is not a header: its name must be ASCII, its value Latin-1") from None
    return name, value.strip()


def header_option(text: str) -> tuple[str, str]:
    """`parse_header` as an argparse `type` (the `--shadow-header`, `--target-header` and verify-provider's `--header`
    options): a line that is no header is a usage error that names it."""
    import argparse  # here: the server's hot modules import this one, the CLI alone needs argparse

    try:
        return parse_header(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class TlsFileError(ValueError):
    """A TLS file that cannot be used: the message names its flag and its path."""


def _file_problem(path: Path) -> str | None:
    if not path.exists():
        return "no such file"
    if not path.is_file():
        return "not a file"
    return None


def tls_context(outbound: Outbound) -> ssl.SSLContext | bool:
    """The TLS setup for https URLs: the given CA (else the system's), and the client certificate when given.
    Raises TlsFileError, naming the flag and the file, when a file is missing or does not hold what it should."""
    if outbound.cacert is None and outbound.cert is None:
        return True
    named = (("cacert", outbound.cacert), ("cert", outbound.cert), ("key", outbound.key))
    for flag, path in named:
        problem = None if path is None else _file_problem(path)
        if problem is not None:
            raise TlsFileError(f"{outbound.flags}{flag} {path}: {problem}")
    try:
        context = ssl.create_default_context(cafile=str(outbound.cacert) if outbound.cacert else None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsFileError(f"{outbound.flags}cacert {outbound.cacert}: no CA certificate (PEM) in it: {exc}") from None
    if outbound.cert is not None:
        try:
            context.load_cert_chain(str(outbound.cert), str(outbound.key) if outbound.key else None)
        except (OSError, ssl.SSLError) as exc:
            files = f"{outbound.flags}cert {outbound.cert}"
            if outbound.key is not None:
                files += f" with {outbound.flags}key {outbound.key}"
            raise TlsFileError(f"{files}: not a certificate and its private key (PEM): {exc}") from None
    return context


@functools.cache
def default_verification() -> ssl.SSLContext:
    """httpx's own TLS setup (certifi's CA bundle), made once a process and shared by every client: `verify=True`
    had httpx load the bundle again for each client, 0.16 s each, for http:// services too."""
    import httpx

    return httpx.create_ssl_context(trust_env=False)


class _NoCookies(CookieJar):
    """A cookie jar that keeps nothing: a client kept for many callers' calls must not hand one caller's cookies
    (a backend's Set-Cookie) to the next."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        pass

    def set_cookie(self, cookie: Cookie) -> None:
        pass


def async_client(
    outbound: Outbound,
    max_connections: int | None = 16,
    verify: ssl.SSLContext | bool | None = None,
    *,
    kept_alive: int | None = None,
    idle_seconds: float = 5.0,
    cookies: bool = True,
) -> httpx.AsyncClient:
    """A client of the service (`verify`: a TLS setup made before by tls_context, else made now). Its own
    timeouts bound each step; `exchange` bounds the whole call. At most `max_connections` at once (None: no
    bound), of which `kept_alive` (None: as many) are kept open between calls, each for at most `idle_seconds`.
    `cookies=False`: no cookie the service sets is kept for a later call."""
    import httpx

    verify = tls_context(outbound) if verify is None else verify
    return httpx.AsyncClient(
        base_url=outbound.base_url,
        headers=[("Accept-Encoding", ACCEPTED_ENCODINGS), *outbound.headers],
        cookies=None if cookies else _NoCookies(),
        verify=default_verification() if verify is True else verify,
        timeout=outbound.timeout,
        follow_redirects=False,
        trust_env=False,  # a proxy from the environment would put another server between the two
        limits=httpx.Limits(
            max_connections=max_connections,
            max_keepalive_connections=max_connections if kept_alive is None else kept_alive,
            keepalive_expiry=idle_seconds,
        ),
    )


def size_words(size: int) -> str:
    """`8 MiB`, `512 KiB`, `3000 bytes`: a bound as the flags write it."""
    for unit, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} bytes"


class UnusableAnswer(Exception):
    """The service answered, but not with a body the mock can use: larger than the bound, or not decodable."""


class _Inflater:
    """One content coding (gzip or deflate) undone in pieces of at most _PIECE bytes: what a compressed chunk
    expands to is counted as it grows, never held whole first (a 200 KB gzip bomb is 200 MB)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        gzip = coding in ("gzip", "x-gzip")
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        self._raw_deflate_tried = gzip  # "deflate" is zlib's format, but some servers send raw deflate
        self._fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data and not self._inflate.eof:
            try:
                piece = self._inflate.decompress(data, _PIECE)
            except zlib.error as exc:
                if self._fed or self._raw_deflate_tried:
                    raise UnusableAnswer(f"its {self.coding} body does not decompress: {exc}") from None
                self._raw_deflate_tried = True
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._fed = True
            data = self._inflate.unconsumed_tail
            if piece:
                yield piece

    def end(self) -> None:
        if self._fed and not self._inflate.eof:
            raise UnusableAnswer(f"its {self.coding} body ends before its end")


def _inflaters(content_encoding: str) -> list[_Inflater]:
    """What undoes the codings named, the last applied first; UnusableAnswer for a coding the mock did not ask."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
    if unknown or len(codings) > _MAX_CODINGS:
        raise UnusableAnswer(f"its Content-Encoding {content_encoding!r} is not one the mock asked for")
    return [_Inflater(coding) for coding in reversed(codings)]


def _through(inflaters: list[_Inflater], chunk: bytes) -> Iterator[bytes]:
    if not inflaters:
        yield chunk
        return
    for piece in inflaters[0].feed(chunk):
        yield from _through(inflaters[1:], piece)


async def read_body(response: httpx.Response, limit: int, flag: str = "--max-body") -> bytes:
    """The answer's body, decompressed, read as it arrives and no further than `limit` bytes (UnusableAnswer
    beyond, naming `flag`): a larger answer, an endless chunked one or a compression bomb costs at most `limit`
    bytes."""
    too_large = f"its body is larger than {flag} {size_words(limit)}"
    declared = response.headers.get("content-length", "")
    inflaters = _inflaters(response.headers.get("content-encoding", ""))
    if not inflaters and declared.isdigit() and int(declared) > limit:
        raise UnusableAnswer(f"{too_large} (Content-Length {declared})")
    body = bytearray()
    async for chunk in response.aiter_raw(_PIECE):
        for piece in _through(inflaters, chunk):
            body += piece
            if len(body) > limit:
                raise UnusableAnswer(too_large)
    for inflater in inflaters:
        inflater.end()
    return bytes(body)


@dataclass(frozen=True)
class Received:
    """A whole answer, read within the bounds."""

    status: int
    headers: httpx.Headers
    content: bytes  # decompressed


async def exchange(
    client: httpx.AsyncClient,
    outbound: Outbound,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]] | Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> Received:
    """One call, bounded in time as a whole (`outbound.timeout`: a server dripping its answer a byte at a time
    does not reset it) and in bytes (`outbound.max_body`). Raises TimeoutError, UnusableAnswer, or what the
    connection raised (httpx.HTTPError, ssl.SSLError, OSError)."""
    with anyio.fail_after(outbound.timeout):
        request = client.build_request(method, url, headers=headers, content=content)
        response = await client.send(request, stream=True)
        try:
            body = await read_body(response, outbound.max_body, f"{outbound.flags}max-body")
        finally:
            await response.aclose()
    return Received(response.status_code, response.headers, body)


def no_answer(exc: BaseException, outbound: Outbound) -> str:
    """Why a call got no usable answer, in one line (the words of `healthcheck`), naming the flag to change."""
    if isinstance(exc, UnusableAnswer):
        return f"an answer that cannot be used: {exc}"
    import httpx

    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"no whole answer within {outbound.flags}timeout {outbound.timeout:g} s"
    return describe(exc, outbound.flags)


# What a call to a service can raise besides a bug: the connection's errors (a TLS alert read from anyio's stream
# is an ssl.SSLError that httpx does not wrap), the deadline (TimeoutError, an OSError), an unusable answer.
def call_failures() -> tuple[type[BaseException], ...]:
    """What a call to another service raises when it got no usable answer (for `except call_failures()`): httpx is
    imported here, when the first call fails, not at start-up."""
    import httpx

    return (httpx.HTTPError, ssl.SSLError, OSError, UnusableAnswer)


def decoded(content: bytes) -> Any:
    """A body as the comparison reads it: JSON as the API reads it (exact numbers, no NaN, at most MAX_DEPTH
    levels deep), else its text; None when empty. A 100,000-deep answer is text, never a RecursionError. A body
    over COMPARED_BODY_BYTES is the excerpt of its text: no answer of the interface is near that size, and
    comparing 8 MiB field by field held the event loop for seconds."""
    if not content:
        return None
    if len(content) > COMPARED_BODY_BYTES:
        return excerpt(content.decode("utf-8", "replace"), EXCERPT_BYTES)[0]
    try:
        return parse_json(content, "application/json")
    except ApiError:
        return content.decode("utf-8", "replace")


def forwarded_headers(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The request's headers a backend gets: all but hop-by-hop ones, those the request's `Connection` names as
    its connection's own (RFC 9110 7.6.1), and the mock's own."""
    named = {
        option.strip().lower() for name, value in headers if name.lower() == "connection" for option in value.split(",")
    }
    return [(name, value) for name, value in headers if name.lower() not in HOP_BY_HOP and name.lower() not in named]


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
