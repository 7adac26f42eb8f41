"""mock_server.wire.decoding: which media types are JSON, how a raw body becomes a JSON value or a contract error."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

from mock_server.domain.errors import ApiError, MalformedJson, UnsupportedMediaType
from mock_server.wire import decoding
from mock_server.wire.decoding import decode_json_text, is_json_media_type, parse_json

JSON = "application/json"


def nested_lists(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "APPLICATION/JSON",
        " application/json ",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        'application/json; charset="utf-8"',
        "application/json; charset=utf8",
        "application/json; boundary=x",
        "application/json; charset=utf-8; foo=bar",
    ],
)
def test_json_media_types(content_type: str) -> None:
    assert is_json_media_type(content_type) is True


@pytest.mark.parametrize(
    "content_type",
    [
        "",
        "text/plain",
        "text/json",
        "application/jsonx",
        "application/json-patch+json",
        "application/problem+json",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/json; charset=iso-8859-1",
        "application/json; charset=utf-16",
        "application/json; charset=",
        "application/json; charset=utf-8; charset=latin-1",
        "json",
    ],
)
def test_other_media_types(content_type: str) -> None:
    assert is_json_media_type(content_type) is False


# --- parse_json: values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a": 1}', {"a": 1}),
        (b"null", None),
        (b"1", 1),
        (b"true", True),
        (b"[]", []),
        (b'"x"', "x"),
        (b" \n\t{}\r\n ", {}),
        (b'{"amount": 100.0}', {"amount": 100.0}),
        (b'{"n": 1e308}', {"n": 1e308}),
        (b'{"n": -0.0}', {"n": -0.0}),
        (b'{"n": 1e-400}', {"n": 0.0}),
        (b'{"n": ' + b"9" * 4300 + b"}", {"n": int("9" * 4300)}),
        (b'{"name": "Jo\\u00e3o"}', {"name": "João"}),
        ('{"name": "João"}'.encode(), {"name": "João"}),
        (b'{"emoji": "\\ud83d\\ude00"}', {"emoji": "\U0001f600"}),
        (b'{"emoji": "\\uD83D\\uDE00"}', {"emoji": "\U0001f600"}),
        (b'{"text": "\\\\ud800"}', {"text": "\\ud800"}),
        (b'{"a": 1, "a": 2}', {"a": 2}),
        (b"[" * 100 + b"]" * 100, nested_lists(100)),  # MAX_DEPTH: the most a body may nest
    ],
    ids=[
        "object",
        "null",
        "integer",
        "true",
        "empty-array",
        "string",
        "surrounding-whitespace",
        "integral-float",
        "large-double",
        "negative-zero",
        "underflow-to-zero",
        "integer-of-4300-digits",
        "escaped-non-ascii",
        "raw-utf8",
        "surrogate-pair",
        "surrogate-pair-upper-hex",
        "escaped-backslash-then-u",
        "duplicate-key-last-wins",
        "moderate-nesting",
    ],
)
def test_acceptable_json(raw: bytes, expected: Any) -> None:
    assert parse_json(raw, JSON) == expected


def test_the_content_type_may_carry_parameters() -> None:
    assert parse_json(b"{}", "application/json; charset=UTF-8") == {}


# --- parse_json: errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/json; charset=latin-1"])
def test_a_non_json_content_type_is_unsupported_media_type(content_type: str | None) -> None:
    with pytest.raises(UnsupportedMediaType) as raised:
        parse_json(b"{}", content_type)

    assert (raised.value.status, raised.value.code) == (415, "unsupported_media_type")
    assert (content_type or "no Content-Type") in raised.value.message


def test_media_type_is_judged_before_the_bytes() -> None:
    with pytest.raises(UnsupportedMediaType):
        parse_json(b"\xff not json", "text/plain")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"{", "not valid JSON", id="truncated"),
        pytest.param(b"{} []", "not valid JSON", id="two-values"),
        pytest.param(b"{'a': 1}", "not valid JSON", id="single-quotes"),
        pytest.param(b"[1,]", "not valid JSON", id="trailing-comma"),
        pytest.param(b"01", "not valid JSON", id="leading-zero"),
        pytest.param(b'"\x01"', "not valid JSON", id="control-character-in-string"),
        pytest.param(b"\xef\xbb\xbf{}", "not valid JSON", id="utf8-bom"),
        pytest.param(b'{"a": "\xff"}', "not UTF-8", id="invalid-utf8"),
        pytest.param(b'"\xed\xa0\x80"', "not UTF-8", id="utf8-encoded-surrogate"),
        pytest.param(b"\xc0\xaf", "not UTF-8", id="overlong-utf8"),
        pytest.param("{}".encode("utf-16"), "not UTF-8", id="utf16"),
        pytest.param(b"NaN", "NaN", id="NaN"),
        pytest.param(b"[Infinity]", "Infinity", id="Infinity"),
        pytest.param(b'{"n": -Infinity}', "-Infinity", id="-Infinity"),
        pytest.param(b'{"n": 1e400}', "1e400", id="beyond-a-double"),
        pytest.param(b"[-1.5E+309]", "-1.5E+309", id="beyond-a-double-negative"),
        pytest.param(b"9" * 5000, "5000 digits", id="integer-of-5000-digits"),
        pytest.param(b'"\\ud800"', "surrogate", id="lone-high-surrogate"),
        pytest.param(b'"\\uDFFF"', "surrogate", id="lone-low-surrogate-upper-hex"),
        pytest.param(b'"\\ude00\\ud83d"', "surrogate", id="surrogate-pair-reversed"),
        pytest.param(b'{"\\ud800": 1}', "surrogate", id="lone-surrogate-in-a-key"),
        pytest.param(b'[[{"a": ["\\udbff"]}]]', "surrogate", id="lone-surrogate-nested"),
        pytest.param(b"[" * 100000 + b"]" * 100000, "deeper than 100 levels", id="deep-arrays"),
        pytest.param(b'{"a":' * 100000 + b"1" + b"}" * 100000, "deeper than 100 levels", id="deep-objects"),
    ],
)
def test_unacceptable_bodies_are_malformed_json(raw: bytes, reason: str) -> None:
    with pytest.raises(MalformedJson) as raised:
        parse_json(raw, JSON)

    assert (raised.value.status, raised.value.code) == (400, "malformed_json")
    assert reason in raised.value.message
    assert raised.value.details == ()


def test_every_parse_failure_is_a_contract_error() -> None:
    """Whatever the bytes, parse_json answers a value or an ApiError, never another exception."""
    samples = [bytes([b]) for b in range(256)] + [b'"\\u', b'"\\uZZZZ"', b"-", b"1e", b"[1e999999]", b'"\\', b"\x00"]
    for raw in samples:
        with contextlib.suppress(ApiError):
            parse_json(raw, JSON)


@pytest.mark.parametrize(
    "text",
    ['{"a":1}', ' {"a":1}', '{"a":1}\n', '\t{"a":1} ', '{"a":1}x', ' {"a":1} x', "", " ", "[1,]", "1e400", "NaN"],
)
def test_a_document_reads_alike_with_or_without_whitespace_around_it(text: str) -> None:
    """The reading skips `decode`'s whitespace passes when there is none: what it makes or says is decode's."""

    def read(reader: Callable[[str], Any]) -> tuple[str, Any]:
        try:
            return "value", reader(text)
        except ValueError as error:
            return type(error).__name__, str(error)

    assert read(decode_json_text) == read(decoding._DECODER.decode)


def _reading(read: Callable[[], Any]) -> tuple[str, str]:
    """What a reading makes (its repr: an int and a float of one value differ) or the error it says."""
    try:
        return "value", repr(read())
    except ApiError as error:
        return type(error).__name__, error.message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"pix":{"withdraw":[{"start_time":"06:00:00-03:00","amount":400000}]}}',
        b'{"amount": 9223372036854775807}',  # the largest amount: 19 digits
        b'{"amount": 18446744073709551615}',  # beyond a signed 64-bit integer
        b'{"amount": 18446744073709551616}',  # beyond 64 bits: orjson would make it a float
        b'{"amount": -9223372036854775809}',
        b'{"amount": 9007199254740993.0}',  # integral, beyond 2^53: kept as the exact int
        b'{"amount": 1e16}',
        b'{"amount": 1E16}',
        b'{"amount": 100.0}',
        b'{"amount": 0.1}',
        b'{"amount": -0}',
        b'{"document_number": "529.982.247-25"}',
        b'{"note": "1e5 and 2E6", "ok": true, "no": false}',
        b'{"a": 1, "b": 2, "a": 3}',
        b' \n{"a": [1, 2, {"b": null}]}\t',
        b'{"name": "Jo\\u00e3o \\ud83d\\ude00"}',
        b'{"name": "\\ud800"}',
        b'{"a": "\xff"}',
        b"\xef\xbb\xbf{}",
        b"[1,]",
        b"NaN",
        b"[" * 100 + b"]" * 100,
        b"[" * 101 + b"]" * 101,
        b"[{" * 50 + b"}]" * 50,
        b'[{"a":' * 51 + b"1" + b"}]" * 51,
        b"[" * 2000 + b"]" * 2000,
    ],
)
def test_the_fast_reading_is_the_json_modules(raw: bytes) -> None:
    """parse_json reads most bodies with orjson; whatever it reads that way, it reads as the json module's reading
    (`_parse_json`) does: the same values of the same types, the same refusals in the same words."""
    assert _reading(lambda: parse_json(raw, JSON)) == _reading(lambda: decoding._parse_json(raw))
