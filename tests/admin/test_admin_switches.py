"""--no-admin and --admin-token (CONTRACT 4): the admin API switched off, or behind a bearer token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.builders import REGISTER, event_creation, registration
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT, PENDING_EVENT_PATH
from tests.helpers import ADMIN_HEADERS, read_yaml
from tests.whole_answer_client import WholeAnswerTestClient

WINDOW = [{"start_time": "06:00:00-03:00", "amount": 1000}]
NEW_ACCOUNT = "3333-000001"  # registered by the tests, in no scenario

# Every admin route but health, with a body it would accept.
ADMIN_CALLS: list[tuple[str, str, Any]] = [
    ("POST", "/__mock/reset", None),
    ("GET", "/__mock/scenarios", None),
    ("GET", "/__mock/state", None),
    ("GET", "/__mock/state?format=yaml", None),
    (
        "POST",
        "/__mock/events",
        event_creation(total_expected_amount=1),
    ),
    ("POST", f"/__mock/events/{PENDING_EVENT}/pay", None),
    ("POST", "/__mock/events/2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44/cancel", None),
    ("GET", f"/__mock/accounts/{FULL_ACCOUNT}", None),
    ("POST", f"/__mock/accounts/{FULL_ACCOUNT}/limits/evaluate", {"mode": "withdraw", "amount": 1}),
    ("GET", "/__mock/requests", None),
    ("DELETE", "/__mock/requests", None),
    ("POST", "/__mock/faults", {"operation_id": "getExtraordinaryEvent", "delay_ms": 0}),
    ("GET", "/__mock/faults", None),
    ("DELETE", "/__mock/faults", None),
    ("GET", "/__mock/clock", None),
    ("PUT", "/__mock/clock", {"now": None}),
    ("GET", "/__mock/openapi.yaml", None),
]
IDS = [f"{method} {path}" for method, path, _ in ADMIN_CALLS]


def call(client, method: str, path: str, body: Any, **kwargs: Any):
    if body is None:
        return client.request(method, path, **kwargs)
    return client.request(method, path, json=body, **kwargs)


def exercise_public_api(client, **kwargs: Any) -> None:
    """One call of each public operation succeeds."""
    assert client.get(PENDING_EVENT_PATH, **kwargs).status_code == 200
    assert client.post(REGISTER, json=registration(NEW_ACCOUNT), **kwargs).status_code == 201
    assert (
        client.post(
            "/limits/account/3333-000001/limit_update_request", json={"pix": {"withdraw": WINDOW}}, **kwargs
        ).status_code
        == 201
    )
    assert (
        client.post(
            "/limits/account/3333-000001/recipient_list", json={"limit": {"pix": {"transaction": WINDOW}}}, **kwargs
        ).status_code
        == 201
    )
    added = client.post(
        "/limits/account/3333-000001/recipient_list/recipient", json={"document_number": "529.982.247-25"}, **kwargs
    )
    assert added.status_code == 201
    changed = client.post(
        "/limits/account/3333-000001/recipient_list/limit_update_request",
        json={"pix": {"transaction": WINDOW}},
        **kwargs,
    )
    assert changed.status_code == 201
    removed = client.delete(
        f"/limits/account/3333-000001/recipient_list/recipient/{added.json()['recipient_id']}", **kwargs
    )
    assert removed.status_code == 204


def test_every_admin_call_works_by_default(client):
    """The baseline the switches below take away: every call listed here succeeds on a default server."""
    for method, path, body in ADMIN_CALLS:
        response = call(client, method, path, body)
        assert response.status_code < 300, (method, path, response.text)


# --- --no-admin -----------------------------------------------------------------------------------


@pytest.fixture
def no_admin(make_client):
    return make_client(admin=False)


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS, ids=IDS)
def test_no_admin_turns_every_admin_route_into_404(no_admin, method, path, body):
    response = call(no_admin, method, path, body)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()
    assert error["code"] == "not_found"
    assert error["message"]


def test_no_admin_keeps_health(no_admin):
    response = no_admin.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}


def test_no_admin_keeps_the_public_api(no_admin):
    exercise_public_api(no_admin)
    exercise_public_api(no_admin, headers={"X-Mock-Session": "other"})


def test_no_admin_keeps_the_public_spec(no_admin):
    yaml_spec = no_admin.get("/openapi.yaml")
    assert yaml_spec.status_code == 200
    assert yaml_spec.headers["content-type"].startswith("application/yaml")
    assert yaml_spec.text.startswith("openapi: 3.1.0")
    json_spec = no_admin.get("/openapi.json")
    assert json_spec.status_code == 200
    assert json_spec.json()["openapi"] == "3.1.0"


# --- --admin-token --------------------------------------------------------------------------------


@pytest.fixture
def guarded(make_client):
    return make_client(admin_token="T")


@pytest.fixture(scope="module")
def guarded_once(specs: Specs) -> Iterator[WholeAnswerTestClient]:
    """One app with --admin-token for the 136 refusals below (an app each cost ~20 ms: 2.5 s of CPU); a refused call
    changes nothing, so they can share it. Its client is entered once: a client used outside `with` starts an event
    loop in a thread of its own for each request."""
    app = create_app(Settings(admin_token="T", validate_responses=True), specs)
    with WholeAnswerTestClient(app, headers=ADMIN_HEADERS) as client:
        yield client


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", "Bearer", "Bearer T2", "Basic T", "T", "Bearer  ", "Token T"],
)
@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS, ids=IDS)
def test_admin_token_needed_on_every_admin_route(guarded_once, method, path, body, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    response = call(guarded_once, method, path, body, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()
    assert error["code"] == "unauthorized"
    assert error["message"]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS, ids=IDS)
def test_admin_token_lets_the_bearer_in(guarded, method, path, body):
    response = call(guarded, method, path, body, headers={"Authorization": "Bearer T"})
    assert response.status_code < 300, response.text


def test_admin_token_scheme_is_case_insensitive(guarded):
    response = guarded.get("/__mock/clock", headers={"Authorization": "bearer T"})
    assert response.status_code == 200
    assert set(response.json()) == {"now", "frozen"}


def test_admin_token_refused_call_changes_nothing(guarded):
    assert guarded.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 201
    assert guarded.post("/__mock/reset").status_code == 401
    assert guarded.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 409  # not reset


def test_admin_token_is_checked_before_the_body_and_the_session(guarded):
    bad_body = guarded.post("/__mock/reset", json={"nope": 1})
    assert bad_body.status_code == 401
    assert bad_body.json()["code"] == "unauthorized"
    bad_session = guarded.get("/__mock/state", headers={"X-Mock-Session": "a b"})
    assert bad_session.status_code == 401
    # with the token, the same calls get their 400
    allowed = {"Authorization": "Bearer T"}
    assert guarded.post("/__mock/reset", json={"nope": 1}, headers=allowed).status_code == 400
    assert guarded.get("/__mock/state", headers={**allowed, "X-Mock-Session": "a b"}).status_code == 400


def test_admin_token_leaves_health_open(guarded):
    response = guarded.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}


def test_admin_token_never_needed_by_the_public_api(guarded):
    exercise_public_api(guarded)
    assert guarded.get("/openapi.yaml").status_code == 200
    assert guarded.get("/openapi.json").status_code == 200


def test_admin_token_with_sessions(guarded):
    allowed = {"Authorization": "Bearer T"}
    assert guarded.post(REGISTER, json=registration(NEW_ACCOUNT), headers={"X-Mock-Session": "s"}).status_code == 201
    journal = guarded.get("/__mock/requests", headers={**allowed, "X-Mock-Session": "s"})
    assert journal.status_code == 200
    assert [e["operation_id"] for e in journal.json()["requests"]] == ["registerAccountLimit"]


def test_no_admin_wins_over_a_token(make_client):
    client = make_client(admin=False, admin_token="T")
    assert client.get("/__mock/state", headers={"Authorization": "Bearer T"}).status_code == 404
    assert client.get("/__mock/health").status_code == 200


def test_the_admin_spec_is_served(client):
    response = client.get("/__mock/openapi.yaml")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/yaml")
    document = read_yaml(response.text)
    assert document["openapi"] == "3.1.0"
    operations = {
        op["operationId"] for item in document["paths"].values() for op in item.values() if isinstance(op, dict)
    }
    assert {
        "mockHealth",
        "mockReset",
        "mockGetState",
        "mockCreateFault",
        "mockSetClock",
        "mockEvaluateLimit",
    } <= operations
