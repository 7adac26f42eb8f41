"""mkdocs hooks (mkdocs.yml `hooks:`): README.md is the site's home page, and links written for GitHub work in the site.

The Markdown files are written to be read on GitHub as well as in the site, so their relative links point where
the files are in the repository: README.md links `docs/scenarios.md`, a page links `../openapi.yaml`. In the site:
- the README becomes `index.md`, its links into docs/ lose their `docs/` prefix;
- a `\\|` inside code in a table cell, which GitHub needs, becomes a plain `|`, which Python-Markdown needs;
- a link to a repository file outside docs/ (the specs, the Containerfile, BENCHMARKS.md, ARCHITECTURE.md) has
  nothing to point to, so it is shown as that file's path in the repository (the site is built from a checkout).
Everything else is left to mkdocs, whose --strict build checks every link and anchor that remains.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
HOME = "index.md"
FENCE = re.compile(r"^\s*(```|~~~)")
# A code span (left alone), or a link or image whose text may hold code spans: left to right, so a link inside a
# code span is never seen as one.
TOKEN = re.compile(
    r"(?P<code>(?P<ticks>`+).+?(?P=ticks))"
    r"|(?P<bang>!?)\[(?P<text>(?:[^\]`]|`[^`]*`)*)\]\((?P<target>[^)\s]+)\)"
)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, HOME, abs_src_path=str(README)))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    # Where the page's own file sits in the repository, relative to its root: "" for README, "docs" for a page.
    source = "" if page.file.src_uri == HOME else posixpath.dirname(f"docs/{page.file.src_uri}")
    return rewrite(markdown, source)


def rewrite(markdown: str, source: str) -> str:
    """`markdown`'s relative links, written from `source` (a folder of the repository), as the site needs them."""
    lines, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        lines.append(line if fenced else _outside_code(line, source))
    return "\n".join(lines)


def _outside_code(line: str, source: str) -> str:
    in_table = line.lstrip().startswith("|")
    return TOKEN.sub(lambda match: _link(match, source, in_table), line)


def _link(match: re.Match[str], source: str, in_table: bool) -> str:
    if match["code"] is not None:
        # GitHub needs a `|` escaped in a table cell even inside code, where Python-Markdown shows the backslash.
        return match.group(0).replace("\\|", "|") if in_table else match.group(0)
    target = match["target"]
    if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^/", target):  # a URL, an anchor on the same page, an absolute path
        return match.group(0)
    path, hash_, anchor = target.partition("#")
    in_repository = posixpath.normpath(posixpath.join(source, path))
    if in_repository == "docs" or in_repository.startswith("docs/"):
        relative = posixpath.relpath(in_repository, "docs")
        return f"{match['bang']}[{match['text']}]({relative}{hash_}{anchor})"
    text = match["text"]
    name = posixpath.basename(in_repository.rstrip("/"))
    return text if name in text else f"{text} (`{in_repository}`)"
