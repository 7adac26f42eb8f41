"""POST /__mock/events refuses an event_conciliation_key the session already uses (CONTRACT 3, "keys unique"),
wherever the user is: the seed, an event the session created, changed, restored or loaded; and the seed's
index of those keys is built off the event loop (state/conciliation_index.py): other sessions are answered while
it is being built."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import httpx

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.state import conciliation_index
from mock_server.state.conciliation_index import SeedIndex
from mock_server.state.seed_storage import SeedEvents
from tests.builders import event_creation
from tests.default_scenario import PAID_EVENT, PENDING_EVENT, PENDING_EVENT_PATH
from tests.helpers import assert_error

PENDING_KEYS = ("0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40", "1c8f5e3b-0d2a-4b4c-9f6e-7a3b2d0c8e51")  # PENDING_EVENT's
PAID_KEY = "5c0f7e3a-2b4d-4e6f-8a1c-7d9b3e5f1a77"  # PAID_EVENT's first


def new_event(*conciliation_keys: str, key: str | None = None) -> dict[str, Any]:
    """A valid creation body with these conciliation keys."""
    return event_creation(*conciliation_keys, key=key)


def fresh() -> str:
    return str(uuid.uuid4())


def clash(index: int, key: str, user: str) -> dict[str, str]:
    """The detail of a key already used (the message of the scenario checks)."""
    return {
        "field": f"event_conciliation_list[{index}].event_conciliation_key",
        "message": f"event_conciliation_key {key} is already used by event {user}",
    }


def refused(response: Any, *details: dict[str, str]) -> None:
    error = assert_error(response, 400, "invalid_request", [d["field"] for d in details])
    assert sorted(error["details"], key=lambda d: d["field"]) == sorted(details, key=lambda d: d["field"])


def created(response: Any) -> str:
    assert response.status_code == 201, response.text
    key: str = response.json()["extraordinary_event_conciliation_key"]
    return key


def test_a_seed_events_key_is_refused_in_any_letter_case(client):
    response = client.post("/__mock/events", json=new_event(fresh(), PENDING_KEYS[1].upper(), PAID_KEY))
    refused(response, clash(1, PENDING_KEYS[1], PENDING_EVENT), clash(2, PAID_KEY, PAID_EVENT))


def test_a_key_of_an_event_the_session_created_is_refused(client):
    first, second = fresh(), fresh()
    owner = created(client.post("/__mock/events", json=new_event(first, second)))
    refused(client.post("/__mock/events", json=new_event(fresh(), second.upper())), clash(1, second, owner))
    created(client.post("/__mock/events", json=new_event(fresh())))  # other keys are still free


def test_a_key_of_an_event_the_session_changed_is_refused(client):
    """Paying or canceling replaces the event in the session; its keys stay taken."""
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={}).status_code == 200
    refused(client.post("/__mock/events", json=new_event(PENDING_KEYS[0])), clash(0, PENDING_KEYS[0], PENDING_EVENT))
    mine = fresh()
    owner = created(client.post("/__mock/events", json=new_event(mine)))
    assert client.post(f"/__mock/events/{owner}/cancel").status_code == 200
    refused(client.post("/__mock/events", json=new_event(mine)), clash(0, mine, owner))


def test_two_equal_keys_in_one_body_are_refused(client):
    twice = fresh()
    response = client.post("/__mock/events", json=new_event(twice, fresh(), twice.upper(), PENDING_KEYS[0]))
    refused(
        response,
        {
            "field": "event_conciliation_list[2].event_conciliation_key",
            "message": f"event_conciliation_key {twice} appears more than once",
        },
        clash(3, PENDING_KEYS[0], PENDING_EVENT),
    )


def test_an_existing_event_key_is_a_409_before_its_conciliation_keys(client):
    response = client.post("/__mock/events", json=new_event(PENDING_KEYS[0], key=PENDING_EVENT.upper()))
    assert_error(response, 409, "event_already_exists")


def test_sessions_do_not_share_what_they_created_and_a_reset_frees_it(client):
    mine = fresh()
    created(client.post("/__mock/events", json=new_event(mine), headers={"X-Mock-Session": "a"}))
    created(client.post("/__mock/events", json=new_event(mine), headers={"X-Mock-Session": "b"}))
    assert client.post("/__mock/reset", headers={"X-Mock-Session": "a"}).status_code == 200
    created(client.post("/__mock/events", json=new_event(mine), headers={"X-Mock-Session": "a"}))


def test_a_restored_snapshot_brings_its_keys_back(client):
    mine = fresh()
    owner = created(client.post("/__mock/events", json=new_event(mine)))
    assert client.post("/__mock/snapshots/before").status_code == 201
    assert client.post("/__mock/reset").status_code == 200
    created(client.post("/__mock/events", json=new_event(mine)))  # free after the reset
    assert client.post("/__mock/snapshots/before/restore").status_code == 200
    refused(client.post("/__mock/events", json=new_event(mine)), clash(0, mine, owner))


def test_a_loaded_state_has_its_own_keys(client):
    """After PUT /__mock/state the keys taken are the state's: the scenario's are free until a reset."""
    state = client.get("/__mock/state").json()
    state["events"] = [e for e in state["events"] if e["extraordinary_event_conciliation_key"] == PAID_EVENT]
    assert client.put("/__mock/state", json=state).status_code == 200
    refused(client.post("/__mock/events", json=new_event(PAID_KEY)), clash(0, PAID_KEY, PAID_EVENT))
    created(client.post("/__mock/events", json=new_event(PENDING_KEYS[0])))
    assert client.post("/__mock/reset").status_code == 200
    refused(client.post("/__mock/events", json=new_event(PENDING_KEYS[0])), clash(0, PENDING_KEYS[0], PENDING_EVENT))


def test_the_index_is_built_off_the_event_loop_once_for_concurrent_creates(specs, monkeypatch):
    """The seed's index is held in its worker until a bystander session's lookup has been answered: had it
    been built on the event loop, the loop would be stuck in it and the bystander never answered (the held
    build gives up after 10 s and the test fails). Two creates wait for the one build. No timing is measured."""
    app = create_app(Settings(), specs)  # its own seeds: no index built yet
    building, release = threading.Event(), threading.Event()
    builds: list[SeedEvents] = []

    class HeldIndex(SeedIndex):
        def __init__(self, seed: SeedEvents) -> None:
            builds.append(seed)
            building.set()
            assert release.wait(10), "the bystander was never answered while the index was being built"
            super().__init__(seed)

    monkeypatch.setattr(conciliation_index, "SeedIndex", HeldIndex)

    async def exchange() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as http:
            creates = [
                asyncio.create_task(
                    http.post("/__mock/events", json=new_event(*keys), headers={"X-Mock-Session": session})
                )
                for session, keys in (("one", [fresh()]), ("two", [PENDING_KEYS[0]]))
            ]
            assert await asyncio.to_thread(building.wait, 10), "the index was never built"
            bystander = await http.get(PENDING_EVENT_PATH, headers={"X-Mock-Session": "bystander"})
            assert bystander.status_code == 200
            assert not any(c.done() for c in creates)  # answered while the index was still being built
            release.set()
            one, two = await asyncio.gather(*creates)
            assert one.status_code == 201, one.text
            assert two.status_code == 400
            assert two.json()["details"] == [clash(0, PENDING_KEYS[0], PENDING_EVENT)]

    asyncio.run(exchange())
    assert len(builds) == 1


def test_the_events_of_a_big_file_read_the_lean_way_are_indexed(tmp_path, make_client):
    """A JSON-syntax scenario file is packed a batch at a time (scenarios/stream.py): its keys are found too."""
    events = [new_event(fresh(), fresh(), key=fresh()) for _ in range(30)]
    (tmp_path / "many.yaml").write_text(json.dumps({"description": "many", "events": events, "accounts": []}))
    with make_client(fixtures=tmp_path, scenario="many") as http:
        for event in events:
            key = event["event_conciliation_list"][1]["event_conciliation_key"]
            answer = http.post("/__mock/events", json=new_event(key))
            assert answer.status_code == 400, answer.text
            assert answer.json()["details"] == [clash(0, key, event["extraordinary_event_conciliation_key"])]
