"""The docs' examples reproduce: every `$ curl` line of the console blocks of README.md and of the docs/ pages,
replayed in order, each page on a fresh seeded server of its own.

`make run` serves with `--seed 1`, so the ids a reader gets from a page, run against a fresh `make run`, are the
ones it shows (each replayed page says so at its top). This test replays each page's command lines in process on a
new app built with that seed and compares what the server answers with the lines printed under each command: a body
byte for byte, and with `-i` the status line and every header shown. A command printed without output is replayed
all the same (later commands depend on its effects) and must not answer a 5xx. The outputs shown are made by
running the commands against a real server (scripts/docs_examples.py), never typed.

Used by scripts/image_test.py and scripts/docs_examples.py too: `replayed_pages()`, `examples(markdown)`,
`differences(example, responses)`, `sessions_named(examples)`, `CURL_HEADERS`, `NoAnswer`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Protocol

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.http.fault_replies import ConnectionDropped
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
DOCS = REPOSITORY / "docs"
MAKEFILE = REPOSITORY / "Makefile"
SEED = 1  # what `make run` passes as --seed
PROMPT = "$ "
# What a replayed page says before its first console block: how a reader reproduces it.
REPRODUCE = "against a fresh `make run`"


def replayed_pages() -> list[Path]:
    """The Markdown files whose `$` lines are replayed, each on a fresh server: README.md and every page of docs/
    that has a ```console block."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    return [page for page in pages if "```console" in page.read_text(encoding="utf-8")]


class Answer(Protocol):
    """What is read of a response (TestClient's is httpx2's, or httpx's on older Starlettes)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def text(self) -> str: ...


@dataclass(frozen=True)
class Curl:
    """One curl invocation, limited to the flags the README uses."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    data: str | None = None
    include: bool = False


@dataclass
class Example:
    """A `$ ...` line of a console block (one or more commands joined by `;`) and the lines printed under it."""

    line: int
    text: str
    commands: list[Curl]
    output: list[str] = field(default_factory=list)


def parse_curl(words: list[str]) -> Curl:
    if not words or words[0] != "curl":
        raise ValueError(f"not a curl command: {shlex.join(words)}")
    method: str | None = None
    url: str | None = None
    headers: list[tuple[str, str]] = []
    data: str | None = None
    include = False
    rest = iter(words[1:])
    for word in rest:
        if word in ("-s", "-S", "-sS"):  # -S: curl still prints its own error (a dropped connection)
            continue
        if word == "-i":
            include = True
        elif word == "-X":
            method = next(rest)
        elif word == "-H":
            name, sep, value = next(rest).partition(":")
            if not sep:
                raise ValueError(f"header without a colon in: {shlex.join(words)}")
            headers.append((name.strip(), value.strip()))
        elif word == "-d":
            data = next(rest)
        elif word.startswith("-"):
            raise ValueError(f"flag {word} is not understood by this test: {shlex.join(words)}")
        elif url is None:
            url = word
        else:
            raise ValueError(f"two URLs in: {shlex.join(words)}")
    if url is None:
        raise ValueError(f"no URL in: {shlex.join(words)}")
    if method is None:
        method = "GET" if data is None else "POST"  # as curl: -d alone means POST
    if data is not None and not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/x-www-form-urlencoded"))  # curl's default for -d
    return Curl(method, url, tuple(headers), data, include)


def split_commands(text: str) -> list[list[str]]:
    """Shell words of a command line, cut at `;`; a `#` starts a comment."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for word in lexer:
        if word == ";":
            commands.append([])
        else:
            commands[-1].append(word)
    return [words for words in commands if words]


def examples(markdown: str) -> list[Example]:
    """Every `$` line of every ```console block, in document order, with the lines printed under it."""
    found: list[Example] = []
    in_console = False
    current: Example | None = None
    for number, line in enumerate(markdown.splitlines(), start=1):
        if not in_console:
            in_console = line.strip() == "```console"
            continue
        if line.startswith("```"):
            in_console, current = False, None
        elif line.startswith(PROMPT):
            text = line[len(PROMPT) :]
            current = Example(number, text, [parse_curl(words) for words in split_commands(text)])
            found.append(current)
        elif current is not None:
            current.output.append(line)
        elif line.strip():
            raise ValueError(f"line {number}: output before any command in a console block: {line!r}")
    for example in found:
        while example.output and not example.output[-1].strip():
            example.output.pop()
    return found


@dataclass(frozen=True)
class NoAnswer:
    """A request an injected `reset` fault answered with nothing: what curl prints then (checked by hand with
    curl 7.88.1 against `make run`; tests/admin/test_fault_kinds.py checks the reset on a real socket)."""

    status_code: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    text: str = "curl: (56) Recv failure: Connection reset by peer"


def send(client: TestClient, curl: Curl) -> Answer:
    content = None if curl.data is None else curl.data.encode()
    try:
        return client.request(curl.method, curl.url, headers=list(curl.headers), content=content)
    except ConnectionDropped:
        return NoAnswer()


# The journal shows the request headers: the replay sends curl's own (curl 7.88.1, Debian 12's), not the test
# client's, so the README shows what a reader's curl gets.
CURL_HEADERS = (("User-Agent", "curl/7.88.1"), ("Accept", "*/*"))


