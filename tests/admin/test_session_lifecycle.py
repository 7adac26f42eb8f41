"""Session lifecycle (issue 11 item 2, issue 16 item 5): the registry's routes, visible eviction, 410 for an
evicted explicit session, nothing evicted while in flight or by health or by calls that create no session
explicitly."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import httpx
import pytest

from mock_server.app import create_app
from mock_server.cli import _parser, settings_from
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import assert_error

ACCOUNT = "4444-000001"
TOKEN = {"Authorization": "Bearer t0ken"}
INSTANT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def session(name: str, **extra: str) -> dict[str, str]:
    return {"X-Mock-Session": name, **extra}


def registration(account_id: str = ACCOUNT) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1000}]}},
    }


def names(client, headers: dict[str, str] | None = None) -> list[str]:
    return [s["name"] for s in client.get("/__mock/sessions", headers=headers).json()["sessions"]]


# --- the routes ---------------------------------------------------------------------------------------------


def test_the_listing_shows_each_session(make_client):
    client = make_client()
    assert client.post("/limits/account", json=registration(), headers=session("a")).status_code == 201
    assert client.post("/__mock/reset", json={"scenario": "empty"}, headers=session("b")).status_code == 200
    listing = client.get("/__mock/sessions").json()
    assert listing["max_sessions"] == 256
    assert listing["evictions"] == 0
    assert listing["evicted"] == []
    a, b = listing["sessions"]  # least recently used first; the listing itself made no session
    assert (a["name"], a["scenario"], a["explicit"], a["journal_size"], a["in_flight"]) == ("a", "default", False, 1, 0)
    assert (b["name"], b["scenario"], b["explicit"], b["journal_size"]) == ("b", "empty", True, 0)
    assert INSTANT.match(a["last_used"]) and INSTANT.match(a["created_at"])
    assert a["last_used"] <= b["last_used"]


def test_create_show_and_delete_a_session(make_client):
    client = make_client()
    made = client.post("/__mock/sessions", json={"name": "job-42", "scenario": "payments"})
    assert made.status_code == 201
    assert made.headers["location"] == "/__mock/sessions/job-42"
    assert made.json()["explicit"] is True and made.json()["scenario"] == "payments"
    assert client.get("/__mock/sessions/job-42").json()["name"] == "job-42"
    assert client.get("/__mock/health", headers=session("job-42")).json()["scenario"] == "payments"
    assert_error(client.post("/__mock/sessions", json={"name": "job-42"}), 409, "session_already_exists")
    assert_error(client.post("/__mock/sessions", json={"name": "x", "scenario": "nope"}), 404, "scenario_not_found")
    assert "x" not in names(client)
    assert client.delete("/__mock/sessions/job-42").status_code == 204
    assert_error(client.get("/__mock/sessions/job-42"), 404, "session_not_found")
    assert_error(client.delete("/__mock/sessions/job-42"), 404, "session_not_found")
    # its next call starts afresh, implicitly, on the server's scenario
    assert client.get("/__mock/health", headers=session("job-42")).json()["scenario"] == "default"


def test_a_session_made_replacing_another_deletes_it_in_the_same_call(make_client):
    client = make_client()
    assert client.post("/__mock/sessions", json={"name": "test-1"}).status_code == 201
    assert client.post("/limits/account", json=registration(), headers=session("test-1")).status_code == 201
    made = client.post("/__mock/sessions", json={"name": "test-2", "scenario": "empty", "replacing": "test-1"})
    assert made.status_code == 201 and made.json()["explicit"] is True and made.json()["scenario"] == "empty"
    assert names(client) == ["test-2"]
    # nothing of that name: nothing deleted, the session made all the same
    assert client.post("/__mock/sessions", json={"name": "test-3", "replacing": "gone"}).status_code == 201
    # replacing itself: a fresh session of that name
    assert client.post("/limits/account", json=registration(), headers=session("test-3")).status_code == 201
    assert client.post("/__mock/sessions", json={"name": "test-3", "replacing": "test-3"}).status_code == 201
    assert client.get("/__mock/sessions/test-3").json()["journal_size"] == 0


def test_a_refused_replacement_deletes_nothing(make_client):
    client = make_client()
    for name in ("kept", "taken"):
        assert client.post("/__mock/sessions", json={"name": name}).status_code == 201
    taken = client.post("/__mock/sessions", json={"name": "taken", "replacing": "kept"})
    assert_error(taken, 409, "session_already_exists")
    missing = client.post("/__mock/sessions", json={"name": "new", "scenario": "nope", "replacing": "kept"})
    assert_error(missing, 404, "scenario_not_found")
    bad = client.post("/__mock/sessions", json={"name": "new", "replacing": "a b"})
    assert_error(bad, 400, "invalid_request", fields=["replacing"])
    assert names(client) == ["kept", "taken"]


def test_one_patch_deletes_a_batch_of_sessions_and_makes_the_next(make_client):
    client = make_client()
    for name in ("t1", "t2"):
        assert client.post("/__mock/sessions", json={"name": name}).status_code == 201
    assert client.post("/limits/account", json=registration(), headers=session("t1")).status_code == 201
    create = [{"name": "t3"}, {"name": "t4", "seed": 7}, {"name": "t6", "scenario": "empty"}, {"name": "t1"}]
    changed = client.patch("/__mock/sessions", json={"create": create, "delete": ["t1", "t2", "gone"]})
    assert changed.status_code == 200
    body = changed.json()
    assert body["deleted"] == ["t1", "t2"]  # "gone" was none: nothing to do
    assert [(s["name"], s["scenario"], s["explicit"]) for s in body["created"]] == [
        ("t3", "default", True),
        ("t4", "default", True),
        ("t6", "empty", True),
        ("t1", "default", True),  # deleted and made afresh
    ]
    assert names(client) == ["t3", "t4", "t6", "t1"]
    assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("t1")).status_code == 404  # a fresh t1
    assert client.get(PENDING_EVENT_PATH, headers=session("t6")).status_code == 404  # the empty scenario
    # the seed: the same ids as a session made by POST with that seed
    assert client.post("/__mock/sessions", json={"name": "by-post", "seed": 7}).status_code == 201
    assert first_id(client, "t4") == first_id(client, "by-post")
    # only deletions, only creations, neither
    assert client.patch("/__mock/sessions", json={"delete": ["t3", "t4", "t6"]}).json() == {
        "created": [],
        "deleted": ["t3", "t4", "t6"],
    }
    assert client.patch("/__mock/sessions", json={"create": [{"name": "t5"}]}).json()["deleted"] == []
    assert client.patch("/__mock/sessions", json={}).json() == {"created": [], "deleted": []}
    assert names(client) == ["t1", "by-post", "t5"]


def test_a_refused_patch_deletes_and_makes_nothing(make_client):
    client = make_client()
    for name in ("kept", "taken"):
        assert client.post("/__mock/sessions", json={"name": name}).status_code == 201
    taken = client.patch("/__mock/sessions", json={"create": [{"name": "new"}, {"name": "taken"}], "delete": ["kept"]})
    assert_error(taken, 409, "session_already_exists")
    twice = client.patch("/__mock/sessions", json={"create": [{"name": "new"}, {"name": "new"}], "delete": ["kept"]})
    assert_error(twice, 409, "session_already_exists")
    missing = client.patch(
        "/__mock/sessions", json={"create": [{"name": "new"}, {"name": "x", "scenario": "nope"}], "delete": ["kept"]}
    )
    assert_error(missing, 404, "scenario_not_found")
    bad = client.patch("/__mock/sessions", json={"create": [{"name": "a b"}], "delete": ["kept", "c d"]})
    assert_error(bad, 400, "invalid_request", fields=["create[0].name", "delete[1]"])
    too_many = client.patch("/__mock/sessions", json={"create": [{"name": f"s{i}"} for i in range(65)]})
    assert_error(too_many, 400, "invalid_request", fields=["create"])
    assert names(client) == ["kept", "taken"]


def test_a_batch_never_evicts_its_own_sessions_and_one_the_cap_cannot_hold_is_refused_whole(make_client):
    """Issue 43 M3: 20 creations under --max-sessions 8 answered 200 listing 20 created, 12 of them 410 at once."""
    client = make_client(max_sessions=8)
    for name in ("old1", "old2"):
        assert client.post("/__mock/sessions", json={"name": name}).status_code == 201
    too_many = client.patch("/__mock/sessions", json={"create": [{"name": f"b{i}"} for i in range(20)]})
    body = assert_error(too_many, 429, "too_many_sessions")
    assert "makes 20 sessions" in body["message"] and "--max-sessions 8" in body["message"]
    assert "Nothing was done" in body["message"]
    listing = client.get("/__mock/sessions").json()
    assert [s["name"] for s in listing["sessions"]] == ["old1", "old2"] and listing["evictions"] == 0
    # the default session may not go: beside it, 7 of 8 fit, 8 do not
    assert client.post("/limits/account", json=registration()).status_code == 201
    eight = client.patch("/__mock/sessions", json={"create": [{"name": f"b{i}"} for i in range(8)]})
    assert_error(eight, 429, "too_many_sessions")
    seven = client.patch("/__mock/sessions", json={"create": [{"name": f"b{i}"} for i in range(7)]})
    assert seven.status_code == 200
    assert [s["name"] for s in seven.json()["created"]] == [f"b{i}" for i in range(7)]
    assert names(client) == ["default", *(f"b{i}" for i in range(7))]  # old1 and old2 made room
    for i in range(7):  # every session the batch listed is there
        assert client.get(f"/__mock/sessions/b{i}").status_code == 200
    # deletions in the same call make room for a batch as big as the cap allows
    again = client.patch(
        "/__mock/sessions",
        json={"create": [{"name": f"c{i}"} for i in range(7)], "delete": [f"b{i}" for i in range(7)]},
    )
    assert again.status_code == 200 and names(client) == ["default", *(f"c{i}" for i in range(7))]


def first_id(client, name: str) -> str:
    proposal = client.post(
        "/limits/account/0001-123456/limit_update_request",
        json={"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}},
        headers=session(name),
    )
    return str(proposal.json()["limit_update_request_id"])


def test_a_seed_given_to_a_session_gives_the_same_ids_whatever_its_name(make_client):
    """The pytest plugin names sessions per run: a test's seed must not depend on the name."""
    client = make_client()
    assert client.post("/__mock/sessions", json={"name": "run-1", "seed": 3}).status_code == 201
    assert client.post("/__mock/reset", json={"seed": 3}, headers=session("run-2")).status_code == 200
    assert client.post("/__mock/reset", json={"seed": 4}, headers=session("other")).status_code == 200
    assert first_id(client, "run-1") == first_id(client, "run-2") != first_id(client, "other")
    seeded_server = make_client(seed=3)  # --seed mixes the session's name in: sessions differ
    assert first_id(seeded_server, "run-1") != first_id(seeded_server, "run-2")


