"""The documentation: README.md (the front page) and the pages of docs/, read on GitHub and built by mkdocs.

- mkdocs.yml's nav lists every page, and nothing that is not one;
- every relative link of README.md and of every page reaches a file of the repository, and its `#anchor` a heading
  of that file, as GitHub and mkdocs both spell the heading's anchor;
- the site builds with `mkdocs build --strict` with no network (in a network namespace of its own where the machine
  allows one), and what it builds loads nothing from elsewhere: no fonts, scripts, styles or pictures off the site
  (in `make test-e2e`: the build is a child process of ~2.5 s);
- the pages name no module of the package (it is being reorganised; internals are in ARCHITECTURE.md), and the
  repository files they name exist.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from scripts import mkdocs_hooks

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
HOME = "index.md"  # the site's home page: README.md, put there by scripts/mkdocs_hooks.py
# Written in the package's reorganisation, on another branch: a link to it may dangle until that lands, and is
# checked like any other once the file is here.
NOT_YET_WRITTEN = {"ARCHITECTURE.md"}
# The package's modules that are its public face, which the pages may name (`mock_server.pytest_plugin`, ...).
PUBLIC_MODULES = {
    "app",
    "settings",
    "cli",
    "client",
    "testcontainers",
    "probe",
    "pytest_plugin",
    "schemathesis_hooks",
    "serving",
    "session_supply",
}
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _name(path: Path) -> str:
    return path.relative_to(REPOSITORY).as_posix()


def outside_fences(markdown: str) -> Iterator[str]:
    fenced = False
    for line in markdown.split("\n"):
        if mkdocs_hooks.FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            yield line


def links(markdown: str) -> list[str]:
    """Every link and picture target outside code, as written."""
    found: list[str] = []
    for line in outside_fences(markdown):
        found += [m["target"] for m in mkdocs_hooks.TOKEN.finditer(line) if m["code"] is None]
    return found


def _plain(heading: str) -> str:
    """A heading's text as rendered: links become their text, code spans their content."""
    text = re.sub(r"!?\[((?:[^\]`]|`[^`]*`)*)\]\([^)]*\)", r"\1", heading)
    return text.replace("`", "")


def github_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", _plain(heading).strip().lower()).replace(" ", "-")


def mkdocs_anchor(heading: str) -> str:
    """Python-Markdown's toc slugify (mkdocs' default), without its handling of repeated headings."""
    text = unicodedata.normalize("NFKD", _plain(heading)).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(markdown: str) -> set[str]:
    """The anchors both GitHub and mkdocs give a file's headings (a repeated heading gets none: they differ)."""
    headings = [m[2] for line in outside_fences(markdown) if (m := HEADING.match(line))]
    github = [github_anchor(h) for h in headings]
    mkdocs = [mkdocs_anchor(h) for h in headings]
    return {a for a in github if github.count(a) == 1} & {a for a in mkdocs if mkdocs.count(a) == 1}


# --- the nav --------------------------------------------------------------------------------------------------


def nav_pages(entries: list[object]) -> list[str]:
    found: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            found.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                found += nav_pages(value if isinstance(value, list) else [value])
    return found


def test_the_nav_lists_every_page_once() -> None:
    config = yaml.safe_load((REPOSITORY / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), f"a page listed twice: {listed}"
    assert set(listed) == {HOME} | {page.name for page in DOCS.glob("*.md")}
    assert not (DOCS / HOME).exists(), "docs/index.md would hide README.md, the site's home page"
    assert listed[0] == HOME


# --- links ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_reaches_a_file_and_its_anchor(page: Path) -> None:
    problems: list[str] = []
    text = page.read_text(encoding="utf-8")
    targets = links(text)
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # a URL: http://127.0.0.1:8000/... is the server the reader runs
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.is_relative_to(REPOSITORY):
            problems.append(f"{target}: outside the repository")
        elif not file.exists():
            if _name(file) not in NOT_YET_WRITTEN:
                problems.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file.read_text(encoding="utf-8"))):
            problems.append(f"{target}: no heading with that anchor (on GitHub and in mkdocs alike)")
    assert targets or page.name == "reference.md"
    assert not problems, f"{_name(page)}:\n" + "\n".join(problems)


def test_the_anchor_rules_agree_with_github_and_mkdocs() -> None:
    heading = "Faults: errors, dropped connections, broken and slow answers (`POST /__mock/faults`)"
    assert github_anchor(heading) == "faults-errors-dropped-connections-broken-and-slow-answers-post-__mockfaults"
    assert mkdocs_anchor(heading) == github_anchor(heading)
    assert github_anchor("a -- b") == "a----b" and mkdocs_anchor("a -- b") == "a-b"  # where they part ways
    assert anchors("# A\n```console\n# not a heading\n```\n## B\n## B\n") == {"a"}


