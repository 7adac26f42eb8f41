"""API coverage (GET/DELETE /__mock/coverage, --coverage-report), through HTTP (issue 13, 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error
from tests.live_server import live_server

PENDING_KEY = PENDING_EVENT
EVENT = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"
UNKNOWN = "/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000"
RECIPIENTS = "/limits/account/0001-123456/recipient_list/recipient"


@pytest.fixture
def fresh(client):
    """Coverage is server-wide: every test here starts it afresh."""
    assert client.delete("/__mock/coverage").status_code == 204
    return client


def coverage(client, **kwargs: Any) -> dict[str, Any]:
    response = client.get("/__mock/coverage", **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def of(report: dict[str, Any], operation_id: str) -> dict[str, Any]:
    return next(op for op in report["operations"] if op["operation_id"] == operation_id)


def test_every_public_operation_is_listed_with_its_documented_statuses(fresh, specs: Specs):
    report = coverage(fresh)
    assert [op["operation_id"] for op in report["operations"]] == list(specs.public.operations)  # the spec's order
    lookup = of(report, "getExtraordinaryEvent")
    assert lookup["never_answered"] == ["200", "400", "403", "404", "429", "500"]
    assert lookup["calls"] == 0
    assert report["summary"]["answered"] == 0
    assert report["summary"]["documented_statuses"] == sum(len(op["never_answered"]) for op in report["operations"])


def test_answers_are_counted_across_sessions(fresh):
    assert fresh.get(EVENT).status_code == 200
    assert fresh.get(EVENT, headers={"X-Mock-Session": "cov-a"}).status_code == 200
    assert fresh.get(UNKNOWN, headers={"X-Mock-Session": "cov-b"}).status_code == 404
    lookup = of(coverage(fresh), "getExtraordinaryEvent")
    assert lookup["answered"] == {"200": 2, "404": 1}
    assert lookup["never_answered"] == ["400", "403", "429", "500"]
    assert lookup["calls"] == 3


def test_counts_outlive_the_journal_cap_and_a_session_reset(fresh):
    with fresh.unwatched():
        for _ in range(1005):
            fresh.get(UNKNOWN)
    assert len(fresh.get("/__mock/requests").json()["requests"]) == 1000
    assert fresh.post("/__mock/reset").status_code == 200
    assert of(coverage(fresh), "getExtraordinaryEvent")["answered"] == {"404": 1005}


def test_validation_failures_are_counted_by_field(fresh):
    assert fresh.post(RECIPIENTS, json={"document_number": "123.456.789-00"}).status_code == 400
    assert fresh.post(RECIPIENTS, json={"document_number": "1", "extra": True}).status_code == 400
    assert fresh.get("/event_conciliation/extraordinary_event/not-a-uuid").status_code == 400
    report = coverage(fresh)
    assert of(report, "addRecipient")["invalid_fields"] == {"document_number": 2, "extra": 1}
    assert of(report, "addRecipient")["answered"] == {"400": 2}
    assert of(report, "getExtraordinaryEvent")["invalid_fields"] == {"extraordinary_event_conciliation_key": 1}


def test_array_indexes_are_folded_in_field_names(fresh):
    body = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": -1}, {"start_time": "x", "amount": 1}]}}
    assert fresh.post("/limits/account/0001-123456/limit_update_request", json=body).status_code == 400
    fields = of(coverage(fresh), "createLimitUpdateRequest")["invalid_fields"]
    assert fields == {"pix.withdraw[].amount": 1, "pix.withdraw[].start_time": 1}


def test_injected_faults_are_counted_apart(fresh):
    assert (
        fresh.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503}).status_code == 201
    )
    assert fresh.get(EVENT).status_code == 503
    lookup = of(coverage(fresh), "getExtraordinaryEvent")
    assert lookup["injected"] == {"503": 1}
    assert lookup["undocumented"] == {} and lookup["answered"] == {}


def test_an_undocumented_status_is_reported(app, fresh):
    """The server never answers an undocumented status by itself (schemathesis checks it), so one is recorded
    the way the pipeline records every answer."""
    app.state.coverage.record("removeRecipient", 418)
    report = coverage(fresh)
    assert of(report, "removeRecipient")["undocumented"] == {"418": 1}
    assert report["summary"]["undocumented"] == 1


def test_admin_calls_are_not_counted(fresh):
    assert fresh.post(f"/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    assert fresh.get("/__mock/state").status_code == 200
    assert all(op["calls"] == 0 for op in coverage(fresh)["operations"])


def test_delete_starts_afresh(fresh):
    assert fresh.get(EVENT).status_code == 200
    response = fresh.delete("/__mock/coverage")
    assert response.status_code == 204 and response.content == b""
    assert of(coverage(fresh), "getExtraordinaryEvent")["calls"] == 0


@pytest.mark.parametrize(
    "kwargs", [{"params": {"format": "markdown"}}, {"headers": {"Accept": "text/markdown, application/json;q=0.5"}}]
)
def test_markdown_form(fresh, kwargs):
    assert fresh.get(EVENT).status_code == 200
    response = fresh.get("/__mock/coverage", **kwargs)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    text = response.text
    assert text.startswith("# API coverage\n")
    assert "| `getExtraordinaryEvent` GET" in text and "| 1 | 200 (1) | 400, 403, 404, 429, 500 |" in text


def test_format_json_wins_over_accept(fresh):
    response = fresh.get("/__mock/coverage", params={"format": "json"}, headers={"Accept": "text/markdown"})
    assert response.headers["content-type"] == "application/json"


def test_bad_format_is_400(fresh):
    assert_error(fresh.get("/__mock/coverage", params={"format": "html"}), 400, "invalid_request", ["format"])


def test_coverage_needs_the_admin_token_and_is_off_without_admin(make_client):
    with make_client(admin_token="t") as guarded:
        assert_error(guarded.get("/__mock/coverage"), 401, "unauthorized")
        assert guarded.get("/__mock/coverage", headers={"Authorization": "Bearer t"}).status_code == 200
    with make_client(admin=False) as closed:
        assert_error(closed.get("/__mock/coverage"), 404, "not_found")
        assert_error(closed.delete("/__mock/coverage"), 404, "not_found")


# --- --coverage-report FILE, written when the server stops -------------------------------------------


@pytest.mark.e2e  # starts the server or pytest in a child process
@pytest.mark.parametrize("name", ["coverage.md", "coverage.json"])
def test_the_report_is_written_at_shutdown(tmp_path: Path, name: str) -> None:
    report = tmp_path / name
    with live_server("--coverage-report", str(report)) as server:
        proc = server.proc
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get(EVENT).status_code == 200
            assert http.get(UNKNOWN, headers={"X-Mock-Session": "other"}).status_code == 404
        assert not report.exists()  # only at shutdown
        proc.terminate()  # uvicorn shuts down gracefully, then dies of the signal it caught
        proc.wait(timeout=30)
    text = report.read_text(encoding="utf-8")
    if name.endswith(".json"):
        lookup = of(json.loads(text), "getExtraordinaryEvent")
        assert lookup["answered"] == {"200": 1, "404": 1}
    else:
        assert text.startswith("# API coverage\n")
        assert "| 2 | 200 (1), 404 (1) | 400, 403, 429, 500 |" in text


@pytest.mark.e2e  # starts the server or pytest in a child process
def test_an_unwritable_report_is_said_on_stderr(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "coverage.md"
    with live_server("--coverage-report", str(target)) as server:
        server.proc.terminate()
        _, err = server.proc.communicate(timeout=30)
    assert "cannot write the coverage report" in err.decode()
    assert not target.exists()
