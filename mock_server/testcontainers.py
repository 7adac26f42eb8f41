"""The mock as a Testcontainers module: `PixMockContainer`, a testcontainers-python `DockerContainer` of the image.

`pip install 'pix-limits-mock-server[testcontainers]'`, build the image (`make image` in a checkout, or
`docker build -f Containerfile -t localhost/pix-limits-mock-server:latest .`), then::

    with PixMockContainer().with_seed(1).with_clock("2026-11-21T10:00:00-03:00") as mock:
        alice = mock.session("alice")
        alice.pay("EV-1")

The builders set the image's `MOCK_SERVER_*` variables (the CLI's options) and mount a fixtures directory
read-only over `/fixtures`. `start()` returns once `/__mock/health` answers 200, or fails within
`startup_timeout` seconds with the container's log. The server inside answers to the name the container is reached
by: `get_container_host_ip()` can be a Docker host's name (CI's `docker:2375` gives `docker`), which the server's
Host rule (the guard against DNS rebinding) would refuse, so that name is added to `MOCK_SERVER_ALLOWED_HOSTS`.

Works with Docker and with Podman's Docker-compatible API (docs/containers-and-scaling.md). Imported only by those
who use it: testcontainers (and docker) are the `[testcontainers]` extra's, and `mock_server.client` is imported
when `session()` is first called.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import httpx
from testcontainers.core.container import DockerContainer
from testcontainers.core.exceptions import ContainerStartException

from mock_server.domain.clock import parse_instant
from mock_server.http.hosts import allowed_host_entry, host_name

if TYPE_CHECKING:
    from mock_server.client import PixMock

DEFAULT_IMAGE = "localhost/pix-limits-mock-server:latest"  # what `make image` builds
PORT = 8000  # the image's MOCK_SERVER_PORT
FIXTURES = "/fixtures"  # the image's MOCK_SERVER_FIXTURES
HEALTH = "/__mock/health"
ALLOWED_HOSTS = "MOCK_SERVER_ALLOWED_HOSTS"
STARTUP_TIMEOUT = 30.0  # seconds from start() to an answered health check, at most
POLL_INTERVAL = 0.05
STATUS_INTERVAL = 0.5  # seconds between two questions to the engine whether the container still runs
PROBE_TIMEOUT = 2.0  # one health request's bound


class PixMockContainer(DockerContainer):
    """The PIX limits mock server in a container, ready when its health check answers.

    `image` defaults to `localhost/pix-limits-mock-server:latest`, the tag `make image` builds; `startup_timeout`
    bounds start() (seconds). Every builder returns the container, so calls chain."""

    def __init__(self, image: str = DEFAULT_IMAGE, *, startup_timeout: float = STARTUP_TIMEOUT, **kwargs: Any) -> None:
        super().__init__(image, **kwargs)
        self.with_exposed_ports(PORT)
        self.startup_timeout = startup_timeout
        self._admin_token: str | None = None
        self._sessions: list[PixMock] = []
        self._url: str | None = None  # known once started: the published port does not change

    # -- builders: the image's MOCK_SERVER_* variables -------------------------------------------------------------

    def with_fixtures(self, directory: str | Path) -> Self:
        """Scenario files from `directory`, mounted read-only over /fixtures (its files must be readable by the
        image's uid 10001: world-readable, as `chmod -R a+rX` makes them)."""
        path = Path(directory).resolve()
        if not path.is_dir():
            raise ValueError(f"with_fixtures: {str(path)!r} is not a directory of scenario files")
        # The engine reads a mount as HOST:CONTAINER:MODE and its options split at commas: refused here, by name,
        # rather than as the engine's puzzle about a mount it cut in the wrong place.
        for character, name in ((":", "a colon"), (",", "a comma")):
            if character in str(path):
                raise ValueError(
                    f"with_fixtures: {str(path)!r} holds {name} ({character!r}), which the container engine's mount "
                    "syntax cannot carry: copy or link the scenarios into a directory whose path has none"
                )
        return self.with_volume_mapping(path, FIXTURES, "ro")

    def with_scenario(self, name: str) -> Self:
        """The scenario every session starts from (a file's name in the fixtures, without its extension)."""
        return self.with_env("MOCK_SERVER_SCENARIO", name)

    def with_clock(self, instant: str) -> Self:
        """Every session's clock frozen at this ISO 8601 date-time with an offset (`2026-11-21T10:00:00-03:00`)."""
        try:
            at = parse_instant(instant)
        except (ValueError, TypeError):  # TypeError: no offset, compared with the aware bounds
            at = None
        if at is None or at.tzinfo is None:
            raise ValueError(f"with_clock: {instant!r} is not an ISO 8601 date-time with a UTC offset")
        return self.with_env("MOCK_SERVER_CLOCK", instant)

    def with_seed(self, seed: int) -> Self:
        """Generated ids deterministic per session (the same calls give the same ids, also after a reset)."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"with_seed: the seed is an int, not {type(seed).__name__}")
        return self.with_env("MOCK_SERVER_SEED", str(seed))

    def with_admin_token(self, token: str) -> Self:
        """Admin routes (but health) answer 401 without `Authorization: Bearer TOKEN`; `session()` sends it."""
        if not token or token != token.strip():
            raise ValueError("with_admin_token: the token is a non-empty string without surrounding blanks")
        # Sent as an environment variable and an Authorization header: a line break or another control character
        # breaks both (inside the engine, as an unreadable error); a non-ASCII one is no header's.
        unfit = next((c for c in token if not " " <= c <= "~"), None)
        if unfit is not None:
            what = "a line break" if unfit in "\r\n" else "a control character" if unfit <= "\x7f" else "non-ASCII"
            raise ValueError(
                f"with_admin_token: the token holds {what} ({unfit!r}); it is sent in an Authorization header, "
                "which takes printable ASCII only"
            )
        self._admin_token = token
        return self.with_env("MOCK_SERVER_ADMIN_TOKEN", token)

    # -- running ----------------------------------------------------------------------------------------------------

    def _configure(self) -> None:
        """Just before the container is created: the name it will be reached by joins the names it answers to."""
        host = self._reached_by()
        if host is not None:
            listed = [entry.strip() for entry in self.env.get(ALLOWED_HOSTS, "").split(",") if entry.strip()]
            if host not in listed:
                self.with_env(ALLOWED_HOSTS, ",".join([*listed, host]))

    def _reached_by(self) -> str | None:
        """The Docker host's name when the container is reached by one the server does not answer to by default
        (`docker` for DOCKER_HOST=tcp://docker:2375, a TC_HOST override); None for localhost or an address. In the
        other connection modes the container is reached by an address (its bridge IP or the gateway's)."""
        from testcontainers.core.config import ConnectionMode

        client = self.get_docker_client()
        if client.get_connection_mode() != ConnectionMode.docker_host:
            return None
        name = host_name(client.host())
        if name is None or name == "localhost" or name.endswith(".localhost") or _is_address(name):
            return None
        try:
            return allowed_host_entry(name)
        except ValueError:
            return None

    def start(self) -> Self:
        """Create and start the container, then wait until `/__mock/health` answers 200 (at most
        `startup_timeout` seconds); ContainerStartException with the container's log otherwise."""
        super().start()
        self._url = None
        try:
            self._wait_until_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_healthy(self) -> None:
        """Health asked every POLL_INTERVAL; the engine asked whether the container still runs only every
        STATUS_INTERVAL (each question to it costs a round trip, which a loaded engine answers slowly)."""
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer yet"
        url = self.get_url() + HEALTH  # the published port is known once the container started
        status_due = time.monotonic() + STATUS_INTERVAL
        with httpx.Client(timeout=PROBE_TIMEOUT, trust_env=False) as probe:
            while time.monotonic() < deadline:
                try:
                    response = probe.get(url)
                except httpx.HTTPError as error:  # not listening yet
                    last = f"{type(error).__name__}: {error}"
                else:
                    if response.status_code == 200:
                        return
                    last = f"{response.status_code} {response.text[:300]}"
                if time.monotonic() >= status_due:
                    status_due = time.monotonic() + STATUS_INTERVAL
                    container = self.get_wrapped_container()
                    container.reload()
                    if container.status not in ("created", "running"):
                        raise ContainerStartException(
                            f"the mock server's container {container.status} before it was healthy "
                            f"({last}); its log:\n{self._log()}"
                        )
                time.sleep(POLL_INTERVAL)
        raise ContainerStartException(
            f"the mock server did not answer {HEALTH} with 200 within {self.startup_timeout:g} s ({last}); "
            f"its log:\n{self._log()}"
        )

    def _log(self, limit: int = 4000) -> str:
        try:
            stdout, stderr = self.get_logs()
        except Exception as error:  # the log is only the error's detail: its own failure must not hide the error
            return f"(no log: {error})"
        text = (stdout + stderr).decode("utf-8", "replace")
        return text[-limit:]

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        """Close the clients `session()` handed out, then remove the container. Idempotent: `with` calls it again
        when `start()` failed (and had stopped it already), and the second call must not hide start()'s error
        behind the engine's NotFound for a container that is gone (issue 43 M4)."""
        from docker.errors import NotFound  # type: ignore[import-untyped]

        while self._sessions:
            self._sessions.pop().close()
        self._url = None
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(NotFound):  # already removed (by the engine, or by hand)
                container.remove(force=force, v=delete_volume)
        self.get_docker_client().client.close()

    # -- reaching it ------------------------------------------------------------------------------------------------

    def get_url(self) -> str:
        """The base URL the server answers on from here: `http://HOST:PORT` (no trailing slash)."""
        if self._url is None:
            host = self.get_container_host_ip()
            if ":" in host and not host.startswith("["):
                host = f"[{host}]"  # an IPv6 address
            self._url = f"http://{host}:{self.get_exposed_port(PORT)}"
        return self._url

    def session(self, name: str) -> PixMock:
        """A `mock_server.client.PixMock` bound to session `name` on this server (with the admin token, if one
        was set); closed when the container stops."""
        from mock_server.client import PixMock

        client = PixMock(self.get_url(), name, token=self._admin_token)
        self._sessions.append(client)
        return client


def _is_address(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
