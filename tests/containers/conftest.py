"""`make test-containers`: a Docker API for testcontainers-python, and the image `make image` built.

Where DOCKER_HOST is set (a Docker engine, CI's `docker:2375`), the tests use it as it is. Otherwise they start
Podman's Docker-compatible API for the run (`podman system service` on a socket in a temporary directory, with the
CONTAINERS_CONF this sandbox needs: scripts/image_build.py) and stop it afterwards; testcontainers is told to skip
Ryuk (no image of it can be pulled here) and to reach containers by the Docker host (this sandbox is itself a
container, and testcontainers would look for a bridge network Podman's API does not describe).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/pix-limits-mock-server:latest"
SERVICE_START_TIMEOUT = 30.0
SERVICE_STOP_TIMEOUT = 10.0


def image_build() -> ModuleType:
    """scripts/image_build.py, the build `make image` runs: its CONTAINERS_CONF for this sandbox."""
    spec = importlib.util.spec_from_file_location("image_build", ROOT / "scripts" / "image_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _listening(path: Path) -> bool:
    """Whether the service accepts on its socket yet: probed with a socket of our own, closed either way.

    httpx's UDS transport (httpcore 1.0.9, `connect_unix_socket`) leaves its socket open when the connect fails, and
    pytest turns the ResourceWarning into an error of whichever test it lands in (CI, 2026-11-27: a setup error).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _wait_for_api(path: Path, service: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVICE_START_TIMEOUT
    transport = httpx.HTTPTransport(uds=str(path))
    with httpx.Client(transport=transport, base_url="http://podman", timeout=2) as api:
        while time.monotonic() < deadline:
            if service.poll() is not None:
                raise RuntimeError(f"podman system service exited {service.returncode} before answering")
            if _listening(path):
                try:
                    if api.get("/_ping").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
            time.sleep(0.1)
    raise RuntimeError(f"podman system service did not answer on {path} within {SERVICE_START_TIMEOUT:g} s")


@pytest.fixture(scope="session")
def docker_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Docker API's address (DOCKER_HOST): the one given, or Podman's, started for the run and stopped after."""
    given = os.environ.get("DOCKER_HOST")
    if given:
        yield given
        return
    podman = shutil.which("podman")
    if podman is None:
        pytest.fail("no DOCKER_HOST and no podman: run `make test-containers`, which installs podman")
    path = tmp_path_factory.mktemp("podman") / "podman.sock"
    environment = {**os.environ, "CONTAINERS_CONF": str(image_build().containers_conf())}
    service = subprocess.Popen(
        [podman, "system", "service", "--time=0", f"unix://{path}"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {name: os.environ.get(name) for name in ("DOCKER_HOST", "TESTCONTAINERS_RYUK_DISABLED")}
    try:
        _wait_for_api(path, service)
        os.environ["DOCKER_HOST"] = f"unix://{path}"
        os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"
        # testcontainers reads its configuration once, when first imported: set it where it keeps it.
        from testcontainers.core.config import ConnectionMode, testcontainers_config

        testcontainers_config.ryuk_disabled = True
        testcontainers_config.connection_mode_override = ConnectionMode.docker_host
        yield os.environ["DOCKER_HOST"]
    finally:
        service.terminate()
        try:
            service.wait(SERVICE_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait(SERVICE_STOP_TIMEOUT)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def image(docker_api: str) -> str:
    """The image `make image` built (`make test-containers` builds it first): there, or the tests cannot run."""
    from testcontainers.core.docker_client import DockerClient

    engine = DockerClient(timeout=30).client
    try:
        found = engine.images.list(name=IMAGE)
    finally:
        engine.close()
    if not found:
        pytest.fail(f"no image {IMAGE}: build it with `make image` (make test-containers does)")
    return IMAGE
