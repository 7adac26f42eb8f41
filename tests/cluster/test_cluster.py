"""`make cluster-test`: two mock-server processes behind nginx (scripts/cluster.py), sessions sticking to one.

Not part of `make test` (marker `cluster`): it needs nginx, which the make target installs when missing.
The acceptance flows of the docs' walkthrough (docs/api-by-example.md) run in parallel sessions through the
balancer, half naming their session in the X-Mock-Session header, half in the /__session/NAME/ path prefix; then
each process is asked directly which sessions it holds.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
READY = "mock-cluster ready on "
SESSIONS = 24
PARTLY_PAID_EVENT = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"  # partly paid in the default scenario
FROZEN_AT = "2026-11-21T10:00:00-03:00"


@dataclass(frozen=True)
class Cluster:
    balancer: str
    processes: list[str]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.fail("nginx is not installed: run `make cluster-test`, which installs it")
    command = [sys.executable, str(ROOT / "scripts" / "cluster.py"), "--processes", "2", "--port", str(_free_port())]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        line = process.stdout.readline()
        assert line.startswith(READY), f"no ready line, got {line!r} (exit {process.poll()})"
        balancer, rest = line[len(READY) :].split(" ", 1)
        processes = rest.split(": ", 1)[1].rstrip(")\n").split()
        assert len(processes) == 2
        yield Cluster(balancer, processes)
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()


def _session_client(cluster: Cluster, index: int) -> httpx.Client:
    """Even sessions name themselves in the header, odd ones in the path prefix."""
    name = f"flow-{index:02d}"
    if index % 2 == 0:
        return httpx.Client(base_url=cluster.balancer, headers={"X-Mock-Session": name}, timeout=30)
    return httpx.Client(base_url=f"{cluster.balancer}/__session/{name}", timeout=30)


def _flow(cluster: Cluster, index: int) -> dict[str, Any]:
    """The docs' walkthrough in one session: register, limit change, recipient list, lookup, admin pay."""
    account = f"0003-{index:06d}"
    window = {"start_time": "06:00:00-03:00", "amount": 500000}
    with _session_client(cluster, index) as pix:
        assert pix.post("/__mock/reset", json={"scenario": "default"}).status_code == 200
        assert pix.put("/__mock/clock", json={"now": FROZEN_AT}).status_code == 200
        registered = pix.post(
            "/limits/account",
            json={"account_id": account, "registration_date": FROZEN_AT, "limit": {"pix": {"withdraw": [window]}}},
        )
        assert registered.status_code == 201, registered.text
        change = pix.post(
            f"/limits/account/{account}/limit_update_request",
            json={"pix": {"withdraw": [{**window, "amount": 400000 + index}]}},
        )
        assert change.status_code == 201, change.text
        assert change.json()["limit_update_request_status"] == "applied"
        listed = pix.post(
            f"/limits/account/{account}/recipient_list",
            json={"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 100000}]}}},
        )
        assert listed.status_code == 201, listed.text
        added = pix.post(
            f"/limits/account/{account}/recipient_list/recipient", json={"document_number": "123.456.789-09"}
        )
        assert added.status_code == 201, added.text
        looked_up = pix.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        assert looked_up.status_code == 200
        assert looked_up.json()["status"] == "pending_conciliation"
        seeded = pix.get(f"/event_conciliation/extraordinary_event/{PARTLY_PAID_EVENT}").json()["total_paid_amount"]
        paid = pix.post(f"/__mock/events/{PARTLY_PAID_EVENT}/pay", json={"amount": index + 1})
        assert paid.status_code == 200, paid.text
        assert paid.json()["total_paid_amount"] == seeded + index + 1
        state = pix.get(f"/__mock/accounts/{account}").json()
        assert state["limit"]["pix"]["withdraw"][0]["amount"] == 400000 + index
        journal = pix.get("/__mock/requests").json()["requests"]
        assert [entry["operation_id"] for entry in journal] == [
            "registerAccountLimit",
            "createLimitUpdateRequest",
            "createRecipientList",
            "addRecipient",
            "getExtraordinaryEvent",
            "getExtraordinaryEvent",
        ]
        recipient = added.json()["recipient_id"]
        return {"account": account, "journal": journal, "recipient": recipient, "seeded_paid": seeded}


@pytest.fixture(scope="module")
def flows(cluster: Cluster) -> dict[int, dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: _flow(cluster, i), range(SESSIONS)))
    return dict(enumerate(results))


