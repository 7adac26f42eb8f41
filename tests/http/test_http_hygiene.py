"""HTTP hygiene of the public API: media types, bodies that are not acceptable JSON, size, unknown paths,
wrong methods. Every error is JSON `{code, message[, details]}` and no bad request changes the state.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mock_server.domain.operations import OPERATIONS
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT, PENDING_EVENT_PATH
from tests.helpers import assert_error

MIB = 1024 * 1024
REGISTER = "/limits/account"
WINDOW = {"start_time": "06:00:00-03:00", "amount": 1000}
VALID_REGISTRATION = {
    "account_id": "new-0001",
    "registration_date": "2026-11-21T09:00:00-03:00",
    "limit": {"pix": {"withdraw": [WINDOW]}},
}
# Every body-carrying operation of the public API, with a valid body for fixtures/default.yaml.
POST_OPERATIONS = {
    "registerAccountLimit": (REGISTER, VALID_REGISTRATION),
    "createLimitUpdateRequest": ("/limits/account/0001-123456/limit_update_request", {"pix": {"withdraw": [WINDOW]}}),
    "createRecipientList": (
        "/limits/account/0002-654321/recipient_list",
        {"limit": {"pix": {"transaction": [WINDOW]}}},
    ),
    "addRecipient": ("/limits/account/0001-123456/recipient_list/recipient", {"document_number": "529.982.247-25"}),
    "createRecipientListLimitUpdateRequest": (
        "/limits/account/0001-123456/recipient_list/limit_update_request",
        {"pix": {"transaction": [WINDOW]}},
    ),
}
JSON = {"content-type": "application/json"}


@pytest.fixture
def rejected(client: httpx.Client) -> Callable[..., httpx.Response]:
    """Send a request that must fail: `assert_error` checks the status, the code, the error shape and that the
    state held."""

    def send(status: int, code: str, method: str, path: str, **options: Any) -> httpx.Response:
        response = client.request(method, path, **options)
        assert_error(response, status, code)
        return response

    return send


def detail_fields(response: httpx.Response) -> list[str]:
    return [d["field"] for d in response.json()["details"]]


def encoded(body: Any) -> bytes:
    return json.dumps(body).encode()


# --- media type -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "text/json",
        "application/jsonx",
        "application/json; charset=latin-1",
        "application/json; charset=utf-16",
    ],
)
def test_body_with_another_media_type_is_415(rejected: Callable[..., httpx.Response], content_type: str) -> None:
    response = rejected(
        415,
        "unsupported_media_type",
        "POST",
        REGISTER,
        content=encoded(VALID_REGISTRATION),
        headers={"content-type": content_type},
    )

    assert content_type in response.json()["message"]


def test_body_without_content_type_is_415(rejected: Callable[..., httpx.Response]) -> None:
    response = rejected(415, "unsupported_media_type", "POST", REGISTER, content=encoded(VALID_REGISTRATION))

    assert "no Content-Type" in response.json()["message"]


@pytest.mark.parametrize("operation_id", POST_OPERATIONS)
def test_every_body_carrying_operation_checks_the_media_type(
    rejected: Callable[..., httpx.Response], operation_id: str
) -> None:
    path, body = POST_OPERATIONS[operation_id]

    rejected(415, "unsupported_media_type", "POST", path, content=encoded(body), headers={"content-type": "text/plain"})


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON;charset=UTF-8",
        'application/json; charset="utf-8"',
    ],
)
def test_json_media_type_with_parameters_is_accepted(client: httpx.Client, content_type: str) -> None:
    response = client.post(REGISTER, content=encoded(VALID_REGISTRATION), headers={"content-type": content_type})

    assert response.status_code == 201


@pytest.mark.parametrize("operation_id", POST_OPERATIONS)
def test_every_body_carrying_operation_accepts_its_valid_body(client: httpx.Client, operation_id: str) -> None:
    path, body = POST_OPERATIONS[operation_id]

    response = client.post(path, json=body)

    assert response.status_code == 201


# --- bodies that are not acceptable JSON ----------------------------------------------------------

MALFORMED = {
    "truncated": b'{"account_id": "x"',
    "trailing-comma": b'{"account_id": "x",}',
    "two-documents": b"{} {}",
    "single-quotes": b"{'account_id': 'x'}",
    "invalid-utf8": b'{"account_id": "\xff\xfe"}',
    "utf16-encoded": '{"account_id": "x"}'.encode("utf-16"),
    "utf8-bom": b'\xef\xbb\xbf{"account_id": "x"}',
    "NaN": b'{"account_id": "x", "limit": {"pix": {"withdraw": [{"start_time": "06:00:00Z", "amount": NaN}]}}}',
    "Infinity": b"Infinity",
    "-Infinity": b'{"n": -Infinity}',
    "number-beyond-double": b'{"n": 1e400}',
    "integer-of-5000-digits": b'{"n": ' + b"9" * 5000 + b"}",
    "lone-surrogate-value": b'{"account_id": "\\ud800"}',
    "lone-surrogate-key": b'{"\\udfff": 1}',
    "lone-low-surrogate-after-text": b'{"account_id": "abc\\uDC00"}',
    "deep-arrays": b"[" * 100000 + b"]" * 100000,
    "deep-objects": b'{"a":' * 100000 + b"1" + b"}" * 100000,
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_unacceptable_json_is_malformed_json(rejected: Callable[..., httpx.Response], raw: bytes) -> None:
    response = rejected(400, "malformed_json", "POST", REGISTER, content=raw, headers=JSON)

    assert "details" not in response.json()


@pytest.mark.parametrize("operation_id", POST_OPERATIONS)
def test_every_body_carrying_operation_rejects_malformed_json(
    rejected: Callable[..., httpx.Response], operation_id: str
) -> None:
    path, _ = POST_OPERATIONS[operation_id]

    rejected(400, "malformed_json", "POST", path, content=b'{"pix": ', headers=JSON)


def test_surrogate_pair_escape_is_valid_json(client: httpx.Client) -> None:
    """An escaped surrogate *pair* is one character (here an emoji), not a lone surrogate."""
    raw = encoded(VALID_REGISTRATION).replace(b'"new-0001"', rb'"conta-\ud83d\ude00"')

    response = client.post(REGISTER, content=raw, headers=JSON)

    assert response.status_code == 201
    assert response.json()["account_id"] == "conta-\U0001f600"


@pytest.mark.parametrize("raw", [b"null", b"1", b"true", b"[]", b'"x"', b"[{}]"])
def test_json_that_is_not_an_object_is_invalid_request(rejected: Callable[..., httpx.Response], raw: bytes) -> None:
    response = rejected(400, "invalid_request", "POST", REGISTER, content=raw, headers=JSON)

    assert detail_fields(response) == [""]


@pytest.mark.parametrize("headers", [JSON, {}], ids=["json-content-type", "no-content-type"])
def test_empty_body_is_invalid_request_for_the_whole_body(
    rejected: Callable[..., httpx.Response], headers: dict[str, str]
) -> None:
    response = rejected(400, "invalid_request", "POST", REGISTER, content=b"", headers=headers)

    assert detail_fields(response) == [""]


# --- size -----------------------------------------------------------------------------------------


def padded_body(size: int) -> bytes:
    """An empty JSON object padded with spaces to exactly `size` bytes."""
    return b"{" + b" " * (size - 2) + b"}"


def test_body_over_1_mib_is_413(rejected: Callable[..., httpx.Response]) -> None:
    rejected(413, "payload_too_large", "POST", REGISTER, content=padded_body(MIB + 1), headers=JSON)


def test_streamed_body_over_1_mib_is_413(rejected: Callable[..., httpx.Response]) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"{"
        for _ in range(17):
            yield b" " * 65536
        yield b"}"

    rejected(413, "payload_too_large", "POST", REGISTER, content=chunks(), headers=JSON)


def test_body_of_exactly_1_mib_is_read(rejected: Callable[..., httpx.Response]) -> None:
    """The limit is *over* 1 MiB: a body of exactly 1 MiB is parsed (and here judged on its content)."""
    response = rejected(400, "invalid_request", "POST", REGISTER, content=padded_body(MIB), headers=JSON)

    assert sorted(detail_fields(response)) == ["account_id", "limit", "registration_date"]


# --- paths and methods ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/"),
        ("GET", "/limits"),
        ("POST", "/limits/account/0001-123456"),
        ("GET", "/event_conciliation/extraordinary_event"),
        ("GET", f"/event_conciliation/extraordinary_event/{PENDING_EVENT}/extra"),
        ("POST", "/limits/accounts"),
    ],
)
def test_unknown_path_is_not_found(rejected: Callable[..., httpx.Response], method: str, path: str) -> None:
    response = rejected(404, "not_found", method, path)

    assert path in response.json()["message"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/event_conciliation/extraordinary_event/{PENDING_EVENT}/"),
        ("POST", "/limits/account/"),
        ("POST", "/limits/account/0001-123456/limit_update_request/"),
    ],
)
def test_trailing_slash_is_not_found_not_a_redirect(
    rejected: Callable[..., httpx.Response], method: str, path: str
) -> None:
    response = rejected(404, "not_found", method, path, follow_redirects=False)

    assert "location" not in response.headers


def _concrete(path: str) -> str:
    return (
        path.replace("{extraordinary_event_conciliation_key}", PENDING_EVENT)
        .replace("{account_id}", "0001-123456")
        .replace("{recipient_id}", "5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f")
    )


def _wrong_methods(specs: Specs) -> list[tuple[str, str, str]]:
    cases = []
    for path, operations in specs.public.paths().items():
        allowed = {op.method for op in operations}
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            if method not in allowed:
                cases.append((method, path, ", ".join(sorted(allowed))))
    return cases


def test_wrong_method_on_every_public_path_is_405_with_the_spec_allow(
    specs: Specs, rejected: Callable[..., httpx.Response]
) -> None:
    cases = _wrong_methods(specs)
    assert len(cases) == len(OPERATIONS) * 4  # a path per operation, one method each: four methods it refuses

    for method, path, allow in cases:
        response = rejected(405, "method_not_allowed", method, _concrete(path))
        assert response.headers["allow"] == allow, (method, path)


def test_put_on_limits_account_allows_only_post(rejected: Callable[..., httpx.Response]) -> None:
    response = rejected(405, "method_not_allowed", "PUT", REGISTER, json=VALID_REGISTRATION)

    assert response.headers["allow"] == "POST"


def test_post_on_the_event_lookup_allows_only_get(rejected: Callable[..., httpx.Response]) -> None:
    response = rejected(
        405,
        "method_not_allowed",
        "POST",
        PENDING_EVENT_PATH,
    )

    assert response.headers["allow"] == "GET"


# --- headers --------------------------------------------------------------------------------------


def test_invalid_session_header_is_invalid_request(rejected: Callable[..., httpx.Response]) -> None:
    response = rejected(
        400, "invalid_request", "POST", REGISTER, json=VALID_REGISTRATION, headers={"X-Mock-Session": "bad session!"}
    )

    assert detail_fields(response) == ["X-Mock-Session"]


def test_a_good_request_after_bad_ones_still_works(client: httpx.Client) -> None:
    for raw in MALFORMED.values():
        client.post(REGISTER, content=raw, headers=JSON)
    client.post(REGISTER, content=padded_body(MIB + 1), headers=JSON)

    response = client.post(REGISTER, json=VALID_REGISTRATION)

    assert response.status_code == 201
    assert client.get("/__mock/accounts/new-0001").json()["limit"] == VALID_REGISTRATION["limit"]


# --- content on operations that take none ---------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        pytest.param(b"hello", {"content-type": "text/plain"}, id="text"),
        pytest.param(b"{", JSON, id="malformed-json"),
        pytest.param(b" " * (MIB + 1), {}, id="over-1-mib"),
    ],
)
def test_content_sent_to_the_event_lookup_is_ignored(
    client: httpx.Client, content: bytes, headers: dict[str, str]
) -> None:
    """The lookup documents no 413/415: content on a GET has no defined semantics and is not judged."""
    response = client.request(
        "GET",
        PENDING_EVENT_PATH,
        content=content,
        headers=headers,
    )

    assert response.status_code == 200
    assert response.json()["status"] == "pending_conciliation"


def test_content_sent_to_remove_recipient_is_ignored(client: httpx.Client) -> None:
    response = client.request(
        "DELETE",
        "/limits/account/0001-123456/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f",
        content=b"not json",
        headers={"content-type": "text/plain"},
    )

    assert response.status_code == 204
