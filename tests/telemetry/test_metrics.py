"""GET /__mock/metrics (issue 44): the Prometheus text format, read back with prometheus_client's own parser; its
counts are the calls made. And the meter's bucket rule alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from mock_server.telemetry.metrics import BUCKETS, RequestMeter
from tests.default_scenario import PENDING_EVENT, UNKNOWN_EVENT
from tests.helpers import Client, assert_error

LOOKUP = "/event_conciliation/extraordinary_event/{}"


def scraped(client: Client | TestClient) -> dict[str, list[Any]]:
    answer = client.get("/__mock/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {family.name: family.samples for family in text_string_to_metric_families(answer.text)}


def value(samples: list[Any], name: str, **labels: str) -> float | None:
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) <= 1
    return found[0] if found else None


def test_the_counters_are_the_calls_made(client: Client) -> None:
    before = scraped(client)
    baseline = {
        status: value(
            before["pix_mock_requests"], "pix_mock_requests_total", operation_id="getExtraordinaryEvent", status=status
        )
        or 0
        for status in ("200", "404", "503")
    }
    for _ in range(3):
        assert client.get(LOOKUP.format(PENDING_EVENT)).status_code == 200
    assert client.get(LOOKUP.format(UNKNOWN_EVENT)).status_code == 404
    client.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503, "times": 2})
    for _ in range(2):
        assert client.get(LOOKUP.format(PENDING_EVENT)).status_code == 503
    after = scraped(client)
    requests = after["pix_mock_requests"]
    counted = {
        status: value(requests, "pix_mock_requests_total", operation_id="getExtraordinaryEvent", status=status)
        for status in baseline
    }
    assert {s: counted[s] - baseline[s] for s in baseline} == {"200": 3, "404": 1, "503": 2}  # type: ignore[operator]
    durations = after["pix_mock_request_duration_seconds"]
    total = value(durations, "pix_mock_request_duration_seconds_count", operation_id="getExtraordinaryEvent")
    # Every lookup the app answered, whatever its status (other tests share the app: a 400 or a 429 counts too)
    answered = sum(
        s.value
        for s in requests
        if s.name == "pix_mock_requests_total" and s.labels.get("operation_id") == "getExtraordinaryEvent"
    )
    assert total == answered
    infinite = value(
        durations, "pix_mock_request_duration_seconds_bucket", operation_id="getExtraordinaryEvent", le="+Inf"
    )
    assert infinite == total
    faults = after["pix_mock_faults_injected"]
    injected = value(faults, "pix_mock_faults_injected_total", operation_id="getExtraordinaryEvent", kind="respond")
    before_faults = (
        value(
            before["pix_mock_faults_injected"],
            "pix_mock_faults_injected_total",
            operation_id="getExtraordinaryEvent",
            kind="respond",
        )
        or 0
    )
    assert injected is not None and injected - before_faults == 2
    assert value(after["pix_mock_sessions"], "pix_mock_sessions") == 1  # the scrape itself makes none
    assert value(after["pix_mock_journal_bytes"], "pix_mock_journal_bytes") > 0  # type: ignore[operator]
    assert value(after["pix_mock_session_evictions"], "pix_mock_session_evictions_total") is not None
    # No label takes a session's name.
    labels = {name for samples in after.values() for sample in samples for name in sample.labels}
    assert labels <= {"operation_id", "status", "kind", "le"}


def test_evictions_and_sessions_are_counted(make_client: Callable[..., TestClient]) -> None:
    client = make_client(max_sessions=2)
    for name in ("a", "b", "c"):
        assert client.get(LOOKUP.format(PENDING_EVENT), headers={"X-Mock-Session": name}).status_code == 200
    families = scraped(client)
    assert value(families["pix_mock_sessions"], "pix_mock_sessions") == 2
    assert value(families["pix_mock_session_evictions"], "pix_mock_session_evictions_total") == 1


def test_the_metrics_are_on_the_admin_plane_s_rules(make_client: Callable[..., TestClient]) -> None:
    guarded = make_client(admin_token="s3cret")
    assert_error(guarded.get("/__mock/metrics"), 401, "unauthorized")
    answer = guarded.get("/__mock/metrics", headers={"Authorization": "Bearer s3cret"})
    assert answer.status_code == 200 and "pix_mock_requests_total" in answer.text
    page = guarded.get("/__mock/metrics", headers={"Authorization": "Bearer s3cret", "Origin": "https://evil.example"})
    assert page.status_code == 403
    assert make_client(admin=False).get("/__mock/metrics").status_code == 404


def test_a_meter_counts_each_duration_in_the_first_bucket_that_holds_it() -> None:
    meter = RequestMeter("getExtraordinaryEvent")
    meter.count(200, 400_000)  # 0.4 ms
    meter.count(200, 500_000)  # exactly 0.5 ms: `le` holds its bound
    meter.count(404, 2_000_000)  # 2 ms
    meter.count(0, 60 * 10**9)  # a minute: +Inf
    assert meter.statuses == {200: 2, 404: 1, 0: 1}
    assert meter.buckets[0] == 2 and meter.buckets[BUCKETS.index(0.0025)] == 1 and meter.buckets[-1] == 1
    assert sum(meter.buckets) == 4 and meter.total_ns == 400_000 + 500_000 + 2_000_000 + 60 * 10**9
