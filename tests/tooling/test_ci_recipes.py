"""The CI recipes under examples/ci pass real linters, and each linter is shown to reject a broken copy.

actionlint (GitHub Actions: syntax, expressions, which contexts a key may use, action versions), the real Docker
Compose CLI's `config` (its own loader and schema), and check-jsonschema with the GitHub workflow, GitLab CI and
Compose Spec schemas it ships. All are PyPI wheels in the `test` extra and need no network. The linters run in
child processes: `make test-e2e` runs those two tests; the recipes' content is checked here in the default tier.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from mock_server.http.hosts import HostPolicy, host_name

RECIPES = Path(__file__).resolve().parents[2] / "examples" / "ci"
BIN = Path(sys.executable).parent
GITHUB = RECIPES / "github-actions.yml"
COMPOSE = RECIPES / "docker-compose.yml"
GITLAB = RECIPES / "gitlab-ci.yml"


def _tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is missing from {BIN}: `make install` puts it there (pyproject's test extra)"
    return str(path)


def lint(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=RECIPES)


# A linter checks files and says, for each, None (accepted) or what it found wrong.
Linter = Callable[[list[Path]], dict[Path, str | None]]


def each_file(command: Callable[[Path], list[str]]) -> Linter:
    """A linter run once per file; a file is accepted when the run exits 0."""

    def check(paths: list[Path]) -> dict[Path, str | None]:
        verdicts: dict[Path, str | None] = {}
        for path in paths:
            result = lint(command(path))
            verdicts[path] = None if result.returncode == 0 else result.stdout + result.stderr
        return verdicts

    return check


def actionlint(path: Path) -> list[str]:
    return [_tool("actionlint"), "-no-color", str(path)]


def compose_config(path: Path) -> list[str]:
    # Relative paths (the build context, the fixtures volume) resolve from examples/ci wherever the file is.
    return [_tool("docker-compose"), "--project-directory", str(RECIPES), "--file", str(path), "config", "--quiet"]


def schema(name: str) -> Linter:
    """check-jsonschema with one of the schemas it ships: one run for every file (a run is ~0.7 s, most of it its
    imports), its JSON report naming the files it refused."""

    def check(paths: list[Path]) -> dict[Path, str | None]:
        command = [_tool("check-jsonschema"), "--builtin-schema", f"vendor.{name}", "--output-format", "json"]
        result = lint([*command, *map(str, paths)])
        if result.returncode not in (0, 1):  # it could not check them: that accepts nothing, refuses nothing
            raise AssertionError(f"check-jsonschema failed:\n{result.stdout}{result.stderr}")
        report = json.loads(result.stdout)
        found: dict[str, list[str]] = {}
        for problem in [*report.get("errors", []), *report.get("parse_errors", [])]:  # keys left out when empty
            found.setdefault(problem["filename"], []).append(json.dumps(problem, indent=2))
        assert (result.returncode == 0) == (not found), result.stdout + result.stderr
        return {path: "\n".join(found[str(path)]) if str(path) in found else None for path in paths}

    return check


LINTERS: list[tuple[str, Path, Linter]] = [
    ("actionlint", GITHUB, each_file(actionlint)),
    ("github-workflows schema", GITHUB, schema("github-workflows")),
    ("docker compose config", COMPOSE, each_file(compose_config)),
    ("compose-spec schema", COMPOSE, schema("compose-spec")),
    ("gitlab-ci schema", GITLAB, schema("gitlab-ci")),
]
IDS = [f"{p.name}-{n}" for n, p, _ in LINTERS]

# One mistake per file that its linters must catch: a misspelt key each time.
BREAKAGES = {
    GITHUB: ("runs-on: ubuntu-latest", "run-on: ubuntu-latest"),
    COMPOSE: ("start_period: 30s", "start_periode: 30s"),
    GITLAB: ("  script:\n", "  scripts:\n"),
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[Path, str | None]]:
    """What a linter says of its recipe and of the recipe's broken copy, checked together, once for the module."""
    folder = tmp_path_factory.mktemp("broken")
    found: dict[str, dict[Path, str | None]] = {}

    def of(linter: str) -> dict[Path, str | None]:
        if linter not in found:
            ((recipe, check),) = [(recipe, check) for name, recipe, check in LINTERS if name == linter]
            good, bad = BREAKAGES[recipe]
            text = recipe.read_text(encoding="utf-8")
            assert good in text
            broken = folder / recipe.name
            broken.write_text(text.replace(good, bad, 1), encoding="utf-8")
            found[linter] = check([recipe, broken])
        return found[linter]

    return of


