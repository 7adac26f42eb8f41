"""`PixMockContainer` against the real image (`make test-containers`: `make image` first, then these, marker
`containers`), through testcontainers-python and a Docker API (Podman's here, started by conftest.py).

As an integrator's CI uses it: its own fixtures directory, a frozen clock, a seed, sessions side by side.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from testcontainers.core.exceptions import ContainerStartException

from mock_server.testcontainers import PixMockContainer

pytestmark = pytest.mark.containers

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "build" / "test-containers.json"
FROZEN_AT = "2026-11-21T10:00:00-03:00"
EVENT = "6f1d2c3b-4a5e-4f60-8b7c-9d0e1f2a3b4c"
TOKEN = "ci-admin-token"
# A scenario of the integrator's own: one event with two instalments, nothing paid yet.
SCENARIO = f"""\
description: One pending event of the integrator's own, two instalments.
events:
  - extraordinary_event_conciliation_key: {EVENT}
    security_key: 1e2feb89-414c-443c-9027-c4d1c386bbc4
    investment_key: 78e51061-7311-48a3-82ce-6f447ed4d57b
    amortization_type: early_amortization
    total_expected_amount: 1200.00
    reference_date: 2026-11-01
    due_date: 2026-11-30
    paid_at: null
    event_conciliation_list:
      - event_conciliation_key: 35bf992d-c9e9-4616-a12e-7696a6cecc1b
        installment_key: e4b06ce6-0741-47a8-bce4-2c8218072e8c
      - event_conciliation_key: 9b810e76-6ec9-4286-a3ca-828dd5f4b3b2
        installment_key: b2221a58-008a-45a6-8464-7159c324c985
accounts: []
"""


def record(name: str, value: Any) -> None:
    """A figure of this run, kept in build/test-containers.json (the docs quote them; no test asserts a time)."""
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    figures[name] = value
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    """The integrator's fixtures directory, readable by the image's uid 10001 (tmp_path itself is 0700)."""
    directory = tmp_path / "scenarios"
    directory.mkdir()
    (directory / "ledger.yaml").write_text(SCENARIO)
    for path in (tmp_path, directory, directory / "ledger.yaml"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return directory


@pytest.fixture
def mock(image: str, fixtures: Path) -> Iterator[PixMockContainer]:
    container = (
        PixMockContainer(image)
        .with_fixtures(fixtures)
        .with_scenario("ledger")
        .with_clock(FROZEN_AT)
        .with_seed(7)
        .with_admin_token(TOKEN)
    )
    started = time.monotonic()
    with container:
        record("start_to_ready_s", round(time.monotonic() - started, 2))
        yield container


def admin(mock: PixMockContainer, session: str) -> httpx.Client:
    return httpx.Client(
        base_url=mock.get_url(),
        headers={"X-Mock-Session": session, "Authorization": f"Bearer {TOKEN}"},
        timeout=10,
        trust_env=False,
    )


def lookup(client: httpx.Client) -> dict[str, Any]:
    response = client.get(f"/event_conciliation/extraordinary_event/{EVENT}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_an_event_paid_in_one_session_leaves_the_other_untouched(mock: PixMockContainer) -> None:
    """The issue's integrator test: two sessions through session(name), an event paid in one, the other untouched."""
    alice, bob = mock.session("alice"), mock.session("bob")
    assert alice.url == f"{mock.get_url()}/__session/alice"
    assert alice.client.get("/__mock/health").json() == {"status": "ok", "scenario": "ledger"}
    scenarios = alice.client.get("/__mock/scenarios").json()
    assert [s["name"] for s in scenarios["scenarios"]] == ["ledger"]  # the mounted directory, not the image's

    alice.pay(EVENT)  # through the admin token session() was given

    assert lookup(alice.client)["status"] == "paid"
    assert lookup(alice.client)["paid_at"] == "2026-11-21"  # the frozen clock's date at -03:00
    untouched = lookup(bob.client)
    assert untouched["status"] == "pending_conciliation"
    assert untouched["paid_at"] is None
    assert bob.client.get("/__mock/clock").json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
    assert [event["status"] for event in bob.state()["events"]] == ["pending_conciliation"]


