"""Faults by chance and quotas on the session's clock (issue 45), through HTTP as an integrator arms and meets them.

Each "fresh server" here is an app built anew in this process (`make_client`): the draws depend on nothing a
server keeps, so three apps stand for three servers; tests/e2e/test_chaos_servers.py runs real ones. Nothing is
timed: a fault's wait is caught by replacing `fault_replies.sleep`, which records what it was asked to wait.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mock_server.http import fault_replies
from mock_server.mcp.tools import tools_of
from tests.builders import REGISTER, registration
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT_PATH
from tests.helpers import Client, add_fault, assert_error, faults

SESSION = {"X-Mock-Session": "chaos-run"}
CHANCE = {"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 0.3, "seed": 7, "times": None}
PROPOSAL = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 400000}]}}
LIMIT_CHANGE = f"/limits/account/{FULL_ACCOUNT}/limit_update_request"


def journal(client: Client, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = client.get("/__mock/requests", headers=headers).json()["requests"]
    return result


def statuses(client: Any, calls: int, headers: dict[str, str] = SESSION) -> str:
    """The calls' statuses as text, one letter each: `.` for 200, `x` for 503, `q` for 429."""
    letters = {200: ".", 503: "x", 429: "q"}
    return "".join(letters[client.get(PENDING_EVENT_PATH, headers=headers).status_code] for _ in range(calls))


def sequence_on_a_fresh_server(make_client: Callable[..., Any], fault: dict[str, Any], calls: int = 200) -> str:
    with make_client() as client:
        assert client.post("/__mock/faults", json=fault, headers=SESSION).status_code == 201
        return statuses(client, calls)