def test_the_site_hook_unescapes_pipes_in_code_in_tables() -> None:
    row = "| `--log-level` | `critical\\|error` | a \\| b `x\\|y` |"
    assert mkdocs_hooks.rewrite(row, "docs") == "| `--log-level` | `critical|error` | a \\| b `x|y` |"
    assert mkdocs_hooks.rewrite("not a row: `a\\|b`", "docs") == "not a row: `a\\|b`"


def test_the_site_hook_rewrites_links_for_the_site() -> None:
    readme = (
        "See [Scenarios](docs/scenarios.md#big-ones), ![x](docs/screenshots/a.png), [`openapi.yaml`](openapi.yaml)."
    )
    assert mkdocs_hooks.rewrite(readme, "") == (
        "See [Scenarios](scenarios.md#big-ones), ![x](screenshots/a.png), `openapi.yaml`."
    )
    page = "[the spec](../openapi.yaml), [Sessions](sessions.md), `[not](a-link.md)`\n```\n[nor](this.md)\n```"
    assert mkdocs_hooks.rewrite(page, "docs") == (
        "the spec (`openapi.yaml`), [Sessions](sessions.md), `[not](a-link.md)`\n```\n[nor](this.md)\n```"
    )


# --- what the pages name --------------------------------------------------------------------------------------


def test_the_pages_name_no_module_of_the_package() -> None:
    package = REPOSITORY / "mock_server"
    module_files = {path.name for path in package.rglob("*.py")} - {"__init__.py", "__main__.py"}
    problems: list[str] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        problems += [f"{_name(page)}: {name}" for name in sorted(set(re.findall(r"[\w/]+\.py\b", text))) if
                     Path(name).name in module_files or name.startswith("mock_server/")]  # fmt: skip
        for dotted in set(re.findall(r"\bmock_server\.(\w+)", text)):
            if dotted not in PUBLIC_MODULES:
                problems.append(f"{_name(page)}: mock_server.{dotted}")
    assert not problems, "internal modules named in the docs (link ARCHITECTURE.md instead):\n" + "\n".join(problems)


def test_the_repository_files_the_pages_name_exist() -> None:
    problems: list[str] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in sorted(set(re.findall(r"\b((?:tests|scripts|bench|examples|deploy|interop)/[\w/.-]*\w)", text))):
            if not (REPOSITORY / name).exists():
                problems.append(f"{_name(page)}: {name}")
    assert not problems, "\n".join(problems)


# --- the site -------------------------------------------------------------------------------------------------


def _offline() -> list[str]:
    """A command prefix that runs without any network (a network namespace of its own), where the machine allows."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "--net", "true"], capture_output=True, check=False)
    return [unshare, "--net"] if probe.returncode == 0 else []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)]
    result = subprocess.run(
        [*_offline(), *mkdocs],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return folder


@pytest.mark.e2e  # builds the site with mkdocs in a child process (~2.5 s): `make test-e2e`, and `make docs` in CI
def test_the_site_has_every_page(site: Path) -> None:
    built = {path.name for path in site.glob("*.html")}
    assert {f"{page.stem}.html" for page in DOCS.glob("*.md")} | {"index.html"} <= built
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="scenarios.html"' in home  # the README's docs/scenarios.md, as the site spells it


@pytest.mark.e2e  # the same build
def test_the_site_loads_nothing_from_elsewhere(site: Path) -> None:
    """Fonts, scripts, styles, pictures and frames come from the site itself. A plain link to another site (the
    theme's credit) is not a load; nor is the SVG namespace inside an inline icon."""
    problems: list[str] = []
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*>", html):
            if re.search(r"""\b(?:src|href|data|srcset)\s*=\s*["']?(?:https?:)?//""", tag):
                problems.append(f"{page.name}: {tag}")
        if re.search(r'class="[^"]*\bmermaid\b', html):
            problems.append(f"{page.name}: a mermaid diagram (the theme loads mermaid from a CDN)")
    for sheet in site.rglob("*.css"):
        css = sheet.read_text(encoding="utf-8")
        problems += [f"{sheet.name}: {url}" for url in re.findall(r"""url\(\s*["']?((?:https?:)?//[^)"']*)""", css)]
        problems += [f"{sheet.name}: {rule}" for rule in re.findall(r"@import[^;]*(?:https?:)?//[^;]*;", css)]
    config = yaml.safe_load((REPOSITORY / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["font"] is False, "theme.font: false keeps Google Fonts out"
    assert "repo_url" not in config, "with repo_url the theme asks GitHub's API for the repository's stars"
    assert not problems, "\n".join(problems)
