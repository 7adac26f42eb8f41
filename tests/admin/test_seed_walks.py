"""Requests that answer about the whole session never walk a big seed on the event loop (issue 15): a snapshot
counts without walking, and the state export and a snapshot's document walk the seed in the export's worker
(a million packed events take seconds to unpack: every session was stalled meanwhile)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mock_server.app import create_app
from mock_server.domain.models import Event
from mock_server.settings import Settings
from mock_server.state.seed_storage import SeedEvents
from tests.builders import event_creation
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT, PENDING_EVENT_PATH

WINDOW = [{"start_time": "06:00:00-03:00", "amount": 1000}]


def new_event() -> dict[str, Any]:
    return event_creation()


def counted(client: Any, name: str) -> tuple[int, int]:
    """The counts of a snapshot taken now, checked against the state export."""
    taken = client.post(f"/__mock/snapshots/{name}")
    assert taken.status_code == 201, taken.text
    state = client.get("/__mock/state").json()
    counts = (taken.json()["events"], taken.json()["accounts"])
    assert counts == (len(state["events"]), len(state["accounts"]))
    return counts


def test_snapshot_counts_follow_creations_changes_loads_and_restores(client):
    seeded = counted(client, "seeded")
    assert client.post("/__mock/events", json=new_event()).status_code == 201
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={}).status_code == 200  # changed, not new
    registered = client.post(
        "/limits/account",
        json={
            "account_id": "0077-1",
            "registration_date": "2026-01-10T09:00:00-03:00",
            "limit": {"pix": {"withdraw": WINDOW}},
        },
    )
    assert registered.status_code == 201, registered.text
    assert (
        client.post(
            f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json={"pix": {"withdraw": WINDOW}}
        ).status_code
        == 201
    )
    assert counted(client, "changed") == (seeded[0] + 1, seeded[1] + 1)
    state = client.get("/__mock/state").json()
    state["events"], state["accounts"] = state["events"][:2], state["accounts"][:1]
    loaded = client.put("/__mock/state", json=state)
    assert loaded.status_code == 200, loaded.text
    assert (loaded.json()["events"], loaded.json()["accounts"]) == (2, 1)
    assert client.post("/__mock/events", json=new_event()).status_code == 201
    assert counted(client, "loaded") == (3, 1)
    assert client.post("/__mock/snapshots/changed/restore").status_code == 200
    assert counted(client, "restored") == (seeded[0] + 1, seeded[1] + 1)
    assert client.post("/__mock/reset").status_code == 200
    assert counted(client, "reset") == seeded


class HeldWalk:
    """SeedEvents' walk over its records, held (in whichever thread walks) until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walking, self.release = threading.Event(), threading.Event()
        walk = SeedEvents._pairs

        def held(seed: SeedEvents) -> Iterator[tuple[str, Event]]:
            self.walking.set()
            assert self.release.wait(10), "the bystander was never answered while the seed was being walked"
            yield from walk(seed)

        monkeypatch.setattr(SeedEvents, "_pairs", held)


def test_taking_a_snapshot_never_walks_the_seed(make_client, monkeypatch):
    def never(seed: SeedEvents) -> Iterator[tuple[str, Event]]:
        raise AssertionError("the seed was walked")

    monkeypatch.setattr(SeedEvents, "_pairs", never)
    with make_client() as http:
        assert http.post("/__mock/events", json=new_event()).status_code == 201
        taken = http.post("/__mock/snapshots/s")
        assert taken.status_code == 201, taken.text
        assert (taken.json()["events"], taken.json()["accounts"]) == (5, 2)


@pytest.mark.parametrize(
    ("prepare", "path"),
    [
        (None, "/__mock/state"),
        (None, "/__mock/state?format=yaml"),
        ("/__mock/snapshots/s", "/__mock/snapshots/s"),
    ],
)
def test_the_seed_is_walked_off_the_event_loop(specs, monkeypatch, prepare, path):
    """The walk is held in the thread that does it until a bystander session has been answered: had it run on
    the event loop, the bystander could never be answered (the held walk gives up after 10 s and the test
    fails). No timing is measured."""
    app = create_app(Settings(), specs)

    async def exchange() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as http:
            mine = {"X-Mock-Session": "mine"}
            if prepare:
                assert (await http.post(prepare, headers=mine)).status_code == 201
            walk = HeldWalk(monkeypatch)
            reading = asyncio.create_task(http.get(path, headers=mine))
            assert await asyncio.to_thread(walk.walking.wait, 10), "the seed was never walked"
            bystander = await http.get(PENDING_EVENT_PATH, headers={"X-Mock-Session": "bystander"})
            assert bystander.status_code == 200
            assert not reading.done()
            walk.release.set()
            answer = await reading
            assert answer.status_code == 200, answer.text
            assert PENDING_EVENT in answer.text

    asyncio.run(exchange())
