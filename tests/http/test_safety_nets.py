"""The two safety nets no normal request reaches: a bug answers the contract's 500 (`internal_error`), and
`--validate-responses` turns a reply that contradicts the spec into `response_validation_failed`.

A handler is swapped for a broken one before the app is built (create_app binds the handler table then);
the tests also show that `assert_error`'s checks can fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from mock_server.api import handlers as routes
from mock_server.app import create_app
from mock_server.cli import _parser, settings_from
from mock_server.http.handling import Call, Handler, Reply
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.builders import REGISTER, registration
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import Client, WatchedTestClient, assert_error, assert_state_unchanged, error_problems

LOOKUP = "getExtraordinaryEvent"
BuildClient = Callable[[Handler, bool], WatchedTestClient]


@pytest.fixture
def with_handler(monkeypatch: pytest.MonkeyPatch, specs: Specs) -> BuildClient:
    """A watched client on an app whose event lookup is `handler`, answered with --validate-responses or not."""

    def build(handler: Handler, validate_responses: bool) -> WatchedTestClient:
        monkeypatch.setitem(routes.HANDLERS, LOOKUP, handler)
        return WatchedTestClient(create_app(Settings(validate_responses=validate_responses), specs))

    return build


def broken(call: Call) -> Reply:
    raise RuntimeError("a bug in the handler")


def off_spec(call: Call) -> Reply:
    return Reply(200, {"surprise": True})  # not an ExtraordinaryEvent


def undocumented(call: Call) -> Reply:
    return Reply(418, {"code": "teapot", "message": "I am a teapot."})


def journal_statuses(client: Client) -> list[int]:
    return [entry["status"] for entry in client.get("/__mock/requests").json()["requests"]]


# --- an unexpected exception ---------------------------------------------------------------------------


@pytest.mark.parametrize("validate_responses", [True, False], ids=["validated", "not-validated"])
def test_an_unexpected_exception_answers_the_contracts_500(
    with_handler: BuildClient, caplog: pytest.LogCaptureFixture, validate_responses: bool
) -> None:
    client = with_handler(broken, validate_responses)
    with caplog.at_level(logging.ERROR, logger="mock_server"):
        response = client.get(PENDING_EVENT_PATH)
    body = assert_error(response, 500, "internal_error")  # the spec documents it: validation lets it through
    assert body["message"] == "RuntimeError: a bug in the handler"
    assert "unexpected error in getExtraordinaryEvent" in caplog.text
    assert "Traceback" in caplog.text  # logged with the stack, for whoever debugs the mock
    assert journal_statuses(client) == [500]


def test_the_server_goes_on_after_an_unexpected_exception(with_handler: BuildClient) -> None:
    client = with_handler(broken, True)
    assert_error(client.get(PENDING_EVENT_PATH), 500, "internal_error")
    assert client.post(REGISTER, json=registration("7777-000001")).status_code == 201
    assert client.get("/__mock/health").status_code == 200


# --- --validate-responses ------------------------------------------------------------------------------


def test_validate_responses_turns_a_reply_against_the_spec_into_a_500(
    with_handler: BuildClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = with_handler(off_spec, True)
    with caplog.at_level(logging.ERROR, logger="mock_server"):
        response = client.get(PENDING_EVENT_PATH)
    body = assert_error(response, 500, "response_validation_failed")
    assert body["message"].startswith("The response of getExtraordinaryEvent does not match the spec: ")
    assert "surprise: is not a known field" in body["message"]  # what is wrong with it
    assert "does not match the spec" in caplog.text  # and the log keeps the reply that was refused
    assert "{'surprise': True}" in caplog.text
    assert journal_statuses(client) == [500]  # the journal shows what the client got


def test_without_validate_responses_the_reply_goes_out_as_it_is(with_handler: BuildClient) -> None:
    client = with_handler(off_spec, False)
    response = client.get(PENDING_EVENT_PATH)
    assert response.status_code == 200
    assert response.json() == {"surprise": True}


def test_validate_responses_refuses_a_status_the_operation_does_not_document(with_handler: BuildClient) -> None:
    body = assert_error(with_handler(undocumented, True).get(PENDING_EVENT_PATH), 500, "response_validation_failed")
    assert "status 418 is not documented" in body["message"]


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], {}, False),
        (["--validate-responses"], {}, True),
        ([], {"MOCK_SERVER_VALIDATE_RESPONSES": "1"}, True),
    ],
    ids=["default-off", "flag", "environment"],
)
def test_the_command_line_switches_validation_on(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], env: dict[str, str], expected: bool
) -> None:
    monkeypatch.delenv("MOCK_SERVER_VALIDATE_RESPONSES", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert settings_from(_parser().parse_args(argv)).validate_responses is expected


# --- the checks of assert_error can fail ----------------------------------------------------------------


def test_assert_error_notices_a_changed_state(client: Client) -> None:
    response = client.get("/event_conciliation/extraordinary_event/not-a-uuid")
    assert_error(response, 400, "invalid_request", ["extraordinary_event_conciliation_key"])
    assert client.post(REGISTER, json=registration("7777-000002")).status_code == 201
    with pytest.raises(AssertionError, match="changed the session's state"):
        assert_state_unchanged(response)


@pytest.mark.parametrize(
    "body",
    [
        {"code": "x"},  # no message
        {"code": "x", "message": "m", "extra": 1},
        {"code": "x", "message": "m", "details": [{"field": "a"}]},
        {"code": 1, "message": "m"},
    ],
)
def test_an_error_body_off_the_error_schema_is_noticed(body: dict[str, object]) -> None:
    assert error_problems(body) != []


def test_a_valid_error_body_has_no_problems() -> None:
    assert error_problems({"code": "x", "message": "m", "details": [{"field": "", "message": "m"}]}) == []