def test_a_session_name_the_server_does_not_hold_is_404_however_written(make_client):
    client = make_client()
    assert_error(client.get("/__mock/sessions/a b"), 404, "session_not_found")
    assert_error(client.delete("/__mock/sessions/" + "x" * 100), 404, "session_not_found")


def test_the_routes_need_the_admin_token(make_client):
    client = make_client(admin_token="t0ken")
    assert_error(client.get("/__mock/sessions"), 401, "unauthorized")
    assert_error(client.post("/__mock/sessions", json={"name": "a"}), 401, "unauthorized")
    assert_error(client.delete("/__mock/sessions/default"), 401, "unauthorized")
    assert client.get("/__mock/sessions", headers=TOKEN).status_code == 200


# --- health makes no session --------------------------------------------------------------------------------


def test_health_never_makes_a_session(make_client):
    client = make_client()
    for i in range(5):
        assert client.get("/__mock/health", headers=session(f"probe-{i}")).status_code == 200
        assert client.get(f"/__session/url-probe-{i}/__mock/health").status_code == 200
    assert client.get("/openapi.yaml", headers=session("spec")).status_code == 200
    for page in ("/__mock/ui", "/__mock/docs"):  # token-free pages: they make no session either
        assert client.get(page, headers=session("page")).status_code == 200
    assert names(client) == []
    assert client.post("/__mock/reset", json={"scenario": "recipients"}, headers=session("r")).status_code == 200
    assert client.get("/__mock/health", headers=session("r")).json() == {"status": "ok", "scenario": "recipients"}