@pytest.mark.e2e  # the linters in child processes (check-jsonschema's start alone ~0.5 s a run): `make test-e2e`
@pytest.mark.parametrize(("linter", "recipe"), [(n, p) for n, p, _ in LINTERS], ids=IDS)
def test_the_recipe_passes_its_linter(
    verdicts: Callable[[str], dict[Path, str | None]], linter: str, recipe: Path
) -> None:
    problems = verdicts(linter)[recipe]
    assert problems is None, f"{linter} rejects {recipe.name}:\n{problems}"


@pytest.mark.e2e  # the same runs
@pytest.mark.parametrize(("linter", "recipe"), [(n, p) for n, p, _ in LINTERS], ids=IDS)
def test_the_linter_rejects_a_broken_copy(
    verdicts: Callable[[str], dict[Path, str | None]], linter: str, recipe: Path
) -> None:
    (problems,) = [said for path, said in verdicts(linter).items() if path != recipe]
    assert problems is not None, f"{linter} accepted a broken {recipe.name}"


def _services(path: Path) -> dict[str, dict[str, object]]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return document["services"]


def test_the_compose_mock_is_health_checked_and_configured_by_mock_server_variables() -> None:
    mock = _services(COMPOSE)["pix-mock"]
    assert mock["healthcheck"]["test"] == ["CMD", "mock-server", "healthcheck"]  # type: ignore[index]
    assert all(name.startswith("MOCK_SERVER_") for name in mock["environment"])  # type: ignore[attr-defined]
    assert mock["read_only"] is True
    assert _services(COMPOSE)["tests"]["depends_on"] == {"pix-mock": {"condition": "service_healthy"}}


def test_the_github_service_container_is_configured_by_mock_server_variables() -> None:
    workflow = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))
    job = workflow["jobs"]["service-container"]
    service = job["services"]["pix-mock"]
    assert service["env"] and all(name.startswith("MOCK_SERVER_") for name in service["env"])
    # The tests reach it through the pytest plugin's external mode, on the port the service publishes.
    (published,) = service["ports"]
    urls = [step["env"]["MOCK_SERVER_URL"] for step in job["steps"] if "MOCK_SERVER_URL" in step.get("env", {})]
    assert urls == [f"http://127.0.0.1:{published.split(':')[0]}"]
    assert "pytest" in " ".join(step.get("run", "") for step in workflow["jobs"]["pytest-plugin"]["steps"])


def _answers(environment: dict[str, str], url: str) -> bool:
    """Whether a mock configured by `environment` answers requests to `url` (the Host rule, http/hosts.py)."""
    allowed = environment.get("MOCK_SERVER_ALLOWED_HOSTS", "").split(",")
    policy = HostPolicy.build([entry for entry in allowed if entry.strip()], environment.get("MOCK_SERVER_HOST"))
    host = host_name(urlsplit(url).netloc)
    return host is not None and policy.allows(host)


def test_the_compose_mock_answers_to_the_name_the_tests_reach_it_by() -> None:
    services = _services(COMPOSE)
    url = services["tests"]["environment"]["PIX_MOCK_URL"]  # type: ignore[index]
    assert urlsplit(url).hostname == "pix-mock"
    assert _answers(services["pix-mock"]["environment"], url)  # type: ignore[arg-type]
    assert not _answers({}, url)  # without the variable: 403 host_not_allowed


def test_the_gitlab_service_answers_to_its_alias() -> None:
    job = yaml.safe_load(GITLAB.read_text(encoding="utf-8"))["contract-tests"]
    (service,) = job["services"]
    url = job["variables"]["MOCK_SERVER_URL"]
    assert urlsplit(url).hostname == service["alias"]
    assert _answers(service["variables"], url)


def test_the_github_service_is_reached_by_address() -> None:
    service = yaml.safe_load(GITHUB.read_text(encoding="utf-8"))["jobs"]["service-container"]["services"]["pix-mock"]
    assert _answers(service["env"], "http://127.0.0.1:8000")