def _owners(cluster: Cluster, index: int, account: str) -> list[str]:
    """The processes that hold the session's account, asked directly (a process that does not hold the session
    makes it afresh from the scenario, where the account does not exist)."""
    name = f"flow-{index:02d}"
    owners = []
    for process in cluster.processes:
        answer = httpx.get(f"{process}/__mock/accounts/{account}", headers={"X-Mock-Session": name}, timeout=30)
        assert answer.status_code in (200, 404), answer.text
        if answer.status_code == 200:
            owners.append(process)
    return owners


def test_the_balancer_answers_health_and_both_processes_are_up(cluster: Cluster) -> None:
    assert httpx.get(f"{cluster.balancer}/__mock/health").json() == {"status": "ok", "scenario": "default"}
    for process in cluster.processes:
        assert httpx.get(f"{process}/__mock/health").status_code == 200


def test_every_session_lives_on_exactly_one_process_and_both_processes_serve(
    cluster: Cluster, flows: dict[int, dict[str, Any]]
) -> None:
    owners = {index: _owners(cluster, index, flow["account"]) for index, flow in flows.items()}
    assert all(len(found) == 1 for found in owners.values()), owners
    used = {found[0] for found in owners.values()}
    assert used == set(cluster.processes), f"all {SESSIONS} sessions hashed to one process: {owners}"


def test_an_admin_call_through_the_balancer_reaches_the_process_that_served_the_session(
    cluster: Cluster, flows: dict[int, dict[str, Any]]
) -> None:
    for index, flow in flows.items():
        name = f"flow-{index:02d}"
        (owner,) = _owners(cluster, index, flow["account"])
        direct = httpx.get(f"{owner}/__mock/requests", headers={"X-Mock-Session": name}).json()["requests"]
        balanced = httpx.get(f"{cluster.balancer}/__mock/requests", headers={"X-Mock-Session": name}).json()
        assert balanced["requests"] == direct  # the same journal: the same process
        assert [e["path"] for e in direct] == [e["path"] for e in flow["journal"]]
        (other,) = set(cluster.processes) - {owner}
        payment = httpx.get(
            f"{other}/event_conciliation/extraordinary_event/{PARTLY_PAID_EVENT}", headers={"X-Mock-Session": name}
        ).json()
        assert payment["total_paid_amount"] == flow["seeded_paid"]  # the other process never saw the payment
        paid = httpx.get(
            f"{cluster.balancer}/__session/{name}/event_conciliation/extraordinary_event/{PARTLY_PAID_EVENT}"
        ).json()
        assert paid["total_paid_amount"] == flow["seeded_paid"] + index + 1


def test_the_header_and_the_path_prefix_name_the_same_session_on_the_same_process(
    cluster: Cluster, flows: dict[int, dict[str, Any]]
) -> None:
    for index, flow in flows.items():
        name = f"flow-{index:02d}"
        by_header = httpx.get(f"{cluster.balancer}/__mock/accounts/{flow['account']}", headers={"X-Mock-Session": name})
        by_path = httpx.get(f"{cluster.balancer}/__session/{name}/__mock/accounts/{flow['account']}")
        assert by_header.status_code == by_path.status_code == 200
        assert by_header.json() == by_path.json()
        recipients = by_path.json()["recipient_list"]["recipients"]
        assert [r["recipient_id"] for r in recipients] == [flow["recipient"]]


def test_a_request_naming_no_session_works_in_the_default_session_on_one_process(cluster: Cluster) -> None:
    assert httpx.post(f"{cluster.balancer}/__mock/reset", json={"scenario": "empty"}).status_code == 200
    for _ in range(10):
        answer = httpx.get(f"{cluster.balancer}/__mock/scenarios").json()
        assert answer["active"] == "empty"
    assert httpx.post(f"{cluster.balancer}/__mock/reset", json={"scenario": "default"}).status_code == 200


