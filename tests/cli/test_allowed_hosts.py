"""`--allowed-hosts` (MOCK_SERVER_ALLOWED_HOSTS): the names a deployment reaches the server by, read as the CLI reads
every option, into the Host rule the connection holds (http/hosts.py). In process: no server is started."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette

from mock_server import cli
from mock_server.server import uvicorn_config
from mock_server.settings import Settings


def settings(*argv: str) -> Settings:
    return cli.settings_from(cli._parser().parse_args(list(argv)))


def test_by_default_the_server_answers_to_loopback_names_and_addresses_only() -> None:
    assert settings().allowed_hosts == ()


def test_the_flag_takes_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOCK_SERVER_ALLOWED_HOSTS", raising=False)
    assert settings("--allowed-hosts", "Mock, .example.com,*").allowed_hosts == ("mock", ".example.com", "*")


def test_the_variable_sets_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCK_SERVER_ALLOWED_HOSTS", "pix-mock,mock-balancer")
    assert settings().allowed_hosts == ("pix-mock", "mock-balancer")


@pytest.mark.parametrize("value", ["http://mock", "mock:8000", "a b"])
def test_an_entry_that_is_no_host_name_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.delenv("MOCK_SERVER_ALLOWED_HOSTS", raising=False)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--allowed-hosts", value])
    assert stopped.value.code == 2
    assert "argument --allowed-hosts: " in capsys.readouterr().err


@pytest.mark.own_protocol  # the Host rule is the protocol's
def test_the_connection_holds_the_allowed_hosts_and_the_bound_name() -> None:
    settings = Settings(host="mock.internal", allowed_hosts=("pix-mock",))
    config = uvicorn_config(Starlette(), settings, configure_logging=False)  # no logging.dictConfig in a test
    hosts = config.http.hosts  # type: ignore[union-attr]
    assert hosts.allows("pix-mock") and hosts.allows("mock.internal") and not hosts.allows("evil.test")
    assert config.ws == "none"
