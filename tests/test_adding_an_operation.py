"""ARCHITECTURE.md's "Adding an operation" lists every file a public operation needs, and every operation of
openapi.yaml is in each of them: an operation added to the spec fails here naming each file it is still missing
from (its handler, its declaration, its verify-provider flow, its planted defect, a docs example)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from mock_server.api.handlers import HANDLERS
from mock_server.domain.operations import OPERATIONS
from mock_server.provider.flows import catalogue
from mock_server.spec.openapi import Specs
from tests.api.test_readme import examples, replayed_pages
from tests.default_scenario import UNKNOWN_EVENT
from tests.planted_defects import DEFECTS

ROOT = Path(__file__).resolve().parents[1]
SECTION = re.compile(r"^## Adding an operation\n(?P<body>.*?)(?=^## )", re.M | re.S)
ITEM = re.compile(r"^\d+\. `(?P<file>[^`]+)`", re.M)


def listed_files(architecture: str) -> list[str]:
    """The file each numbered step of ARCHITECTURE.md's "Adding an operation" names first."""
    section = SECTION.search(architecture)
    assert section is not None, 'ARCHITECTURE.md has no "## Adding an operation" section'
    return ITEM.findall(section["body"])


def _flows() -> set[str]:
    return {step.operation_id for flow in catalogue((), UNKNOWN_EVENT).flows for step in flow.steps}


def _template(path: str) -> re.Pattern[str]:
    return re.compile(
        "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in re.split(r"({\w+})", path)) + "$"
    )


def called(specs: Specs, method: str, url: str) -> set[str]:
    """The public operations a call of `url` is (any session prefix before the path)."""
    path = re.sub(r"^[a-z]+://[^/]+", "", url).split("?", 1)[0]
    operations = specs.public.operations.items()
    return {name for name, op in operations if op.method == method and _template(op.path).search(path)}


def documented(specs: Specs) -> set[str]:
    """The public operations some replayed page's `$ curl` calls."""
    pages = [page.read_text(encoding="utf-8") for page in replayed_pages()]
    return {
        name
        for text in pages
        for example in examples(text)
        for curl in example.commands
        for name in called(specs, curl.method, curl.url)
    }


# Each file of the section, and the operations it has.
HOLDERS: Mapping[str, Callable[[Specs], set[str]]] = {
    "openapi.yaml": lambda specs: set(specs.public.operations),
    "mock_server/api/handlers.py": lambda specs: set(HANDLERS),
    "mock_server/domain/operations.py": lambda specs: set(OPERATIONS),
    "mock_server/provider/flows.py": lambda specs: _flows(),
    "tests/planted_defects.py": lambda specs: {defect.operation_id for defect in DEFECTS},
    "docs/": documented,
}


def missing_from(operations: set[str], holding: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """Per operation, the files that do not have it yet."""
    gaps = {name: [file for file, held in holding.items() if name not in held] for name in sorted(operations)}
    return {name: files for name, files in gaps.items() if files}


def test_the_section_lists_every_file_an_operation_needs() -> None:
    listed = listed_files((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    missing = [file for file in HOLDERS if file not in listed]
    assert missing == [], f'ARCHITECTURE.md\'s "Adding an operation" does not list: {", ".join(missing)}'
    assert [file for file in listed if file not in HOLDERS] == [], "a listed file this test does not check"
    assert all((ROOT / file).exists() for file in listed)


def test_every_operation_of_the_spec_is_in_every_file(specs: Specs) -> None:
    holding = {file: holder(specs) for file, holder in HOLDERS.items()}
    gaps = missing_from(set(specs.public.operations), holding)
    assert gaps == {}, "\n".join(f"{name} is missing from {', '.join(files)}" for name, files in gaps.items())


def test_an_operation_added_to_the_spec_alone_is_named_with_each_file_it_lacks(specs: Specs) -> None:
    holding = {file: holder(specs) for file, holder in HOLDERS.items()}
    holding["openapi.yaml"] = holding["openapi.yaml"] | {"notYetAnOperation"}
    assert missing_from(set(holding["openapi.yaml"]), holding) == {
        "notYetAnOperation": [f for f in HOLDERS if f != "openapi.yaml"]
    }


def test_a_section_without_a_file_is_found() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    without = text.replace("5. `tests/planted_defects.py`", "5. the planted defect")
    assert "tests/planted_defects.py" not in listed_files(without)
    assert listed_files(text)[:3] == ["openapi.yaml", "mock_server/api/handlers.py", "mock_server/domain/operations.py"]


@pytest.mark.parametrize(
    ("url", "method", "operation"),
    [
        ("http://127.0.0.1:8000/limits/account/0001-123456/recipient_list", "POST", "createRecipientList"),
        ("http://h/s/flow/limits/account/a/recipient_list/recipient/r", "DELETE", "removeRecipient"),
        ("http://h/event_conciliation/extraordinary_event/k?x=1", "GET", "getExtraordinaryEvent"),
    ],
)
def test_a_curl_is_matched_to_its_operation(specs: Specs, url: str, method: str, operation: str) -> None:
    assert called(specs, method, url) == {operation}
