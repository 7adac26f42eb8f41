"""Sessions in the URL (issue 11): every route is also served under /__session/{name}/..., so a client configured
with a base URL alone works in an isolated session."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send

from mock_server.http.session_url import SESSION_KEY, SessionPrefix, split_session_path
from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error

PENDING_KEY = PENDING_EVENT
EVENT = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"
ACCOUNT = "4444-000001"


def registration(account_id: str = ACCOUNT) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1000}]}},
    }


@pytest.fixture
def http(make_client):
    return make_client()


def test_a_base_url_with_the_prefix_isolates_the_public_api(http):
    base = "/__session/job-42"
    assert http.post(f"{base}/limits/account", json=registration()).status_code == 201
    # the same session by URL and by header; no other session sees it
    assert http.get(f"{base}/__mock/accounts/{ACCOUNT}").status_code == 200
    assert http.get(f"/__mock/accounts/{ACCOUNT}", headers={"X-Mock-Session": "job-42"}).status_code == 200
    assert_error(http.get(f"/__mock/accounts/{ACCOUNT}"), 404, "account_not_found")
    assert_error(http.get(f"/__session/job-43/__mock/accounts/{ACCOUNT}"), 404, "account_not_found")


def test_every_admin_route_acts_on_the_session_of_the_url(http):
    base = "/__session/a"
    frozen = http.put(f"{base}/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"})
    assert frozen.status_code == 200
    assert http.get(f"{base}/__mock/clock").json()["frozen"] is True
    assert http.get("/__mock/clock").json()["frozen"] is False
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503}
    assert http.post(f"{base}/__mock/faults", json=fault).status_code == 201
    assert http.get(EVENT).status_code == 200
    assert http.get(f"{base}{EVENT}").status_code == 503
    assert http.post(f"{base}/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    assert http.get(f"{base}/__mock/state").json()["events"][0]["status"] == "canceled"
    assert http.post(f"{base}/__mock/reset", json={"scenario": "empty"}).json() == {
        "status": "ok",
        "scenario": "empty",
    }
    assert http.get(f"{base}/__mock/scenarios").json()["active"] == "empty"
    assert http.get("/__mock/scenarios").json()["active"] == "default"
    assert http.get(f"{base}/__mock/health").status_code == 200
    assert http.get(f"{base}/openapi.yaml").status_code == 200
    assert http.get(f"{base}/__mock/openapi.yaml").status_code == 200


def test_the_journal_records_the_path_the_client_sent(http):
    assert http.get(f"/__session/j{EVENT}").status_code == 200
    assert http.get(EVENT, headers={"X-Mock-Session": "j"}).status_code == 200
    entries = http.get("/__session/j/__mock/requests").json()["requests"]
    assert [e["path"] for e in entries] == [f"/__session/j{EVENT}", EVENT]
    assert {e["operation_id"] for e in entries} == {"getExtraordinaryEvent"}


def test_the_same_name_in_header_and_url_is_fine(http):
    response = http.post("/__session/s1/limits/account", json=registration(), headers={"X-Mock-Session": "s1"})
    assert response.status_code == 201


def test_header_and_url_naming_different_sessions_is_400_and_changes_nothing(http):
    response = http.post("/__session/s1/limits/account", json=registration(), headers={"X-Mock-Session": "s2"})
    body = assert_error(response, 400, "invalid_request", ["X-Mock-Session"])
    assert "'s2'" in body["details"][0]["message"] and "'s1'" in body["details"][0]["message"]
    for name in ("s1", "s2"):
        assert_error(http.get(f"/__session/{name}/__mock/accounts/{ACCOUNT}"), 404, "account_not_found")
        assert http.get(f"/__session/{name}/__mock/requests").json() == {"requests": []}
    assert_error(http.get("/__session/s1/__mock/health", headers={"X-Mock-Session": "s2"}), 400, "invalid_request")


@pytest.mark.parametrize("name", ["", "x" * 65, "a b", "a:b", "ção", "a%2Fb"], ids=repr)
def test_an_invalid_name_in_the_url_is_400_naming_it(http, name):
    response = http.get(f"/__session/{name}/__mock/clock")
    if name == "a%2Fb":  # decoded before routing: session "a", path /b/__mock/clock
        assert_error(response, 404, "not_found")
        return
    body = assert_error(response, 400, "invalid_request", ["__session"])
    assert body["message"] == "The session name in the URL is invalid."


def test_both_invalid_names_are_reported(http):
    response = http.get("/__session/a b/__mock/clock", headers={"X-Mock-Session": "c d"})
    assert_error(response, 400, "invalid_request", ["X-Mock-Session", "__session"])


@pytest.mark.parametrize("path", ["/__session/a", "/__session/a/", "/__session/a/nope", "/__session//__mock/x"])
def test_unknown_paths_under_the_prefix_are_404(http, path):
    body = assert_error(http.get(path), 404, "not_found")
    assert path in body["message"]


def test_405_under_the_prefix_lists_the_specs_methods(http):
    response = http.put("/__session/a/limits/account")
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "POST"


def test_no_admin_and_admin_token_apply_under_the_prefix(make_client):
    closed = make_client(admin=False)
    assert_error(closed.get("/__session/a/__mock/state"), 404, "not_found")
    assert closed.get("/__session/a/__mock/health").status_code == 200
    assert closed.get(f"/__session/a{EVENT}").status_code == 200
    guarded = make_client(admin_token="t0ken")
    assert_error(guarded.get("/__session/a/__mock/state"), 401, "unauthorized")
    assert guarded.get("/__session/a/__mock/state", headers={"Authorization": "Bearer t0ken"}).status_code == 200


# --- the prefix in the ASGI scope (what served specs build their `servers` from) ----------------------------


def test_split_session_path():
    assert split_session_path("/__session/a/limits") == ("a", "/limits")
    assert split_session_path("/__session/a") == ("a", "")
    assert split_session_path("/__session/") == ("", "")
    assert split_session_path("/limits") is None
    assert split_session_path("/__sessions/a/x") is None


def test_the_prefix_moves_into_root_path_and_the_scope_names_the_session():
    seen: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope)

    async def nothing() -> dict[str, Any]:
        return {}

    async def ignore(message: Any) -> None:
        return None

    middleware = SessionPrefix(app)
    for path, root in [("/__session/job-1/limits/account", ""), ("/proxy/__session/b/x", "/proxy"), ("/x", "")]:
        asyncio.run(middleware({"type": "http", "path": path, "root_path": root}, nothing, ignore))
    first, behind_proxy, plain = seen
    assert first["path"] == "/__session/job-1/limits/account"  # what the client sent, kept
    assert first["root_path"] == "/__session/job-1"
    assert first[SESSION_KEY] == "job-1"
    assert behind_proxy["root_path"] == "/proxy/__session/b"
    assert behind_proxy[SESSION_KEY] == "b"
    assert plain["root_path"] == "" and SESSION_KEY not in plain