def test_ten_times_the_cap_of_unauthenticated_health_calls_evict_nothing(make_client):
    """Issue 16 item 5: they used to wipe every session, default included, under --admin-token."""
    client = make_client(admin_token="t0ken", max_sessions=4)
    assert client.post("/limits/account", json=registration()).status_code == 201  # default
    assert client.post("/limits/account", json=registration(), headers=session("keep")).status_code == 201
    for i in range(40):
        assert client.get("/__mock/health", headers=session(f"h{i}")).status_code == 200
    assert names(client, TOKEN) == ["default", "keep"]
    assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=TOKEN).status_code == 200
    assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("keep", **TOKEN)).status_code == 200


# --- eviction -----------------------------------------------------------------------------------------------


def test_one_session_more_than_the_cap_round_robin_loses_nothing_silently(make_client, caplog):
    """Issue 16 item 5: 257 sessions used round-robin (the default cap, 256, and one) lost 100% of their writes with
    no sign. Now the evicted explicit session answers 410 session_evicted, and the eviction is logged and counted.
    With a cap of 8: the rule is the same at any cap (the default's value: test_the_listing_shows_each_session)."""
    client = make_client(max_sessions=8)
    for i in range(9):
        assert client.post("/__mock/reset", headers=session(f"s{i}")).status_code == 200
        response = client.post("/limits/account", json=registration(), headers=session(f"s{i}"))
        assert response.status_code == 201
    with caplog.at_level(logging.WARNING, logger="mock_server"):
        lost = client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("s0"))
    body = assert_error(lost, 410, "session_evicted")
    assert "'s0' was evicted at" in body["message"] and "--max-sessions 8" in body["message"]
    # the public API answers 410 too: never a fresh seed that would accept the write again
    assert_error(client.post("/limits/account", json=registration(), headers=session("s0")), 410, "session_evicted")
    assert_error(client.get("/__mock/sessions/s0"), 410, "session_evicted")
    listing = client.get("/__mock/sessions").json()
    assert listing["evictions"] == 1
    assert [e["name"] for e in listing["evicted"]] == ["s0"]
    assert len(listing["sessions"]) == 8
    for i in range(1, 9):  # every other session kept its write
        assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=session(f"s{i}")).status_code == 200


