"""Issue 16 item 8 in process: HEAD on GET resources, one X-Mock-Session only, ids never hold `/`."""

from __future__ import annotations

from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error

PENDING_KEY = PENDING_EVENT
EVENT_PATH = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"
WINDOWS = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}}


def test_head_answers_a_get_resource_with_the_gets_status_and_headers(client):
    get = client.get(EVENT_PATH)
    head = client.head(EVENT_PATH)
    assert head.status_code == 200
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]
    assert (
        client.head("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000").status_code == 404
    )
    assert client.head("/__mock/health").status_code == 200
    assert client.head("/openapi.yaml").status_code == 200


def test_head_is_journaled_as_head(client):
    client.head(EVENT_PATH)
    (entry,) = client.get("/__mock/requests").json()["requests"]
    assert (entry["method"], entry["operation_id"], entry["status"]) == ("HEAD", "getExtraordinaryEvent", 200)


def test_allow_still_lists_the_specs_methods_only(client):
    answer = client.delete(EVENT_PATH)
    assert_error(answer, 405, "method_not_allowed")
    assert answer.headers["allow"] == "GET"
    post_only = client.head("/limits/account")
    assert post_only.status_code == 405
    assert post_only.headers["allow"] == "POST"


def test_a_repeated_session_header_is_400_not_the_first_of_them(client):
    answer = client.get(EVENT_PATH, headers=[("X-Mock-Session", "one"), ("X-Mock-Session", "two")])
    body = assert_error(answer, 400, "invalid_request", ["X-Mock-Session"])
    assert "more than once" in body["details"][0]["message"]
    same = client.get(EVENT_PATH, headers=[("X-Mock-Session", "one"), ("X-Mock-Session", "one")])
    assert_error(same, 400, "invalid_request", ["X-Mock-Session"])
    assert client.get(EVENT_PATH, headers={"X-Mock-Session": "one"}).status_code == 200


def test_an_account_id_with_a_slash_is_refused_at_registration_naming_the_field(client):
    answer = client.post(
        "/limits/account",
        json={"account_id": "0001/123456", "registration_date": "2026-11-21T09:00:00-03:00", "limit": WINDOWS},
    )
    assert_error(answer, 400, "invalid_request", ["account_id"])


def test_an_encoded_slash_never_reaches_another_route(client):
    # decoded, this would be /__mock/accounts/0001-123456/limits/evaluate (POST only): a 405 of another route
    answer = client.get("/__mock/accounts/0001-123456%2Flimits%2Fevaluate")
    body = assert_error(answer, 404, "not_found")
    assert "%2F" in body["message"]
    assert_error(client.get("/__mock/accounts/0001%2f123456"), 404, "not_found")
    assert_error(
        client.post("/limits/account/0001-123456%2Frecipient_list/limit_update_request", json={"pix": {}}),
        404,
        "not_found",
    )
