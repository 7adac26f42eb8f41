"""`PixMockContainer`'s builders and the names it answers to, with no Docker engine at all (the default tier).

A testcontainers DockerClient asks the engine its API version unless told one: these name it, so nothing connects.
What the container does when run is `make test-containers`'s (test_pix_mock_container.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from testcontainers.core.config import ConnectionMode, testcontainers_config

from mock_server.testcontainers import DEFAULT_IMAGE, PixMockContainer


def container(docker_host: str = "tcp://docker:2375", image: str = DEFAULT_IMAGE) -> PixMockContainer:
    """A container whose engine is `docker_host`, never contacted."""
    return PixMockContainer(image, docker_client_kw={"environment": {"DOCKER_HOST": docker_host}, "version": "1.41"})


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine named by each test, not one of this machine's settings."""
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(testcontainers_config, "tc_host_override", None)
    monkeypatch.setattr(testcontainers_config, "connection_mode_override", None)


def test_the_image_make_image_builds_is_the_default() -> None:
    assert container().image == "localhost/pix-limits-mock-server:latest"
    assert container(image="registry.example/pix-mock:1").image == "registry.example/pix-mock:1"
    assert container().ports == {"8000": None}


def test_each_builder_sets_the_images_variable_and_returns_the_container(tmp_path: Path) -> None:
    mock = container()
    built = (
        mock.with_fixtures(tmp_path)
        .with_scenario("ledger")
        .with_clock("2026-11-21T10:00:00-03:00")
        .with_seed(7)
        .with_admin_token("s3cret")
    )
    assert built is mock
    assert mock.env == {
        "MOCK_SERVER_SCENARIO": "ledger",
        "MOCK_SERVER_CLOCK": "2026-11-21T10:00:00-03:00",
        "MOCK_SERVER_SEED": "7",
        "MOCK_SERVER_ADMIN_TOKEN": "s3cret",
    }
    assert mock.volumes == {str(tmp_path.resolve()): {"bind": "/fixtures", "mode": "ro"}}


@pytest.mark.parametrize(
    ("builder", "argument", "error", "says"),
    [
        ("with_fixtures", "/no/such/directory", ValueError, "is not a directory"),
        ("with_clock", "2026-11-21T10:00:00", ValueError, "with a UTC offset"),
        ("with_clock", "tomorrow", ValueError, "not an ISO 8601 date-time"),
        ("with_seed", "7", TypeError, "is an int"),
        ("with_seed", True, TypeError, "is an int"),
        ("with_admin_token", "", ValueError, "non-empty"),
        ("with_admin_token", " padded ", ValueError, "surrounding blanks"),
        # issue 43: these failed inside the engine, as its own puzzle
        ("with_admin_token", "two\nlines", ValueError, r"holds a line break \('\\n'\).*printable ASCII"),
        ("with_admin_token", "tab\there", ValueError, "holds a control character"),
        ("with_admin_token", "s\u00e9nha", ValueError, "holds non-ASCII"),
    ],
)
def test_a_builder_refuses_what_the_server_would_refuse_at_start(builder, argument, error, says) -> None:
    """Said at once in the test's own words, not as a container that exits with a usage error."""
    mock = container()
    with pytest.raises(error, match=says):
        getattr(mock, builder)(argument)
    assert mock.env == {} and mock.volumes == {}


@pytest.mark.parametrize(
    ("docker_host", "added"),
    [
        ("tcp://docker:2375", "docker"),  # GitLab CI's docker:dind service
        ("tcp://Build-Host.example.com:2376", "build-host.example.com"),
        ("tcp://10.0.0.7:2375", None),  # an address: answered already
        ("tcp://[fd00::7]:2375", None),
    ],
)
def test_the_docker_hosts_name_joins_the_names_the_server_answers_to(docker_host, added) -> None:
    mock = container(docker_host)
    mock._configure()  # what start() does just before the container is created
    assert mock.env.get("MOCK_SERVER_ALLOWED_HOSTS") == added


def test_names_given_are_kept_beside_the_docker_hosts() -> None:
    mock = container().with_env("MOCK_SERVER_ALLOWED_HOSTS", "pix-mock,.internal.example")
    mock._configure()
    mock._configure()  # a second start of the same object adds nothing twice
    assert mock.env["MOCK_SERVER_ALLOWED_HOSTS"] == "pix-mock,.internal.example,docker"


def test_a_host_override_is_the_name_reached_by(monkeypatch: pytest.MonkeyPatch) -> None:
    """TC_HOST (TESTCONTAINERS_HOST_OVERRIDE) names the host testcontainers reaches containers by."""
    monkeypatch.setattr(testcontainers_config, "tc_host_override", "dind.ci.example")
    monkeypatch.setattr(testcontainers_config, "connection_mode_override", ConnectionMode.docker_host)
    mock = container("unix:///var/run/docker.sock")
    mock._configure()
    assert mock.env["MOCK_SERVER_ALLOWED_HOSTS"] == "dind.ci.example"


def test_a_local_engine_adds_no_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """localhost is answered already: the guard against DNS rebinding keeps its default list."""
    monkeypatch.setattr(testcontainers_config, "connection_mode_override", ConnectionMode.docker_host)
    mock = container("unix:///var/run/docker.sock")
    mock._configure()
    assert "MOCK_SERVER_ALLOWED_HOSTS" not in mock.env


@pytest.mark.parametrize(("name", "says"), [("a:b", "a colon"), ("a,b", "a comma")])
def test_a_fixtures_path_the_engines_mount_syntax_cannot_carry_is_refused_by_name(
    tmp_path: Path, name: str, says: str
) -> None:
    """Issue 43: a `:` or `,` in the path failed inside the engine; now a ValueError says which character."""
    directory = tmp_path / name / "scenarios"
    directory.mkdir(parents=True)
    mock = container()
    with pytest.raises(ValueError, match=f"holds {says}.*mount syntax cannot carry"):
        mock.with_fixtures(directory)
    assert mock.volumes == {}


class _ExitedContainer:
    """What the engine hands back for a container whose server exited at start (a broken scenario): its log,
    and NotFound once it has been removed."""

    status = "exited"

    def __init__(self) -> None:
        self.removed = 0

    def reload(self) -> None:
        pass

    def logs(self, stdout: bool = True, stderr: bool = True) -> bytes:
        return b"fixtures/broken.yaml:3:7: events[0].amount: not a number\n" if stderr and not stdout else b""

    def remove(self, force: bool = False, v: bool = False) -> None:
        from docker.errors import NotFound  # type: ignore[import-untyped]

        self.removed += 1
        if self.removed > 1:
            raise NotFound("no such container")


def test_a_server_that_cannot_start_fails_with_its_own_message_and_stop_is_idempotent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 43 M4: `with PixMockContainer()` on a broken scenario raised the engine's NotFound (stop() ran twice:
    once in start(), once in `with`'s cleanup) instead of ContainerStartException with the server's message."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.exceptions import ContainerStartException

    engine = _ExitedContainer()

    def started(self: PixMockContainer) -> PixMockContainer:
        self._container = engine
        return self

    monkeypatch.setattr(DockerContainer, "start", started)
    mock = container()
    monkeypatch.setattr(mock, "get_url", lambda: "http://127.0.0.1:9")  # nothing listens: the server is gone
    with pytest.raises(ContainerStartException) as failed, mock:
        pytest.fail("the block must not run")
    assert "container exited before it was healthy" in str(failed.value)
    assert "events[0].amount: not a number" in str(failed.value)  # the server's own message
    assert engine.removed == 1
    mock.stop()  # and again: nothing to do
    assert engine.removed == 1