def test_the_eviction_is_logged(make_client, caplog):
    client = make_client(max_sessions=1)
    with caplog.at_level(logging.WARNING, logger="mock_server"):
        client.post("/__mock/reset", headers=session("a"))
        client.post("/__mock/reset", headers=session("b"))
    (record,) = [r for r in caplog.records if "evicted" in r.getMessage()]
    assert "session 'a' evicted (explicit: later calls answer 410" in record.getMessage()


def test_a_reset_brings_an_evicted_session_back(make_client):
    client = make_client(max_sessions=1)
    client.post("/__mock/reset", headers=session("a"))
    client.post("/__mock/reset", headers=session("b"))
    assert_error(client.get("/__mock/clock", headers=session("a")), 410, "session_evicted")
    assert client.post("/__mock/reset", headers=session("a")).status_code == 200
    assert client.get("/__mock/clock", headers=session("a")).status_code == 200
    # bringing a back evicted b, the least recently used: a is no longer listed as evicted
    assert [e["name"] for e in client.get("/__mock/sessions").json()["evicted"]] == ["b"]


def test_deleting_an_evicted_session_forgets_it(make_client):
    client = make_client(max_sessions=1)
    client.post("/__mock/sessions", json={"name": "a"})
    client.post("/__mock/sessions", json={"name": "b"})
    assert client.delete("/__mock/sessions/a").status_code == 204
    assert client.get("/__mock/clock", headers=session("a")).status_code == 429  # b is explicit: not evicted
    assert client.delete("/__mock/sessions/b").status_code == 204
    assert client.get("/__mock/clock", headers=session("a")).status_code == 200  # afresh


def test_sessions_that_wrote_nothing_are_evicted_first_and_start_afresh(make_client):
    client = make_client(max_sessions=3)
    client.post("/__mock/sessions", json={"name": "explicit"})
    assert client.post("/limits/account", json=registration(), headers=session("i1")).status_code == 201
    assert client.get("/__mock/clock", headers=session("i2")).status_code == 200
    client.get("/__mock/clock", headers=session("explicit"))  # explicit is now the most recent; i1 the least
    assert client.get("/__mock/clock", headers=session("i3")).status_code == 200
    # i2 wrote nothing: it goes before i1, which acknowledged a registration, though i1 is older
    assert names(client) == ["i1", "explicit", "i3"]
    assert client.get(PENDING_EVENT_PATH, headers=session("i2")).status_code == 200  # back from the seed
    assert client.get("/__mock/sessions").json()["evictions"] == 2  # i2 came back and pushed out i3


