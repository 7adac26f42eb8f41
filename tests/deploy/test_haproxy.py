"""The Kubernetes router's HAProxy config (deploy/kubernetes/haproxy.cfg), run by HAProxy itself (Debian's
package; `make test-containers` installs it), marker `containers`.

`haproxy -c` checks the file as shipped. Then the router runs it for real in front of mock-server replicas, with
what Kubernetes would give it stood in for on loopback: a small DNS server answers the headless Service's name with
one address per replica (127.0.0.2, 127.0.0.3, then 127.0.0.4: the whole 127/8 is loopback), and each replica is a
mock-server app of this process listening on its own address and the Service's port. The only changes to the file
are the ones a cluster makes: the nameserver (instead of resolv.conf's) and the listening address. The replicas
are found, scaled up and down, by the DNS answer alone.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.app import create_app
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT
from tests.threaded_server import threaded_server

pytestmark = pytest.mark.containers

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "deploy" / "kubernetes" / "haproxy.cfg"
FIGURES = ROOT / "build" / "test-containers.json"
ENVIRONMENT = {"POD_NAMESPACE": "tests", "CLUSTER_DOMAIN": "cluster.local"}
SERVICE = "mock-server.tests.svc.cluster.local"
REPLICAS = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
SESSIONS = [f"flow-{index:02d}" for index in range(24)]
SETTLE = 60.0  # seconds for HAProxy to see a change of the DNS answer (re-resolution, health checks, hold obsolete)


def haproxy() -> str:
    found = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)
    if found is None:
        pytest.fail("haproxy is not installed: run `make test-containers`, which installs Debian's package")
    return found


def test_haproxy_accepts_the_config_as_shipped(tmp_path: Path) -> None:
    done = subprocess.run(
        [haproxy(), "-c", "-f", str(CONFIG)],
        env={**os.environ, **ENVIRONMENT},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Configuration file is valid" in done.stdout + done.stderr


# --- a DNS server for the headless Service's name: A records, the addresses it is told --------------------------


class StandInDns:
    """Answers A queries for SERVICE with `addresses` (TTL 1 s), an empty answer for its other types, NXDOMAIN for
    other names. UDP on 127.0.0.1, one thread, stopped by `close()`."""

    def __init__(self) -> None:
        self.addresses: list[str] = []
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port: int = self.socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="stand-in-dns", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                query, client = self.socket.recvfrom(4096)
            except TimeoutError:
                continue
            answer = self.answer(query)
            if answer is not None:
                self.socket.sendto(answer, client)

    def answer(self, query: bytes) -> bytes | None:
        if len(query) < 12:
            return None
        ident, flags, questions = struct.unpack("!HHH", query[:6])
        if questions != 1 or flags & 0x8000:
            return None
        labels, at = [], 12
        while at < len(query) and query[at] != 0:
            length = query[at]
            labels.append(query[at + 1 : at + 1 + length].decode("ascii", "replace").lower())
            at += 1 + length
        question = query[12 : at + 5]
        if len(question) < at - 12 + 5:
            return None
        qtype = struct.unpack("!H", query[at + 1 : at + 3])[0]
        known = ".".join(labels) == SERVICE
        records = [] if not known or qtype != 1 else list(self.addresses)
        rcode = 0 if known else 3
        header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, len(records), 0, 0)
        answers = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, 1, 4) + socket.inet_aton(address) for address in records)
        return header + question + answers

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.socket.close()


# --- the router over replicas --------------------------------------------------------------------------------------


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def router_config(dns_port: int, listen: int, replica_port: int) -> str:
    """The shipped file with what loopback changes: the nameserver, the address the router listens on, and the
    replicas' port (8000 in the cluster; here one free on the replicas' addresses)."""
    text = CONFIG.read_text()
    for original in ("    parse-resolv-conf\n", "    bind :8080\n", '.svc.${CLUSTER_DOMAIN}:8000"'):
        assert text.count(original) == 1, original
    text = text.replace("    parse-resolv-conf\n", f"    nameserver stand-in 127.0.0.1:{dns_port}\n")
    text = text.replace("    bind :8080\n", f"    bind 127.0.0.1:{listen}\n")
    return text.replace('.svc.${CLUSTER_DOMAIN}:8000"', f'.svc.${{CLUSTER_DOMAIN}}:{replica_port}"')


@contextmanager
def router(tmp_path: Path, dns: StandInDns, replica_port: int) -> Iterator[str]:
    listen = free_port("127.0.0.1")
    config = tmp_path / "haproxy.cfg"
    config.write_text(router_config(dns.port, listen, replica_port))
    log = (tmp_path / "haproxy.log").open("w")
    process = subprocess.Popen(
        [haproxy(), "-db", "-f", str(config)], env={**os.environ, **ENVIRONMENT}, stdout=log, stderr=log
    )
    try:
        yield f"http://127.0.0.1:{listen}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


@contextmanager
def replicas_behind_the_router(tmp_path: Path) -> Iterator[tuple[str, int, StandInDns]]:
    """Every replica of REPLICAS serving on one port, the DNS answering the first two, the router in front: the
    router's URL, the replicas' port and the DNS (change its `addresses` to scale)."""
    port = free_port(REPLICAS[0])
    with ExitStack() as stack:
        for address in REPLICAS:  # the third not in the DNS answer yet: asked directly, not routed to
            stack.enter_context(threaded_server(create_app(Settings()), host=address, port=port))
        dns = StandInDns()
        stack.callback(dns.close)
        dns.addresses = list(REPLICAS[:2])
        yield stack.enter_context(router(tmp_path, dns, port)), port, dns


def session_client(base: str, name: str) -> httpx.Client:
    """Even sessions name themselves in the header, odd ones in the path prefix: the router hashes both."""
    if int(name[-2:]) % 2 == 0:
        return httpx.Client(base_url=base, headers={"X-Mock-Session": name}, timeout=10, trust_env=False)
    return httpx.Client(base_url=f"{base}/__session/{name}", timeout=10, trust_env=False)


def sessions_on(address: str, port: int) -> set[str]:
    """The sessions a replica holds, asked directly (not through the router)."""
    listing = httpx.get(f"http://{address}:{port}/__mock/sessions", timeout=10, trust_env=False).json()
    return {session["name"] for session in listing["sessions"]}


def placement(replicas: list[str], port: int, names: list[str]) -> dict[str, list[str]]:
    """Which replicas hold each of `names`."""
    held = {address: sessions_on(address, port) for address in replicas}
    return {name: [address for address in replicas if name in held[address]] for name in names}


def wait_until(condition: Callable[[], bool], what: str, timeout: float = SETTLE) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():
            return time.monotonic() - started
        time.sleep(0.5)
    raise AssertionError(f"within {timeout:g} s: {what}")


def probes_reach(base: str, port: int, replicas: list[str], round_: str) -> bool:
    """Whether 16 fresh probe sessions sent through the router land on every one of `replicas` and no other."""
    names = [f"probe-{round_}-{index}" for index in range(16)]
    with httpx.Client(base_url=base, timeout=10, trust_env=False) as client:
        for name in names:
            try:
                if client.get("/__mock/clock", headers={"X-Mock-Session": name}).status_code != 200:
                    return False  # 503 while no replica is up yet
            except httpx.TransportError:
                return False  # the router not listening yet
    found = placement(list(REPLICAS), port, names)
    used = {address for holders in found.values() for address in holders}
    return used == set(replicas)


def record(name: str, value: Any) -> None:
    figures = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    figures[name] = value
    FIGURES.parent.mkdir(exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n")


def event_status(base: str, name: str) -> str:
    with session_client(base, name) as client:
        looked_up = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        assert looked_up.status_code == 200, looked_up.text
        status: str = looked_up.json()["status"]
        return status


def test_the_router_finds_the_replicas_by_dns_and_keeps_each_session_on_one(tmp_path: Path) -> None:
    """2 replicas, then 3, then 2 again: only the DNS answer changes. Every session sticks to one replica; adding a
    replica moves some sessions onto it, and only onto it, where they start afresh; removing it sends them back to
    the replica they were on, whose state for them is still there."""
    with replicas_behind_the_router(tmp_path) as (base, port, dns):
        rounds = iter(range(1000))

        found_two = wait_until(
            lambda: probes_reach(base, port, list(REPLICAS[:2]), str(next(rounds))), "both replicas in the hash"
        )
        for name in SESSIONS:
            with session_client(base, name) as client:
                paid = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={})
                assert paid.status_code == 200, paid.text
        before = placement(list(REPLICAS), port, SESSIONS)
        assert all(len(holders) == 1 for holders in before.values()), before
        assert {holders[0] for holders in before.values()} == set(REPLICAS[:2])  # both replicas hold some

        dns.addresses = list(REPLICAS)  # scaled to 3
        found_three = wait_until(
            lambda: probes_reach(base, port, list(REPLICAS), str(next(rounds))), "the third replica in the hash"
        )
        statuses = {name: event_status(base, name) for name in SESSIONS}
        moved = sorted(name for name, status in statuses.items() if status == "pending_conciliation")
        stayed = sorted(name for name, status in statuses.items() if status == "paid")
        assert len(moved) + len(stayed) == len(SESSIONS)
        assert moved, "a third replica takes some sessions"
        after = placement(list(REPLICAS), port, SESSIONS)
        for name in moved:  # onto the new replica, afresh; its old state stays where it was
            assert after[name] == sorted([before[name][0], REPLICAS[2]]), (name, after[name])
        for name in stayed:  # never from one old replica to the other
            assert after[name] == before[name], (name, after[name])

        dns.addresses = list(REPLICAS[:2])  # scaled back to 2
        found_two_again = wait_until(
            lambda: probes_reach(base, port, list(REPLICAS[:2]), str(next(rounds))), "the third replica gone"
        )
        back = {name: event_status(base, name) for name in SESSIONS}
        assert back == dict.fromkeys(SESSIONS, "paid")  # each back on its replica, its state as it left it
    record(
        "router",
        {
            "sessions": len(SESSIONS),
            "moved_to_third_replica": len(moved),
            "seconds_to_find_2": round(found_two, 1),
            "seconds_to_find_3": round(found_three, 1),
            "seconds_to_drop_3": round(found_two_again, 1),
        },
    )


def test_the_router_keeps_each_mcp_session_on_the_replica_of_its_initialize(tmp_path: Path) -> None:
    """Issue 42: the router learns each Mcp-Session-Id from the answer that gives it, and an initialize (no id yet)
    is balanced on a fresh UUID: twelve agents spread over both replicas, every one's calls on its own."""
    import anyio

    from tests.mcp.agent import mcp_client

    with replicas_behind_the_router(tmp_path) as (base, port, _):
        rounds = iter(range(1000))
        wait_until(lambda: probes_reach(base, port, list(REPLICAS[:2]), str(next(rounds))), "both replicas")
        held: dict[str, int] = {}
        statuses: list[int | None] = []

        async def agent(counted: anyio.Event) -> None:
            async with mcp_client(f"{base}/__mock/mcp") as client:
                await client.call_tool("mockReset", {})
                paid = await client.call_tool("mockPayEvent", {"extraordinary_event_conciliation_key": PENDING_EVENT})
                statuses.append(paid.structured_content["status"])
                await counted.wait()  # open while the replicas are asked what they hold

        async def agents() -> None:
            counted = anyio.Event()
            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    for _ in range(12):
                        group.start_soon(agent, counted)
                    while len(statuses) < 12:
                        await anyio.sleep(0.05)
                    for address in REPLICAS[:2]:
                        names = sessions_on(address, port)
                        held[address] = len([name for name in names if name.startswith("mcp-")])
                    counted.set()

        anyio.run(agents)
    assert statuses == [200] * 12  # every call of every agent reached the replica holding its session
    assert all(count > 0 for count in held.values()), held