def test_two_mcp_agents_each_keep_the_process_of_their_initialize_and_complete_the_journey(cluster: Cluster) -> None:
    """Issue 42: an MCP session lives in one process's memory; nginx routes its calls by the replica its
    Mcp-Session-Id names (`--mcp-replica`), and spreads the initializes over the processes in turn."""
    import anyio

    from tests.mcp.agent import Step, call, mcp_client

    held: dict[str, list[str]] = {}

    async def flow(client: Any, account: str) -> list[Step]:
        """Register an account, propose a limit change, pay an event, read back what was done."""
        steps: list[Step] = []
        window = [{"start_time": "06:00:00-03:00", "amount": 500000}]
        registration = {"account_id": account, "registration_date": FROZEN_AT, "limit": {"pix": {"withdraw": window}}}
        await call(client, steps, "registerAccountLimit", {"body": registration})
        raised = {"pix": {"withdraw": [{**window[0], "amount": 400000}]}}
        await call(client, steps, "createLimitUpdateRequest", {"account_id": account, "body": raised})
        await call(client, steps, "mockPayEvent", {"extraordinary_event_conciliation_key": PENDING_EVENT})
        await call(client, steps, "mockListRequests", {})
        return steps

    async def agent(index: int, both_open: anyio.Event, started: list[int]) -> list[Any]:
        async with mcp_client(f"{cluster.balancer}/__mock/mcp") as client:
            steps = await flow(client, f"0005-{index:06d}")
            started.append(index)
            if len(started) == 2:
                both_open.set()
            await both_open.wait()
            if index == 0:  # both sessions open: which process holds which
                for process in cluster.processes:
                    names = httpx.get(f"{process}/__mock/sessions", timeout=10).json()["sessions"]
                    held[process] = [s["name"] for s in names if s["name"].startswith("mcp-")]
            await anyio.sleep(0.5)
            return steps

    async def both() -> list[list[Any]]:
        results: list[list[Any]] = [[], []]
        both_open, started = anyio.Event(), list[int]()

        async def run(index: int) -> None:
            results[index] = await agent(index, both_open, started)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for index in range(2):
                    group.start_soon(run, index)
        return results

    results = anyio.run(both)
    for steps in results:
        assert [s.status for s in steps] == [201, 201, 200, 200], steps
        assert steps[2].body["status"] == "paid"
        journal = [(r["operation_id"], r["status"]) for r in steps[3].body["requests"]]
        assert journal == [("registerAccountLimit", 201), ("createLimitUpdateRequest", 201)]
    assert sorted(len(names) for names in held.values()) == [1, 1], held  # one agent on each process


def test_when_a_process_dies_the_whole_cluster_stops_and_says_which() -> None:
    """Its sessions cannot move to a process that does not hold their state: the recipe fails loudly instead
    (and nginx is told not to retry another process: `proxy_next_upstream off`)."""
    command = [sys.executable, str(ROOT / "scripts" / "cluster.py"), "--processes", "2", "--port", str(_free_port())]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith(READY)
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        mock_servers = [pid for pid in children if "mock_server" in Path(f"/proc/{pid}/cmdline").read_text()]
        assert len(mock_servers) == 2
        subprocess.run(["kill", mock_servers[0]], check=True)
        assert process.wait(30) == 1
        assert process.stderr is not None
        assert "exited with" in process.stderr.read()
        for pid in children:
            assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _chaos_statuses(base: str, name: str, calls: int = 200) -> str:
    """A fault of 30% 503s at seed 7 armed on the lookups of session `name` at `base`, then `calls` lookups: their
    statuses as text (`.` 200, `x` 503)."""
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 0.3, "seed": 7, "times": None}
    with httpx.Client(base_url=base, headers={"X-Mock-Session": name}, timeout=30) as pix:
        assert pix.post("/__mock/reset", json={"scenario": "default"}).status_code == 200
        assert pix.post("/__mock/faults", json=fault).status_code == 201
        letters = {200: ".", 503: "x"}
        return "".join(
            letters[pix.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}").status_code]
            for _ in range(calls)
        )


def test_a_fault_by_chance_fires_the_same_way_on_both_processes_for_the_same_session_name(cluster: Cluster) -> None:
    """Issue 45: the draws depend on (seed, session, fault, k) alone, so a session moved to another replica (a
    process restarted, the ring resized) fails the same calls; each process asked directly, then the balancer."""
    first, second = (_chaos_statuses(process, "chaos-seed-7") for process in cluster.processes)
    assert first == second
    assert 0.2 <= first.count("x") / 200 <= 0.4
    assert _chaos_statuses(cluster.balancer, "chaos-seed-7") == first
