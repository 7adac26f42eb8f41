"""What a new user meets first (issue 23), run in process through `mock_server.cli.main`: `check --help` is check's
own, `--version`, a bad MOCK_SERVER_* variable named as such, a misspelled one warned of, counts in the singular
when there is one, and a fixtures directory without `default` answered with what it has and how to pick."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

import mock_server
from mock_server import cli, cli_serve, environment
from mock_server.pytest_plugin import OPTIONS as PLUGIN_OPTIONS
from mock_server.spec.resources import data_path

SHIPPED = data_path("fixtures")


@pytest.fixture(autouse=True)
def no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's MOCK_SERVER_* variables, if any, are not this test's."""
    for name in [name for name in os.environ if name.startswith(environment.PREFIX)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps its help at this width


def exits(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str, str]:
    """(exit code, stdout, stderr) of a command argparse ends with SystemExit (help, version, a usage error)."""
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    out, err = capsys.readouterr()
    return ended.value.code, out, err


# --- check --help ---------------------------------------------------------------------------------------------


def test_check_help_is_checks_own(capsys):
    code, out, _ = exits(["check", "--help"], capsys)
    assert code == 0
    assert out.startswith("usage: mock-server check [-h] [--fixtures DIR]\n")
    assert "Read and check every scenario file of a directory" in out
    assert "--fixtures DIR" in out
    for serve_only in ("--port", "--host", "--scenario", "--admin-token"):
        assert serve_only not in out


def test_the_serve_help_names_the_commands_and_how_to_get_their_help(capsys):
    code, out, _ = exits(["--help"], capsys)
    assert code == 0
    assert out.startswith(
        "usage: mock-server [serve] [OPTION ...]\n"
        "       mock-server check [--fixtures DIR]\n"
        "       mock-server healthcheck [URL] [OPTION ...]\n"
        "       mock-server wait URL [OPTION ...]\n"
    )
    assert "`mock-server check --help`" in " ".join(out.split())
    assert "--port PORT" in out


def test_the_usage_block_lists_every_command(capsys):
    """Issue 43: the usage lacked pact and pki."""
    _, out, _ = exits(["--help"], capsys)
    usage = out[: out.index("\n\n")]
    listed = [line.removeprefix("usage:").split()[1].strip("[]") for line in usage.splitlines()]
    assert sorted(listed) == sorted(cli.COMMANDS)
    assert "       mock-server pact --consumer NAME --provider NAME [OPTION ...]\n" in usage + "\n"
    assert "       mock-server pki init DIR [OPTION ...]\n" in usage + "\n"


def test_check_refuses_a_serve_option_with_checks_usage(capsys):
    code, _, err = exits(["check", "--port", "1"], capsys)
    assert code == 2
    assert err.startswith("usage: mock-server check")
    assert "unrecognized arguments: --port 1" in err


# --- --version ------------------------------------------------------------------------------------------------


def test_version_prints_the_installed_version(capsys):
    code, out, err = exits(["--version"], capsys)
    assert code == 0
    assert out == f"mock-server {mock_server.__version__}\n"
    assert err == ""
    # the one version: what the package says is what the installed distribution's metadata says
    assert importlib.metadata.version("pix-limits-mock-server") == mock_server.__version__


# --- a bad variable names the variable ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("MOCK_SERVER_PORT", "abc", "variable MOCK_SERVER_PORT (read as --port): 'abc' is not a port number"),
        ("MOCK_SERVER_PORT", "70000", "variable MOCK_SERVER_PORT (read as --port): '70000' is not a port number"),
        ("MOCK_SERVER_SEED", "x", "variable MOCK_SERVER_SEED (read as --seed): 'x' is not a whole number"),
        (
            "MOCK_SERVER_CLOCK",
            "2026-11-21T10:00:00",
            "variable MOCK_SERVER_CLOCK (read as --clock): '2026-11-21T10:00:00' is not an ISO 8601 date-time with "
            "a UTC offset",
        ),
        (
            "MOCK_SERVER_LOG_LEVEL",
            "loud",
            "variable MOCK_SERVER_LOG_LEVEL (read as --log-level): 'loud' is not one of critical, error, warning, "
            "info, debug",
        ),
        (
            "MOCK_SERVER_NO_ADMIN",
            "maybe",
            "variable MOCK_SERVER_NO_ADMIN (read as --no-admin): 'maybe' is neither 1/true/yes/on nor 0/false/no/off",
        ),
        (
            "MOCK_SERVER_MAX_SESSIONS",
            "0",
            "variable MOCK_SERVER_MAX_SESSIONS (read as --max-sessions): '0' is not a whole number of at least 1",
        ),
        ("MOCK_SERVER_JOURNAL", "lots", "variable MOCK_SERVER_JOURNAL (read as --journal): 'lots' is not a size"),
        (
            "MOCK_SERVER_IDLE_TIMEOUT",
            "-1",
            "variable MOCK_SERVER_IDLE_TIMEOUT (read as --idle-timeout): '-1' is not a number of seconds > 0",
        ),
    ],
)
def test_a_bad_variable_is_a_usage_error_that_names_the_variable(monkeypatch, capsys, variable, value, said):
    monkeypatch.setenv(variable, value)
    code, out, err = exits([], capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("usage: mock-server [serve] [OPTION ...]\n")
    (error,) = [line for line in err.splitlines() if line.startswith("mock-server: error: ")]
    assert error.startswith(f"mock-server: error: {said}"), error
    assert "argument --" not in err  # the flag the user never typed is not what is named as wrong


def test_the_healthcheck_names_a_bad_variable_too(monkeypatch, capsys):
    monkeypatch.setenv("MOCK_SERVER_PORT", "abc")
    code, _, err = exits(["healthcheck"], capsys)
    assert code == 2
    assert (
        "mock-server healthcheck: error: variable MOCK_SERVER_PORT (read as --port): 'abc' is not a whole number"
        in (err)
    )


def test_a_bad_flag_still_names_the_flag(capsys):
    code, _, err = exits(["--port", "eighty"], capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        "mock-server: error: argument --port: 'eighty' is not a port number (0-65535; 0 picks a free one)"
    )


def test_a_flag_wins_over_a_bad_variable(monkeypatch):
    monkeypatch.setenv("MOCK_SERVER_PORT", "abc")
    monkeypatch.setenv("MOCK_SERVER_NO_ADMIN", "maybe")
    args = cli._parser().parse_args(["--port", "0", "--no-admin"])
    assert (args.port, args.no_admin) == (0, True)


def test_good_variables_are_read_through_the_options_types(monkeypatch):
    for name, value in {"PORT": "0", "NO_ADMIN": "yes", "LOG_LEVEL": "INFO", "SEED": "7", "JOURNAL": "off"}.items():
        monkeypatch.setenv(f"MOCK_SERVER_{name}", value)
    monkeypatch.setenv("MOCK_SERVER_CLOCK", "")  # empty: unset, as a compose file's `MOCK_SERVER_CLOCK=` means
    settings = cli.settings_from(cli._parser().parse_args([]))
    assert (settings.port, settings.admin, settings.log_level, settings.seed) == (0, False, "info", 7)
    assert settings.bounds.journal_bytes == 0
    assert settings.clock is None


def test_a_check_is_not_stopped_by_a_bad_variable_it_does_not_read(monkeypatch, capsys):
    monkeypatch.setenv("MOCK_SERVER_PORT", "abc")
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().out.startswith("4 scenarios valid in ")


# --- a misspelled variable is warned of --------------------------------------------------------------------


def test_a_misspelled_variable_is_named_with_the_closest_one(monkeypatch, capsys):
    monkeypatch.setenv("MOCK_SERVER_PROT", "0")
    monkeypatch.setenv("MOCK_SERVER_SCENARO", "payments")
    monkeypatch.setenv("MOCK_SERVER_WHATEVER", "1")
    assert cli.main(["check"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "mock-server: warning: MOCK_SERVER_PROT is not a variable mock-server reads (did you mean MOCK_SERVER_PORT?);"
        " it is ignored",
        "mock-server: warning: MOCK_SERVER_SCENARO is not a variable mock-server reads (did you mean "
        "MOCK_SERVER_SCENARIO?); it is ignored",
        "mock-server: warning: MOCK_SERVER_WHATEVER is not a variable mock-server reads (`mock-server --help` lists "
        "the variables); it is ignored",
    ]
    assert out.startswith("4 scenarios valid in ")  # a warning, not a failure


def test_the_variables_that_are_read_draw_no_warning(monkeypatch, capsys):
    for option in PLUGIN_OPTIONS:  # the pytest plugin's, set in the same CI job as the server's
        monkeypatch.setenv(option.env, "")
    for name in ("PORT", "HOST", "FIXTURES", "MAX_HEADER_BYTES", "VALIDATE_RESPONSES", "TEST_URL"):
        monkeypatch.setenv(f"MOCK_SERVER_{name}", "")
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().err == ""


def test_every_plugin_variable_is_known_to_the_command_line():
    parsers = (cli._parser(), cli._check_parser(), cli._parser(record=True))
    known = environment.variables_read_by(*parsers) | environment.READ_ELSEWHERE
    assert {option.env for option in PLUGIN_OPTIONS} <= known


# --- counts read right -----------------------------------------------------------------------------------------


def test_one_scenario_is_one_scenario(tmp_path, capsys):
    shutil.copy(SHIPPED / "default.yaml", tmp_path / "default.yaml")
    assert cli.main(["check", "--fixtures", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"1 scenario valid in {tmp_path}: default\n"


def test_the_ready_line_counts_in_the_singular_and_the_plural():
    assert cli_serve.ready_banner("one", 1, 1) == "(scenario one: 1 event, 1 account)"
    assert cli_serve.ready_banner("default", 4, 2) == "(scenario default: 4 events, 2 accounts)"
    assert cli_serve.ready_banner("empty", 0, 0) == "(scenario empty: 0 events, 0 accounts)"


# --- --fixtures DIR without `default` ---------------------------------------------------------------------------


@pytest.fixture
def without_default(tmp_path: Path) -> Path:
    for name in ("payments", "recipients"):
        shutil.copy(SHIPPED / f"{name}.yaml", tmp_path / f"{name}.yaml")
    return tmp_path


def test_serving_a_directory_without_default_says_what_it_has_and_how_to_pick(without_default, capsys):
    assert cli.main(["--fixtures", str(without_default)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"{without_default}: no scenario named 'default' to start sessions from; 2 scenarios there: payments, "
        "recipients.\n"
        "Pick one with --scenario NAME (or MOCK_SERVER_SCENARIO=NAME), e.g. "
        f"`mock-server --fixtures {without_default} --scenario payments`, or add default.yaml there.\n"
    )


def test_an_unknown_scenario_names_the_ones_there_are(capsys):
    assert cli.main(["--scenario", "nope"]) == 2
    err = capsys.readouterr().err
    assert (
        "no scenario named 'nope' to start sessions from; 4 scenarios there: default, empty, payments, recipients"
        in (err)
    )


def test_serving_a_directory_without_scenario_files_says_so(tmp_path, capsys):
    assert cli.main(["--fixtures", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path}: no scenario file (NAME.yaml or NAME.yml) in this directory, so there is no scenario 'default' "
        "to start from: add default.yaml there, or point --fixtures (MOCK_SERVER_FIXTURES) at your scenario files\n"
    )


def test_check_of_a_directory_without_default_notes_how_to_serve_it(without_default, capsys):
    assert cli.main(["check", "--fixtures", str(without_default)]) == 0
    assert capsys.readouterr().out == (
        f"2 scenarios valid in {without_default}: payments, recipients\n"
        "note: none is named 'default', the one `mock-server` starts from: serve these with --scenario NAME "
        "(e.g. --scenario payments)\n"
    )


def test_check_of_a_directory_without_scenario_files_fails(tmp_path, capsys):
    assert cli.main(["check", "--fixtures", str(tmp_path)]) == 2
    assert capsys.readouterr().out == f"{tmp_path}: no scenario file (NAME.yaml or NAME.yml) in this directory\n"


def test_every_variable_the_docs_and_recipes_set_is_one_that_is_read():
    """A MOCK_SERVER_* name in the pages, the CI recipes or the Containerfile that nothing reads would draw the
    warning above for everyone who copies it."""
    parsers = (cli._parser(), cli._check_parser(), cli._parser(record=True), cli._mcp_parser())
    known = environment.variables_read_by(*parsers) | environment.READ_ELSEWHERE
    repository = Path(__file__).resolve().parents[2]
    files = [
        repository / "README.md",
        repository / "Containerfile",
        *sorted((repository / "docs").glob("*.md")),
        *sorted((repository / "examples").rglob("*.yml")),
        *sorted((repository / "examples").rglob("*.sh")),
        *sorted((repository / "deploy").rglob("*")),
    ]
    unknown = set()
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        shown_as_typos = set(re.findall(r"warning: (MOCK_SERVER_\w+) is not a variable", text))  # the warning shown
        for name in re.findall(r"\bMOCK_SERVER_[A-Z][A-Z_]*[A-Z]\b", text):
            if name not in known and name not in shown_as_typos:
                unknown.add(f"{path.relative_to(repository)}: {name}")
    assert unknown == set()


def _console_examples(page: Path) -> list[tuple[str, str]]:
    """(command, output) of each ```text block of `page` that starts with `$ ... mock-server`."""
    blocks = re.findall(r"```text\n\$ (.*?)\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
    return [(command, output) for command, output in blocks if "mock-server" in command]


def test_the_getting_started_examples_are_what_the_commands_print(tmp_path, monkeypatch, capsys):
    """The pages' `$ mock-server ...` blocks, replayed in process in a directory holding `my-scenarios/`."""
    page = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
    examples = _console_examples(page)
    assert len(examples) >= 2
    (tmp_path / "my-scenarios").mkdir()
    for name in ("payments", "recipients"):
        shutil.copy(SHIPPED / f"{name}.yaml", tmp_path / "my-scenarios" / f"{name}.yaml")
    monkeypatch.chdir(tmp_path)
    for command, output in examples:
        words = shlex.split(command)
        with monkeypatch.context() as scoped:
            while "=" in words[0]:
                name, _, value = words.pop(0).partition("=")
                scoped.setenv(name, value)
            assert words[0] == "mock-server", command
            status: int | str | None
            try:
                status = cli.main(words[1:])
            except SystemExit as ended:
                status = ended.code
        out, err = capsys.readouterr()
        assert status != 0, command  # each shows a refusal
        assert out + err == output, command


# --- a busy port (issue 43) -----------------------------------------------------------------------------------


def test_a_busy_port_is_said_plainly_and_exits_2(capsys):
    """It was uvicorn's bare `[Errno 98] ... address already in use` and exit 3."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = cli.main(["--port", str(port)])
    out, err = capsys.readouterr()
    assert status == 2
    assert err == (
        f"mock-server: port {port} on 127.0.0.1 is in use (another server?): choose another with --port "
        "(or PORT= for make run)\n"
    )
    assert "Errno" not in out + err


def test_a_free_port_is_not_taken_for_a_busy_one() -> None:
    import socket

    from mock_server.server import port_in_use

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert port_in_use("127.0.0.1", port) is None  # free again: the probe let it go
    assert port_in_use("127.0.0.1", 0) is None  # 0 picks a free one


def test_the_readmes_first_screen_says_how_long_make_test_takes_and_where_podman_users_go() -> None:
    first_screen = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").splitlines()[:24]
    text = "\n".join(first_screen)
    test_line = next(line for line in first_screen if line.startswith("make test"))
    assert re.search(r"~\d+ s on 2 cores", test_line), test_line
    assert "Podman" in text and "(docs/containers-and-scaling.md)" in text
    assert "PORT=" in text