def test_an_implicit_session_that_acknowledged_a_write_answers_410_once_evicted(make_client):
    """Issue 24, item 4: its acknowledged writes must never read as a silent 404."""
    client = make_client(max_sessions=2)
    assert client.post("/limits/account", json=registration(), headers=session("wrote")).status_code == 201
    assert client.get("/__mock/clock", headers=session("other")).status_code == 200
    assert (
        client.get("/__mock/clock", headers=session("third")).status_code == 200
    )  # pushes out other: it wrote nothing
    assert client.post("/limits/account", json=registration(), headers=session("third")).status_code == 201
    assert client.get("/__mock/clock", headers=session("fourth")).status_code == 200  # both wrote: the older goes
    body = assert_error(client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("wrote")), 410, "session_evicted")
    assert "'wrote' was evicted" in body["message"]
    assert_error(client.post("/limits/account", json=registration(), headers=session("wrote")), 410, "session_evicted")
    assert "wrote" in [e["name"] for e in client.get("/__mock/sessions").json()["evicted"]]
    assert client.post("/__mock/reset", headers=session("wrote")).status_code == 200  # made again: on it goes
    assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("wrote")).status_code == 404


def test_a_refused_or_read_only_call_is_no_acknowledged_write(make_client):
    client = make_client(max_sessions=1)
    bad = client.post("/limits/account", json={"account_id": ""}, headers=session("refused"))
    assert bad.status_code == 400
    verify = {"operation_id": "registerAccountLimit", "status": 201, "times": 0}
    assert client.post("/__mock/verify", json=verify, headers=session("refused")).status_code == 200
    assert client.get("/__mock/clock", headers=session("next")).status_code == 200  # evicts refused: no record
    assert client.get("/__mock/clock", headers=session("refused")).status_code == 200


def test_calls_that_create_no_session_explicitly_never_evict_an_explicit_one(make_client):
    """Public calls need no token: under --admin-token they must not push out the sessions tests made."""
    client = make_client(admin_token="t0ken", max_sessions=2)
    for name in ("a", "b"):
        assert client.post("/__mock/reset", headers=session(name, **TOKEN)).status_code == 200
        assert client.post("/limits/account", json=registration(), headers=session(name)).status_code == 201
    refused = client.post("/limits/account", json=registration(), headers=session("intruder"))
    body = assert_error(refused, 429, "too_many_sessions")
    assert "--max-sessions 2" in body["message"]
    for name in ("a", "b"):
        assert client.get(f"/__mock/accounts/{ACCOUNT}", headers=session(name, **TOKEN)).status_code == 200
    assert names(client, TOKEN) == ["a", "b"]


def test_default_is_never_evicted(make_client):
    client = make_client(max_sessions=2)
    assert client.post("/limits/account", json=registration()).status_code == 201
    for i in range(5):
        assert client.get("/__mock/clock", headers=session(f"s{i}")).status_code == 200
    assert client.get(f"/__mock/accounts/{ACCOUNT}").status_code == 200


def test_a_session_with_a_request_in_flight_is_not_evicted():
    """Issue 16 item 5: a request in flight when its session was evicted was answered 201, then lost."""
    app = create_app(Settings(max_sessions=2, validate_responses=True))

    async def scenario() -> tuple[int, int, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://mock") as client:
            await client.post("/__mock/reset", headers=session("slow"))
            fault = {"operation_id": "registerAccountLimit", "delay_ms": 300}  # a delay only: then handled
            await client.post("/__mock/faults", json=fault, headers=session("slow"))
            slow = asyncio.create_task(client.post("/limits/account", json=registration(), headers=session("slow")))
            await asyncio.sleep(0.05)  # the slow request holds its session now
            crowd = [await client.post("/__mock/reset", headers=session(f"c{i}")) for i in range(3)]
            written = await slow
            after = await client.get(f"/__mock/accounts/{ACCOUNT}", headers=session("slow"))
            return written.status_code, after.status_code, max(c.status_code for c in crowd)

    written, after, crowd = asyncio.run(scenario())
    assert (written, after, crowd) == (201, 200, 200)


# --- --max-sessions ----------------------------------------------------------------------------------------


def test_max_sessions_option_and_environment(monkeypatch):
    assert settings_from(_parser().parse_args([])).max_sessions == 256
    assert settings_from(_parser().parse_args(["--max-sessions", "3"])).max_sessions == 3
    monkeypatch.setenv("MOCK_SERVER_MAX_SESSIONS", "7")
    assert settings_from(_parser().parse_args([])).max_sessions == 7
    for bad in ("0", "-1", "many"):
        with pytest.raises(SystemExit) as exit_:
            _parser().parse_args(["--max-sessions", bad])
        assert exit_.value.code == 2


def test_the_listing_reports_the_configured_cap(make_client):
    assert make_client(max_sessions=5).get("/__mock/sessions").json()["max_sessions"] == 5
