"""deploy/: the Kubernetes manifest on paper carries exactly the nginx config that `make cluster-test` tests."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from mock_server.http.hosts import HostPolicy

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "kubernetes" / "mock-cluster.yaml"


def _cluster_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cluster_script", ROOT / "scripts" / "cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _documents() -> dict[tuple[str, str], dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def test_the_manifest_balancer_config_is_the_tested_template_filled_in() -> None:
    docs = _documents()
    config = docs[("ConfigMap", "mock-balancer")]["data"]["nginx.conf"]
    replicas = docs[("StatefulSet", "mock-server")]["spec"]["replicas"]
    servers = [f"mock-server-{n}.mock-server:8000" for n in range(replicas)]
    expected = _cluster_script().nginx_config("8080", servers, Path("/tmp/nginx"))
    assert config.rstrip("\n") == expected.rstrip("\n")
    assert re.findall(r"^\s*server (\S+);", config, re.MULTILINE) == servers


def test_every_pod_is_ready_when_health_answers() -> None:
    docs = _documents()
    for kind, name in (("StatefulSet", "mock-server"), ("Deployment", "mock-balancer")):
        (container,) = docs[(kind, name)]["spec"]["template"]["spec"]["containers"]
        assert container["readinessProbe"]["httpGet"]["path"] == "/__mock/health", name
    balancer = docs[("Deployment", "mock-balancer")]["spec"]["template"]["spec"]["containers"][0]
    assert "daemon off;" in balancer["command"]
    assert docs[("Service", "mock-server")]["spec"]["clusterIP"] == "None"  # pods named for the hash


def test_the_mock_servers_answer_to_the_name_the_tests_reach_the_balancer_by() -> None:
    """nginx passes the client's Host on ($http_host): the tests' http://mock-balancer:8000 reaches each mock-server
    as Host mock-balancer, which the Host rule refuses unless --allowed-hosts names it (probes use addresses)."""
    docs = _documents()
    (container,) = docs[("StatefulSet", "mock-server")]["spec"]["template"]["spec"]["containers"]
    environment = {variable["name"]: variable["value"] for variable in container["env"]}
    policy = HostPolicy.build(environment["MOCK_SERVER_ALLOWED_HOSTS"].split(","), environment["MOCK_SERVER_HOST"])
    balancer = docs[("Service", "mock-balancer")]["metadata"]["name"]
    for name in (balancer, f"{balancer}.tests.svc.cluster.local"):
        assert policy.allows(name), name
    assert "proxy_set_header Host $http_host;" in docs[("ConfigMap", "mock-balancer")]["data"]["nginx.conf"]
