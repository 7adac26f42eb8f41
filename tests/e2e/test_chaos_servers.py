"""Issue 45 on real servers: a fault by chance fires the same calls on three fresh `mock-server` processes, and a
quota's 429 and Retry-After come over the wire as the spec documents them.

Each server is its own process (its own interpreter, hash seed and start time): whatever a draw depended on beyond
(seed, session, fault, k) would show here as sequences that differ.
"""

from __future__ import annotations

import httpx

from tests.default_scenario import PENDING_EVENT_PATH
from tests.live_server import live_server

LOOKUP = PENDING_EVENT_PATH
SESSION = {"X-Mock-Session": "ci-job-7"}
CHANCE = {"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 0.3, "seed": 7, "times": None}


def statuses_on_a_fresh_server(fault: dict[str, object], *options: str) -> str:
    letters = {200: ".", 503: "x"}
    with live_server(*options) as server, httpx.Client(base_url=server.url, headers=SESSION, timeout=30) as http:
        assert http.post("/__mock/faults", json=fault).status_code == 201
        return "".join(letters[http.get(LOOKUP).status_code] for _ in range(200))


def test_a_fault_by_chance_fires_the_same_calls_on_three_fresh_servers():
    # The second with a --seed of its own: a seed given on the fault is the fault's, whatever the server's.
    runs = [statuses_on_a_fresh_server(CHANCE), statuses_on_a_fresh_server(CHANCE, "--seed", "3")]
    runs.append(statuses_on_a_fresh_server(CHANCE))
    assert runs[0] == runs[1] == runs[2]
    assert 0.2 <= runs[0].count("x") / 200 <= 0.4
    assert statuses_on_a_fresh_server(CHANCE | {"seed": 8}) != runs[0]


def test_a_quotas_429_says_when_the_window_ends_over_the_wire():
    with live_server() as server, httpx.Client(base_url=server.url, headers=SESSION, timeout=30) as http:
        assert http.put("/__mock/clock", json={"now": "2026-11-21T10:00:18Z"}).status_code == 200
        quota = {"operation_id": "getExtraordinaryEvent", "kind": "quota", "limit": 5, "window_s": 60}
        assert http.post("/__mock/faults", json=quota).status_code == 201
        assert [http.get(LOOKUP).status_code for _ in range(5)] == [200] * 5
        refused = http.get(LOOKUP)
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "42"
        assert refused.json()["code"] == "quota_exceeded"
        assert http.post("/__mock/clock/advance", json={"seconds": 42}).status_code == 200
        assert http.get(LOOKUP).status_code == 200