def test_the_clients_session_gave_out_close_when_the_container_stops(image: str) -> None:
    with PixMockContainer(image) as mock:
        http = mock.session("carol").client
        assert http.get("/__mock/health").status_code == 200
    assert http.is_closed


def test_the_seed_makes_a_session_generate_the_same_ids_again_after_a_reset(mock: PixMockContainer) -> None:
    event = {
        "security_key": "1e2feb89-414c-443c-9027-c4d1c386bbc4",
        "investment_key": "78e51061-7311-48a3-82ce-6f447ed4d57b",
        "amortization_type": "early_amortization",
        "total_expected_amount": 10.0,
        "reference_date": "2026-11-01",
        "due_date": "2026-11-30",
        "event_conciliation_list": [
            {
                "event_conciliation_key": "0c9a4e1b-3d2f-4a6b-8e7c-5f1d2a3b4c5d",
                "installment_key": "e4b06ce6-0741-47a8-bce4-2c8218072e8c",
            }
        ],
    }
    keys = []
    with admin(mock, "carol") as carol:
        for _ in range(2):
            created = carol.post("/__mock/events", json=event)
            assert created.status_code == 201, created.text
            keys.append(created.json()["extraordinary_event_conciliation_key"])
            assert carol.post("/__mock/reset").status_code == 200
    assert keys[0] == keys[1]


def test_the_admin_token_is_asked_for(mock: PixMockContainer) -> None:
    with httpx.Client(base_url=mock.get_url(), timeout=10, trust_env=False) as anonymous:
        assert anonymous.get("/__mock/health").status_code == 200  # health needs no token
        assert anonymous.get("/__mock/state").status_code == 401


def test_the_container_answers_to_the_docker_hosts_name(image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote Docker host (CI's DOCKER_HOST=tcp://docker:2375) makes get_container_host_ip() a name, `docker`;
    here TC_HOST names this machine by its host name (which /etc/hosts resolves to itself, as the CI's DNS resolves
    `docker` to its Docker service). The server answers under that name and still refuses others: the
    DNS-rebinding guard stays on."""
    from testcontainers.core.config import testcontainers_config

    name = socket.gethostname().lower()
    monkeypatch.setattr(testcontainers_config, "tc_host_override", name)
    with PixMockContainer(image) as mock:
        url = mock.get_url()
        assert httpx.URL(url).host == name
        with httpx.Client(base_url=url, timeout=10, trust_env=False) as client:
            assert client.get("/__mock/health").status_code == 200  # Host: NAME:PORT
            refused = client.get("/__mock/health", headers={"Host": "rebound.example"})
            assert refused.status_code == 403
            assert refused.json()["code"] == "host_not_allowed"


def test_a_server_that_cannot_start_fails_start_at_once_with_its_log(image: str, fixtures: Path) -> None:
    """A scenario the fixtures do not hold: the server exits with a usage error; start() says so, with the
    server's own words, as soon as the container has exited (not after the whole startup timeout)."""
    container = PixMockContainer(image, startup_timeout=120).with_fixtures(fixtures).with_scenario("missing")
    engine = container.get_docker_client().client
    before = {c.id for c in engine.containers.list(all=True)}
    # the container exited (podman may say stopped), rather than "did not answer within 120 s": not timed out.
    # In a `with` (issue 43 M4): its cleanup stops the container again, which raised the engine's NotFound instead.
    exited = r"container (exited|stopped|dead) before it was healthy"
    with pytest.raises(ContainerStartException, match=exited) as e, container:
        pytest.fail("the block must not run")
    assert "no scenario named 'missing'" in str(e.value)  # the server's own words, from its log
    engine = container.get_docker_client().client
    left = {c.id for c in engine.containers.list(all=True)} - before
    assert not left, left  # removed, not left behind
    container.stop()  # and again: nothing to do