def test_a_fault_by_chance_gives_the_same_statuses_on_three_fresh_servers(make_client):
    runs = [sequence_on_a_fresh_server(make_client, CHANCE) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    assert 0.2 <= runs[0].count("x") / 200 <= 0.4
    assert set(runs[0]) == {".", "x"}
    other_seed = sequence_on_a_fresh_server(make_client, CHANCE | {"seed": 8})
    assert other_seed != runs[0]


def test_a_fault_seed_draws_the_same_in_every_session_and_the_servers_seed_mixes_the_name_in(make_client):
    """A seed given (on the fault, or to the session) replays in a session of any name: the pytest plugin's are
    random. The server's --seed mixes the session's name in, as it does for ids, so a run's sessions differ."""
    unseeded = {k: v for k, v in CHANCE.items() if k != "seed"}
    with make_client(seed=7) as client:
        runs = {}
        for name, fault in (("given-a", CHANCE), ("given-b", CHANCE), ("server-a", unseeded), ("server-b", unseeded)):
            armed = client.post("/__mock/faults", json=fault, headers={"X-Mock-Session": name}).json()
            assert armed["seed"] == 7
            assert armed.get("seed_mixes_session", False) is name.startswith("server")
            runs[name] = statuses(client, 40, {"X-Mock-Session": name})
        assert client.post("/__mock/sessions", json={"name": "own-seed", "seed": 7}).status_code == 201
        armed = client.post("/__mock/faults", json=unseeded, headers={"X-Mock-Session": "own-seed"}).json()
        assert armed["seed"] == 7 and "seed_mixes_session" not in armed
        runs["own-seed"] = statuses(client, 40, {"X-Mock-Session": "own-seed"})
        marks = journal(client, {"X-Mock-Session": "server-a"})[0]["faults"]
    assert runs["given-a"] == runs["given-b"] == runs["own-seed"]
    assert runs["server-a"] != runs["server-b"]
    assert marks[0]["seed_mixes_session"] is True


def test_times_counts_firings_and_the_listing_counts_matches_and_firings(client):
    fault = add_fault(client, **(CHANCE | {"times": 4}))
    assert {k: fault[k] for k in ("probability", "seed", "jitter_ms", "matches", "firings")} == {
        "probability": 0.3,
        "seed": 7,
        "jitter_ms": 0,
        "matches": 0,
        "firings": 0,
    }
    seen = ""
    while seen.count("x") < 2:
        seen += statuses(client, 1, {})
    [listed] = faults(client)
    assert listed["matches"] == len(seen) and listed["firings"] == 2 and listed["times"] == 2
    while seen.count("x") < 4:
        seen += statuses(client, 1, {})
    assert len(seen) > 4  # matches that did not fire spent nothing
    assert faults(client) == []  # four firings: spent
    assert statuses(client, 20, {}) == "." * 20


def test_the_journal_marks_every_call_a_fault_decided_on_with_its_draw(client):
    add_fault(client, **CHANCE)
    seen = statuses(client, 12, {})
    client.post(REGISTER, json=registration("5555-000077"))  # no fault of its operation: no mark
    entries = journal(client)
    marks = [entry["faults"] for entry in entries[:12]]
    assert marks == [
        [{"fault_id": "fault-1", "draw": k, "fired": letter == "x", "seed": 7, "probability": 0.3}]
        for k, letter in enumerate(seen, start=1)
    ]
    assert [entry.get("injected", False) for entry in entries[:12]] == [letter == "x" for letter in seen]
    assert "faults" not in entries[12]


def test_a_plain_fault_shows_as_before_and_its_call_is_marked_without_a_seed(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    assert set(fault) == {"fault_id", "operation_id", "kind", "status", "body", "delay_ms", "times"}
    assert client.get(PENDING_EVENT_PATH).status_code == 503
    assert journal(client)[-1]["faults"] == [{"fault_id": fault["fault_id"], "draw": 1, "fired": True}]


def test_the_first_fault_that_fires_answers_and_the_ones_after_it_are_not_asked(client):
    add_fault(client, operation_id="getExtraordinaryEvent", status=502, probability=0.5, seed=1, times=None)
    add_fault(client, operation_id="getExtraordinaryEvent", status=503, times=None)
    answered = [client.get(PENDING_EVENT_PATH).status_code for _ in range(30)]
    assert set(answered) == {502, 503}
    for status, entry in zip(answered, journal(client), strict=True):
        fired = [mark["fault_id"] for mark in entry["faults"] if mark["fired"]]
        assert fired == (["fault-1"] if status == 502 else ["fault-2"])
        assert len(entry["faults"]) == (1 if status == 502 else 2)
    first, second = faults(client)
    assert first["matches"] == 30 and first["firings"] == answered.count(502)
    assert "matches" not in second  # a plain fault: shown as before chance existed


def test_a_fault_without_a_seed_draws_by_the_sessions_seed(client):
    assert client.post("/__mock/sessions", json={"name": "seeded", "seed": 7}).status_code == 201
    fault = client.post(
        "/__mock/faults", json={k: v for k, v in CHANCE.items() if k != "seed"}, headers={"X-Mock-Session": "seeded"}
    ).json()
    assert fault["seed"] == 7


def test_an_unseeded_sessions_fault_shows_the_seed_it_drew_and_that_seed_replays_the_run(make_client):
    """How a failing CI run is replayed: the journal shows the seed its fault drew by."""
    unseeded = {k: v for k, v in CHANCE.items() if k != "seed"}
    with make_client() as client:
        assert client.post("/__mock/faults", json=unseeded, headers=SESSION).status_code == 201
        failing_run = statuses(client, 60)
        seed = journal(client, SESSION)[0]["faults"][0]["seed"]
    assert isinstance(seed, int)
    assert sequence_on_a_fresh_server(make_client, unseeded | {"seed": seed}, 60) == failing_run


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits faults ask for, in seconds, recorded and not waited."""
    asked: list[float] = []

    async def record(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(fault_replies, "sleep", record)
    return asked


def jittered_delays(make_client: Callable[..., Any], waits: list[float], seed: int) -> list[int]:
    waits.clear()
    fault = {"operation_id": "getExtraordinaryEvent", "delay_ms": 100, "jitter_ms": 50, "seed": seed, "times": None}
    with make_client() as client:
        assert client.post("/__mock/faults", json=fault, headers=SESSION).status_code == 201
        assert statuses(client, 30) == "." * 30  # only a wait: the calls go on
        marked = [entry["faults"][0]["delay_ms"] for entry in journal(client, SESSION)]
    assert [round(w * 1000) for w in waits] == marked  # what the journal says is what was waited
    return marked


def test_jitter_draws_the_same_delays_under_the_same_seed(make_client, waits):
    first = jittered_delays(make_client, waits, 7)
    assert jittered_delays(make_client, waits, 7) == first
    assert all(100 <= delay <= 150 for delay in first)
    assert len(set(first)) > 5
    assert jittered_delays(make_client, waits, 8) != first


# --- quotas ---------------------------------------------------------------------------------------------------


def freeze(client: Client, now: str) -> None:
    assert client.put("/__mock/clock", json={"now": now}).status_code == 200


def propose(client: Client) -> Any:
    return client.post(LIMIT_CHANGE, json=PROPOSAL)


def test_a_quota_lets_5_calls_a_minute_through_and_answers_the_sixth_429_until_the_clock_passes_the_edge(client):
    freeze(client, "2026-11-21T10:00:18Z")
    quota = add_fault(client, operation_id="createLimitUpdateRequest", kind="quota", limit=5, window_s=60)
    assert quota["kind"] == "quota" and quota["times"] is None
    assert [propose(client).status_code for _ in range(5)] == [201] * 5
    refused = propose(client)
    body = assert_error(refused, 429, "quota_exceeded")
    assert refused.headers["Retry-After"] == "42"  # 10:00:18 -> the edge at 10:01:00
    assert "fault-1" in body["message"]
    assert client.post("/__mock/clock/advance", json={"seconds": 41.5}).status_code == 200
    assert propose(client).headers["Retry-After"] == "1"  # half a second left: rounded up
    assert client.post("/__mock/clock/advance", json={"seconds": 0.5}).status_code == 200
    assert propose(client).status_code == 201  # 10:01:00: a new window at once
    [listed] = faults(client)
    assert (listed["matches"], listed["firings"], listed["window_calls"]) == (8, 2, 1)


def test_a_quota_stays_until_cleared_and_setting_the_clock_back_opens_that_window_anew(client):
    freeze(client, "2026-11-21T10:00:59Z")
    add_fault(client, operation_id="getExtraordinaryEvent", kind="quota", limit=1, window_s=60)
    assert statuses(client, 3, {}) == ".qq"
    freeze(client, "2026-11-21T09:59:30Z")  # another window, earlier: counted from nothing
    assert statuses(client, 2, {}) == ".q"
    freeze(client, "2026-11-21T10:00:00Z")
    assert statuses(client, 2, {}) == ".q"
    assert client.delete("/__mock/faults").status_code == 204
    assert statuses(client, 3, {}) == "..."


def test_a_quotas_429_is_journaled_injected_and_counted_as_injected(client):
    assert client.delete("/__mock/coverage").status_code == 204  # server-wide: counted afresh
    freeze(client, "2026-11-21T10:00:00Z")
    add_fault(client, operation_id="getExtraordinaryEvent", kind="quota", limit=0, window_s=60)
    assert statuses(client, 1, {}) == "q"
    [entry] = journal(client)
    assert entry["injected"] is True and entry["status"] == 429
    seed = entry["faults"][0]["seed"]
    assert entry["faults"] == [{"fault_id": "fault-1", "draw": 1, "fired": True, "seed": seed, "probability": 1}]
    report = client.get("/__mock/coverage").json()["operations"]
    lookup = next(op for op in report if op["operation_id"] == "getExtraordinaryEvent")
    assert lookup["injected"] == {"429": 1} and lookup["answered"] == {}


def test_a_quota_on_the_real_clock_says_a_retry_within_its_window(client):
    add_fault(client, operation_id="getExtraordinaryEvent", kind="quota", limit=0, window_s=30)
    seconds = int(client.get(PENDING_EVENT_PATH).headers["Retry-After"])
    assert 1 <= seconds <= 30


@pytest.mark.parametrize(
    ("fault", "field"),
    [
        ({"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 0}, "probability"),
        ({"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 1.5}, "probability"),
        ({"operation_id": "getExtraordinaryEvent", "status": 503, "seed": -1}, "seed"),
        ({"operation_id": "getExtraordinaryEvent", "status": 503, "seed": 1.5}, "seed"),
        ({"operation_id": "getExtraordinaryEvent", "jitter_ms": 60001}, "jitter_ms"),
        ({"operation_id": "getExtraordinaryEvent", "kind": "quota", "window_s": 60}, "limit"),
        ({"operation_id": "getExtraordinaryEvent", "kind": "quota", "limit": 5, "window_s": 0}, "window_s"),
        ({"operation_id": "getExtraordinaryEvent", "kind": "quota", "limit": 5, "window_s": 60, "times": 2}, "times"),
        (
            {"operation_id": "getExtraordinaryEvent", "kind": "quota", "limit": 5, "window_s": 60, "status": 503},
            "status",
        ),
        ({"operation_id": "getExtraordinaryEvent", "status": 503, "limit": 5}, "limit"),
    ],
)
def test_chance_and_quota_fields_the_spec_refuses_are_a_400_naming_them(client, fault, field):
    body = assert_error(client.post("/__mock/faults", json=fault), 400, "invalid_request")
    assert field in [detail["field"] for detail in body["details"]]
    assert faults(client) == []


def test_a_pact_export_leaves_a_quotas_429_out_as_it_does_every_injected_answer(client):
    freeze(client, "2026-11-21T10:00:00Z")
    add_fault(client, operation_id="getExtraordinaryEvent", kind="quota", limit=1, window_s=60)
    assert statuses(client, 2, {}) == ".q"
    document = client.get("/__mock/pact?consumer=retrier&provider=pix").json()
    assert len(document["interactions"]) == 1  # the lookup that went on
    assert document["metadata"]["mockServer"]["leftOut"] == [
        {"method": "GET", "path": PENDING_EVENT_PATH, "status": 429, "reason": "an injected fault answered"}
    ]


def test_the_mcp_tool_that_arms_faults_shows_the_chance_and_quota_fields_to_agents(specs):
    """The MCP tools are read from the admin spec: documenting the fields there shows them to agents."""
    schema = tools_of(specs)["mockCreateFault"].input_schema["properties"]["body"]
    assert {"probability", "seed", "jitter_ms", "limit", "window_s"} <= set(schema["properties"])
    assert "quota" in schema["properties"]["kind"]["enum"]
