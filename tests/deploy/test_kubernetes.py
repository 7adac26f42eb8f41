"""deploy/kubernetes: a kustomize base that scales by its replica count alone, rendered offline (`kubectl kustomize`,
no cluster) at 2 and at 5 replicas and checked against the Kubernetes schemas (kubernetes-validate, offline).

The router's HAProxy config is checked by HAProxy itself in test_haproxy.py (`make test-containers`, which installs
Debian's haproxy).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from mock_server.http.hosts import HostPolicy

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "kubernetes"
KUBERNETES = "1.32"  # the schemas checked against: a version clusters run today (kubectl's here is 1.32)
COUNT = re.compile(r"^(    count: )(\d+)$", re.MULTILINE)


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        pytest.fail("these tests render with `kubectl kustomize` (the Kubernetes client): put kubectl on PATH")
    return found


def render(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def scaled_to(count: int, tmp_path: Path) -> Path:
    """A copy of the base with its replica count changed, and no other byte."""
    copy = tmp_path / f"at-{count}"
    shutil.copytree(BASE, copy)
    kustomization = copy / "kustomization.yaml"
    text = kustomization.read_text()
    changed, replaced = COUNT.subn(rf"\g<1>{count}", text)
    assert replaced == 1, "kustomization.yaml holds one replica count"
    kustomization.write_text(changed)
    return copy


def by_kind(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in documents}


def only_container(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


@pytest.mark.parametrize("count", [2, 5])
def test_the_base_renders_offline_and_every_document_is_valid_kubernetes(count: int, tmp_path: Path) -> None:
    documents = render(scaled_to(count, tmp_path))
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)  # raises, saying which field is wrong
    found = by_kind(documents)
    assert sorted(kind for kind, _ in found) == ["ConfigMap", "Deployment", "Service", "Service", "StatefulSet"]
    assert found[("StatefulSet", "mock-server")]["spec"]["replicas"] == count


def test_scaling_is_a_change_of_the_replica_count_alone(tmp_path: Path) -> None:
    """At 2 and at 5 replicas the rendered manifests differ in the StatefulSet's replicas and nowhere else: the
    router's config, its ConfigMap's generated name and the Service are the same."""
    at_two, at_five = render(scaled_to(2, tmp_path)), render(scaled_to(5, tmp_path))
    assert render(BASE) == at_two  # the base as shipped is the 2-replica layout
    assert len(at_two) == len(at_five)
    for two, five in zip(at_two, at_five, strict=True):
        if two["kind"] == "StatefulSet":
            assert (two["spec"].pop("replicas"), five["spec"].pop("replicas")) == (2, 5)
        assert two == five


def test_the_router_finds_the_replicas_through_the_headless_services_dns() -> None:
    found = by_kind(render(BASE))
    service = found[("Service", "mock-server")]
    assert service["spec"]["clusterIP"] == "None"  # headless: one A record per ready pod
    assert not service["spec"].get("publishNotReadyAddresses")  # a pod is hashed onto once its health answers
    statefulset = found[("StatefulSet", "mock-server")]
    assert statefulset["spec"]["serviceName"] == "mock-server"
    assert service["spec"]["selector"].items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()

    (config_map,) = [d for (kind, _), d in found.items() if kind == "ConfigMap"]
    config = config_map["data"]["haproxy.cfg"]
    assert config == (BASE / "haproxy.cfg").read_text()
    assert 'server-template mock 1-64 "mock-server.${POD_NAMESPACE}.svc.${CLUSTER_DOMAIN}:8000"' in config
    assert re.search(r"^\s+balance hash var\(txn\.mock_session\)$", config, re.MULTILINE)
    assert re.search(r"^\s+hash-type consistent$", config, re.MULTILINE)

    router = found[("Deployment", "mock-router")]
    (volume,) = router["spec"]["template"]["spec"]["volumes"]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]  # the generated name, hash included
    haproxy = only_container(router)
    assert haproxy["image"].startswith("docker.io/library/haproxy:")
    environment = {variable["name"]: variable for variable in haproxy["env"]}
    assert environment["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    assert environment["CLUSTER_DOMAIN"]["value"] == "cluster.local"


def test_every_pod_is_ready_when_health_answers() -> None:
    found = by_kind(render(BASE))
    for workload in (found[("StatefulSet", "mock-server")], found[("Deployment", "mock-router")]):
        assert only_container(workload)["readinessProbe"]["httpGet"]["path"] == "/__mock/health"
    assert only_container(found[("StatefulSet", "mock-server")])["image"] == "localhost/pix-limits-mock-server:latest"


def test_the_replicas_answer_to_the_name_clients_reach_the_router_by() -> None:
    """HAProxy passes the client's Host on: http://mock-router:8000 reaches each replica as Host mock-router, which
    the Host rule refuses unless MOCK_SERVER_ALLOWED_HOSTS names it (probes and health checks use addresses)."""
    found = by_kind(render(BASE))
    container = only_container(found[("StatefulSet", "mock-server")])
    environment = {variable["name"]: variable["value"] for variable in container["env"]}
    policy = HostPolicy.build(environment["MOCK_SERVER_ALLOWED_HOSTS"].split(","), environment["MOCK_SERVER_HOST"])
    router = found[("Service", "mock-router")]["metadata"]["name"]
    for name in (router, f"{router}.tests.svc.cluster.local"):
        assert policy.allows(name), name
    assert not policy.allows("rebound.example")