def sends_what_curl_sends(client: TestClient) -> None:
    for name in list(client.headers):
        del client.headers[name]
    for name, value in CURL_HEADERS:
        client.headers[name] = value


def status_line(response: Answer) -> str:
    return f"HTTP/1.1 {response.status_code} {HTTPStatus(response.status_code).phrase}"


def differences(example: Example, responses: list[Answer]) -> list[str]:
    """What the README shows under `example` and the server did not answer (empty: it reproduces)."""
    if not example.output:
        return [f"answered {status_line(r)}: {r.text}" for r in responses if r.status_code >= 500]
    if not any(curl.include for curl in example.commands):
        shown, answered = "\n".join(example.output), "".join(r.text for r in responses)
        return [] if shown == answered else [f"shows   {shown}", f"answers {answered}"]
    if len(example.commands) != 1:
        return ["-i with output shown is only checked on a line with a single command"]
    response = responses[0]
    problems: list[str] = []
    if example.output[0] != status_line(response):
        problems += [f"shows   {example.output[0]}", f"answers {status_line(response)}"]
    lines = iter(example.output[1:])
    for line in lines:
        if not line.strip():
            break
        name, sep, value = line.partition(":")
        actual = response.headers.get(name.strip())
        if not sep or actual != value.strip():
            problems += [f"shows   {line}", f"answers {name.strip()}: {actual}"]
    shown = "\n".join(lines)
    if shown != response.text:
        problems += [f"shows   {shown}", f"answers {response.text}"]
    return problems


def sessions_named(found: list[Example]) -> set[str]:
    """The sessions the examples name, by X-Mock-Session header or /__session/NAME/ path (`default` is implied)."""
    names: set[str] = set()
    for example in found:
        for curl in example.commands:
            names.update(value for name, value in curl.headers if name.lower() == "x-mock-session")
            names.update(re.findall(r"/__session/([^/?#]+)", curl.url))
    return names


def _name(page: Path) -> str:
    return page.relative_to(REPOSITORY).as_posix()


@pytest.mark.parametrize("page", replayed_pages(), ids=_name)
def test_the_examples_reproduce_under_make_run_seed(specs: Specs, page: Path) -> None:
    found = examples(page.read_text(encoding="utf-8"))
    app = create_app(Settings(seed=SEED, validate_responses=True), specs)  # a fresh `make run`: a page of its own
    report: list[str] = []
    with TestClient(app, raise_server_exceptions=True) as client:
        sends_what_curl_sends(client)
        for example in found:
            responses = [send(client, curl) for curl in example.commands]
            problems = differences(example, responses)
            if problems:
                report.append(f"{_name(page)}:{example.line}: $ {example.text}")
                report += [f"    {problem}" for problem in problems]
    assert not report, "examples that do not reproduce (scripts/docs_examples.py remakes the outputs):\n" + "\n".join(
        report
    )


def test_the_replayed_pages_are_the_ones_with_examples() -> None:
    pages = {_name(page): len(examples(page.read_text(encoding="utf-8"))) for page in replayed_pages()}
    walkthroughs = [
        "README.md",
        "docs/api-by-example.md",
        "docs/hooks-and-faults.md",
        "docs/sessions.md",
        "docs/verify-and-coverage.md",
        "docs/snapshots-and-schedules.md",
    ]
    assert set(walkthroughs) <= set(pages), "a page's console blocks went missing"
    assert sum(pages.values()) >= 70, f"the examples went missing: {pages}"
    assert all(pages.values()), f"a ```console block without a `$` line: {pages}"


@pytest.mark.parametrize("page", replayed_pages(), ids=_name)
def test_a_replayed_page_says_how_to_reproduce_it(page: Path) -> None:
    """A reader gets the outputs shown only on a fresh `make run`: the page says so before its first example."""
    text = page.read_text(encoding="utf-8")
    before = text[: text.index("```console")]
    assert REPRODUCE in before, f"{_name(page)}: say {REPRODUCE!r} before the first console block"


def test_make_run_serves_with_the_readmes_seed() -> None:
    makefile = MAKEFILE.read_text(encoding="utf-8")
    assert re.search(rf"^SEED \?= {SEED}$", makefile, re.MULTILINE), "Makefile: SEED ?= 1 is gone"
    run = re.search(r"^run:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert run is not None and "--seed $(SEED)" in run.group(1), "Makefile: `make run` no longer passes --seed"


def test_the_parser_reads_curl_as_the_shell_does() -> None:
    markdown = "\n".join(
        [
            "```console",
            "$ curl -s -i -X PUT 'http://h/a?b=c' -H 'A: 1' -d '{\"x\": \"y z\"}'   # comment",
            "HTTP/1.1 200 OK",
            "",
            "$ curl -s http://h/x ; curl -s -X DELETE http://h/x",
            "{}",
            "```",
            "$ curl -s http://h/not-in-a-console-block",
        ]
    )
    first, second = examples(markdown)
    form = ("Content-Type", "application/x-www-form-urlencoded")  # what curl sends with -d and no Content-Type
    assert first.commands == [Curl("PUT", "http://h/a?b=c", (("A", "1"), form), '{"x": "y z"}', include=True)]
    assert first.output == ["HTTP/1.1 200 OK"]
    assert second.commands == [Curl("GET", "http://h/x"), Curl("DELETE", "http://h/x")]
    assert second.output == ["{}"]
