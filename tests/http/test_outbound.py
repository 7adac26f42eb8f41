"""http/outbound's reading of a service's answer, and http/failures' words for a call that got none: pure rules,
tested without a network (the HTTP tests are tests/http/test_shadow.py and tests/provider)."""

from __future__ import annotations

import asyncio
import gzip
import ssl
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest

from mock_server.http.failures import describe
from mock_server.http.outbound import MAX_BODY_BYTES, UnusableAnswer, decoded, read_body, size_words


class Pieces(httpx.AsyncByteStream):
    def __init__(self, content: bytes, chunk: int) -> None:
        self.pieces = [content[i : i + chunk] for i in range(0, len(content), chunk)]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def response(content: bytes, encoding: str | None = None, chunk: int = 1000) -> httpx.Response:
    """A response whose body arrives in `chunk`-byte pieces, as a network would hand it."""
    headers = {"content-encoding": encoding} if encoding else {}
    return httpx.Response(200, headers=headers, stream=Pieces(content, chunk))


def read(answer: httpx.Response, limit: int = MAX_BODY_BYTES, flag: str = "--max-body") -> bytes:
    return asyncio.run(read_body(answer, limit, flag))


DOCUMENT = b'{"status": "paid", "total_paid_amount": 1500.25}' * 100


@pytest.mark.parametrize(
    ("encoded", "encoding"),
    [
        (DOCUMENT, None),
        (gzip.compress(DOCUMENT, mtime=0), "gzip"),
        (zlib.compress(DOCUMENT), "deflate"),
        (zlib.compress(DOCUMENT)[2:-4], "deflate"),  # raw deflate, as some servers send it
        (gzip.compress(gzip.compress(DOCUMENT, mtime=0), mtime=0), "gzip, gzip"),
        (DOCUMENT, "identity"),
    ],
)
def test_an_answer_is_read_decompressed(encoded: bytes, encoding: str | None) -> None:
    assert read(response(encoded, encoding)) == DOCUMENT


def test_a_body_one_byte_over_the_bound_is_refused_and_one_at_it_is_read() -> None:
    assert read(response(b"x" * 4096), 4096) == b"x" * 4096
    with pytest.raises(UnusableAnswer, match="its body is larger than --max-body 4 KiB"):
        read(response(b"x" * 4097), 4096)


def test_a_gzip_bomb_is_refused_without_being_inflated_whole() -> None:
    bomb = gzip.compress(b"\0" * (64 * 1024 * 1024))  # 64 MiB of zeros in ~64 KB
    with pytest.raises(UnusableAnswer, match="larger than --shadow-max-body 1 MiB"):
        read(response(bomb, "gzip", chunk=len(bomb)), 1024 * 1024, "--shadow-max-body")


@pytest.mark.parametrize(
    ("encoded", "encoding", "message"),
    [
        (b"not gzip", "gzip", "its gzip body does not decompress"),
        (gzip.compress(DOCUMENT, mtime=0)[:-20], "gzip", "its gzip body ends before its end"),
        (DOCUMENT, "br", "its Content-Encoding 'br' is not one the mock asked for"),
    ],
)
def test_a_body_that_does_not_decode_is_unusable(encoded: bytes, encoding: str, message: str) -> None:
    with pytest.raises(UnusableAnswer, match=message):
        read(response(encoded, encoding))


def test_a_body_is_json_as_the_api_reads_it_else_text() -> None:
    assert decoded(b'{"amount": 1500.25}') == {"amount": 1500.25}
    assert decoded(b"") is None
    assert decoded(b"<html>") == "<html>"
    assert decoded(b"[" * 100_000 + b"]" * 100_000) == "[" * 100_000 + "]" * 100_000  # no RecursionError
    assert decoded(b'{"a": NaN}') == '{"a": NaN}'
    big = decoded(b'["' + b"a" * 300_000 + b'"]')
    assert isinstance(big, str) and big.endswith("[truncated: 300004 bytes in all]")


def test_sizes_are_written_as_the_flags_take_them() -> None:
    assert [size_words(n) for n in (8 * 1024**2, 512 * 1024, 3000)] == ["8 MiB", "512 KiB", "3000 bytes"]


def alert(reason: str) -> ssl.SSLError:
    error = ssl.SSLError(1, f"[SSL: {reason}] ...")
    error.reason = reason
    return error


def wrapped(cause: BaseException) -> httpx.ConnectError:
    """As httpx raises it: its error over httpcore's over the socket's or TLS's."""
    try:
        try:
            raise cause
        except BaseException as inner:
            raise httpx.ConnectError("wrapped") from inner
    except httpx.ConnectError as outer:
        return outer


@pytest.mark.parametrize(
    ("error", "flags", "words"),
    [
        (alert("TLSV13_ALERT_CERTIFICATE_REQUIRED"), "--",
         "TLSV13_ALERT_CERTIFICATE_REQUIRED: the server requires a client certificate (--cert and --key)"),
        (wrapped(alert("SSLV3_ALERT_CERTIFICATE_EXPIRED")), "--shadow-",
         "SSLV3_ALERT_CERTIFICATE_EXPIRED: the server refused the client certificate (--shadow-cert): it has expired"),
        (alert("WRONG_VERSION_NUMBER"), "--", "WRONG_VERSION_NUMBER: the server speaks plain HTTP, not https"),
        (wrapped(ConnectionRefusedError(111, "refused")), "--", "connection refused (nothing listens there)"),
        (ConnectionResetError(104, "reset"), "--", "the server reset the connection"),
        (httpx.ReadTimeout("timed out"), "--", "no answer within the timeout"),
        (httpx.RemoteProtocolError("Server disconnected without sending a response."), "--",
         "the server closed the connection without answering"),
        (httpx.RemoteProtocolError("peer closed connection without sending complete message body: incomplete "
                                   "chunked read"), "--",
         "the server closed the connection before the end of its answer (incomplete chunked read)"),
        (httpx.RemoteProtocolError("Receive buffer too long"), "--",
         "its head (status line and headers) is larger than 100 KiB"),
        (httpx.RemoteProtocolError("illegal status line: bytearray(b'SSH-2.0')"), "--",
         "it is not an HTTP/1.1 answer: illegal status line: bytearray(b'SSH-2.0')"),
    ],
)  # fmt: skip
def test_a_failed_call_is_one_line_naming_the_option_to_fix(error: BaseException, flags: str, words: str) -> None:
    assert describe(error, flags) == words
