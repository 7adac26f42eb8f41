"""The pipeline's kept verdicts (http/pipeline.py, MAX_VERDICTS): a path value or a body found valid once is not
judged again, and that never lets an invalid one through, nor keeps more than its bound."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.http import pipeline
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT

UPDATE = f"/limits/account/{FULL_ACCOUNT}/limit_update_request"
EVENT = "/event_conciliation/extraordinary_event/{key}"


def proposal(amount: int) -> dict[str, Any]:
    return {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": amount}]}}


def fields(response: Any) -> list[str]:
    return [detail["field"] for detail in response.json()["details"]]


def runner(client: TestClient, operation_id: str) -> pipeline.OperationRunner:
    for route in client.app.routes:  # type: ignore[attr-defined]
        for found in getattr(route.endpoint, "runners", {}).values():
            if found.operation.operation_id == operation_id:
                return found
    raise LookupError(operation_id)


def test_a_body_found_valid_leaves_the_next_one_judged(client: TestClient) -> None:
    valid = client.post(UPDATE, json=proposal(400000))
    again = client.post(UPDATE, json=proposal(400000))
    invalid = client.post(UPDATE, json=proposal(-1))

    assert (valid.status_code, again.status_code) == (201, 201)
    assert invalid.status_code == 400
    assert fields(invalid) == ["pix.withdraw[0].amount"]


def test_the_same_bytes_refused_are_refused_again(client: TestClient) -> None:
    bad = b'{"pix": {"withdraw": [{"start_time": "25:00:00-03:00", "amount": 1}]}}'
    answers = [client.post(UPDATE, content=bad, headers={"Content-Type": "application/json"}) for _ in range(2)]

    assert [a.status_code for a in answers] == [400, 400]
    assert fields(answers[0]) == fields(answers[1]) == ["pix.withdraw[0].start_time"]


def test_a_path_value_found_valid_leaves_the_next_one_judged(client: TestClient) -> None:
    found = client.get(EVENT.format(key=PENDING_EVENT))
    refused = client.get(EVENT.format(key="not-a-uuid"))
    refused_again = client.get(EVENT.format(key="not-a-uuid"))

    assert found.status_code == 200
    assert (refused.status_code, refused_again.status_code) == (400, 400)
    assert fields(refused) == fields(refused_again) == ["extraordinary_event_conciliation_key"]


def test_the_verdicts_kept_are_bounded(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "MAX_VERDICTS", 3)
    limit_change = runner(client, "createLimitUpdateRequest")
    limit_change._valid_bodies.clear()

    answers = [client.post(UPDATE, json=proposal(amount)).status_code for amount in range(1, 8)]

    assert answers == [201] * 7
    assert 1 <= len(limit_change._valid_bodies) <= 3


def test_a_large_body_is_judged_but_not_kept(client: TestClient) -> None:
    limit_change = runner(client, "createLimitUpdateRequest")
    limit_change._valid_bodies.clear()
    large = json.dumps(proposal(400000)) + " " * pipeline.VERDICT_BODY_BYTES  # valid, and over the bound

    answer = client.post(UPDATE, content=large, headers={"Content-Type": "application/json"})

    assert answer.status_code == 201
    assert limit_change._valid_bodies == set()
