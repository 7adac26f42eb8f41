"""The specs as served (issue 12 items 1 and 2): `servers` names where the request came in, and the admin
document is self-contained (bundled from the repository's two files when first downloaded)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

import httpx
import pytest
import yaml
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import HTTP_METHODS, Specs, _Documents, _inlined, fast_safe_loader
from mock_server.spec.served import BundleError, bundle_admin, external_refs
from tests.default_scenario import PENDING_EVENT
from tests.helpers import Response
from tests.live_server import live_server as start_live_server

REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_SERVER = "http://127.0.0.1:8000"  # what the files say: `make run`
SPEC_URLS = ("/openapi.yaml", "/openapi.json", "/__mock/openapi.yaml")


def read_yaml(text: str) -> Any:
    """libyaml's safe reader: the admin document read by the pure-Python one cost 0.4 s, in a dozen tests here."""
    return yaml.load(text, Loader=fast_safe_loader())


def served(response: Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        loaded: dict[str, Any] = response.json()
    else:
        assert response.headers["content-type"].startswith("application/yaml")
        loaded = read_yaml(response.text)
    return loaded


def servers(response: Response) -> list[str]:
    return [server["url"] for server in served(response)["servers"]]


# --- servers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", SPEC_URLS)
def test_each_spec_names_the_origin_the_request_came_in_on(client: httpx.Client, url: str) -> None:
    assert servers(client.get(url)) == [str(client.base_url).rstrip("/")]


@pytest.mark.parametrize("url", SPEC_URLS)
@pytest.mark.parametrize("host", ["mock.example.test:9999", "localhost", "[::1]:18200", "10.1.2.3:80"])
def test_the_host_header_is_honoured(client: httpx.Client, url: str, host: str) -> None:
    assert servers(client.get(url, headers={"Host": host})) == [f"http://{host}"]


@pytest.mark.parametrize("host", ["a b", "evil.test/path", "x:y:z", "", "[zz]"])
def test_a_host_header_that_is_no_host_gives_the_servers_own_address(make_client: Any, host: str) -> None:
    with make_client() as client:
        answer = client.get("/openapi.json", headers={"Host": host})
    # TestClient's socket address is testserver:80.
    assert servers(answer) == ["http://testserver:80"]


def test_the_asgi_root_path_is_part_of_the_url(specs: Specs) -> None:
    """Where a proxy or the session path prefix (/__session/NAME) moved a prefix to root_path, the URL keeps it."""
    app = create_app(Settings(), specs)
    with TestClient(app, root_path="/behind/a/proxy") as client:
        for url in SPEC_URLS:
            assert servers(client.get(url)) == ["http://testserver/behind/a/proxy"]


@pytest.mark.parametrize("url", SPEC_URLS)
def test_a_session_path_prefix_is_part_of_the_url(client: httpx.Client, url: str) -> None:
    """Fetched under /__session/NAME/, the document sends its clients back into that session."""
    base = str(client.base_url).rstrip("/")
    assert servers(client.get(f"/__session/job-42{url}")) == [f"{base}/__session/job-42"]


def test_what_a_session_prefixed_spec_names_works_in_that_session(client: httpx.Client) -> None:
    document = served(client.get("/__session/spec-user/openapi.json"))
    server = document["servers"][0]["url"]
    body = {"document_number": "529.982.247-25"}

    added = client.post(f"{server}/limits/account/0001-123456/recipient_list/recipient", json=body)

    assert added.status_code == 201
    in_session = client.get("/__mock/accounts/0001-123456", headers={"X-Mock-Session": "spec-user"}).json()
    in_default = client.get("/__mock/accounts/0001-123456").json()
    assert len(in_session["recipient_list"]["recipients"]) == 3
    assert len(in_default["recipient_list"]["recipients"]) == 2


def test_the_files_keep_the_make_run_default(specs: Specs) -> None:
    for spec in (specs.public, specs.admin):
        assert [s["url"] for s in spec.document["servers"]] == [DEFAULT_SERVER]


def test_the_public_yaml_is_served_as_written_but_its_servers(client: httpx.Client, specs: Specs) -> None:
    """Comments and layout kept: only the servers block differs from the file."""
    text = client.get("/openapi.yaml").text
    file_lines, served_lines = specs.public.text.splitlines(), text.splitlines()
    start = file_lines.index("servers:")
    assert served_lines[:start] == file_lines[:start]
    assert served_lines[start + 3 :] == file_lines[start + 3 :]
    assert served_lines[start : start + 3] == [
        "servers:",
        f'  - url: "{str(client.base_url).rstrip("/")}"',
        '    description: "this mock server, as the request that fetched this document reached it"',
    ]
    assert "# The interface shows no authentication scheme" in text


def test_the_json_copy_is_the_yaml_document(client: httpx.Client) -> None:
    assert client.get("/openapi.json").json() == read_yaml(client.get("/openapi.yaml").text)


def test_the_public_spec_is_served_with_servers_under_no_admin(make_client: Any) -> None:
    with make_client(admin=False) as client:
        assert servers(client.get("/openapi.yaml", headers={"Host": "h:1"})) == ["http://h:1"]
        assert client.get("/__mock/openapi.yaml").status_code == 404


# --- a live server on a port chosen by the system -------------------------------------------------


@pytest.fixture
def live_server() -> Iterator[str]:
    with start_live_server() as server:
        yield server.url


@pytest.mark.e2e  # starts the server in a child process
def test_a_port_0_server_names_its_real_port(live_server: str) -> None:
    assert not live_server.endswith(":0")
    with httpx.Client(base_url=live_server, timeout=10) as client:
        for url in SPEC_URLS:
            assert servers(client.get(url)) == [live_server]
        # and what the document names answers: the lookup of the spec's own example, at the spec's own server
        document = served(client.get("/openapi.json"))
    example = PENDING_EVENT
    looked_up = httpx.get(f"{document['servers'][0]['url']}/event_conciliation/extraordinary_event/{example}")
    assert looked_up.status_code == 200


# --- the admin document, bundled ------------------------------------------------------------------


def test_the_served_admin_spec_refers_to_nothing_outside_itself(client: httpx.Client, specs: Specs) -> None:
    assert external_refs(specs.admin.document) != [], "the file refers into ../openapi.yaml"
    document = served(client.get("/__mock/openapi.yaml"))

    assert external_refs(document) == []


def test_the_served_specs_pass_openapi_spec_validator(client: httpx.Client) -> None:
    for url in SPEC_URLS:
        validate(served(client.get(url)))  # no base_uri: nothing outside the document may be needed


def _schemas_of_every_operation(document: dict[str, Any], documents: _Documents, uri: str) -> dict[str, Any]:
    """Every request and response schema of every operation, with every $ref replaced by what it names."""
    found: dict[str, Any] = {}

    def walk(node: Any, where: str, base: str) -> None:
        if isinstance(node, dict):
            if "$ref" in node:  # a parameter, body or response defined elsewhere: go on in its own document
                contents, target = documents.lookup(node["$ref"], base)
                walk(contents, where, target)
                return
            if isinstance(node.get("schema"), dict):
                found[where] = _inlined(node["schema"], documents, urldefrag(base).url)
            for key, value in node.items():
                if key not in ("schema", "examples", "example"):
                    walk(value, f"{where}/{key}", base)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}/{index}", base)

    for path, item in document["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                walk(item[method], f"{method.upper()} {path}", uri)
    return found


def test_bundling_changes_no_rule(client: httpx.Client, specs: Specs) -> None:
    """Every schema an admin operation uses is the same, resolved from the two files or from the served document."""
    bundled = served(client.get("/__mock/openapi.yaml"))
    alone = "http://served/__mock/openapi.yaml"
    from_files = _schemas_of_every_operation(specs.admin.document, specs.admin.documents, specs.admin.uri)
    from_served = _schemas_of_every_operation(bundled, _Documents({alone: bundled}), alone)

    assert len(from_files) > 50
    assert from_served == from_files


def test_every_admin_operation_is_in_the_served_document(client: httpx.Client, specs: Specs) -> None:
    document = served(client.get("/__mock/openapi.yaml"))
    operation_ids = {
        item[method]["operationId"] for item in document["paths"].values() for method in HTTP_METHODS if method in item
    }
    assert operation_ids == set(specs.admin.operations)


# --- the bundler's rules, on small documents -------------------------------------------------------


def test_an_alias_of_a_public_component_becomes_that_component() -> None:
    public = {"components": {"responses": {"Big": {"description": "too big", "content": {}}}}}
    admin = {
        "paths": {"/x": {"get": {"responses": {"413": {"$ref": "#/components/responses/Big"}}}}},
        "components": {"responses": {"Big": {"$ref": "../openapi.yaml#/components/responses/Big"}}},
    }
    assert bundle_admin(admin, public)["components"]["responses"]["Big"] == {"description": "too big", "content": {}}


def test_what_a_copied_component_refers_to_is_copied_too() -> None:
    public = {
        "components": {
            "schemas": {
                "Error": {"type": "object", "properties": {"code": {"$ref": "#/components/schemas/Code"}}},
                "Code": {"type": "string"},
            }
        }
    }
    admin = {"paths": {"/x": {"get": {"schema": {"$ref": "../openapi.yaml#/components/schemas/Error"}}}}}
    bundled = bundle_admin(admin, public)
    assert bundled["paths"]["/x"]["get"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert bundled["components"]["schemas"] == public["components"]["schemas"]
    assert "components" not in admin, "the admin document itself is left as it was"


@pytest.mark.parametrize(
    ("admin", "problem"),
    [
        ({"a": {"$ref": "other.yaml#/components/schemas/X"}}, "another document"),
        ({"a": {"$ref": "../openapi.yaml#/paths/~1x"}}, "outside components"),
        ({"a": {"$ref": "../openapi.yaml#/components/schemas/Missing"}}, "has no components/schemas/Missing"),
        (
            {
                "a": {"$ref": "../openapi.yaml#/components/schemas/X"},
                "components": {"schemas": {"X": {"type": "integer"}}},
            },
            "different content",
        ),
    ],
)
def test_what_cannot_be_bundled_stops_with_a_reason(admin: dict[str, Any], problem: str) -> None:
    public = {"components": {"schemas": {"X": {"type": "string"}}}}
    with pytest.raises(BundleError, match=problem):
        bundle_admin(admin, public)


def test_the_served_yaml_quotes_what_it_names(client: httpx.Client) -> None:
    """The URL is written as a quoted scalar: a YAML-looking host cannot change the document."""
    text = client.get("/__mock/openapi.yaml", headers={"Host": "a.test:1"}).text
    assert '  - url: "http://a.test:1"\n' in text
    assert json.loads(json.dumps(read_yaml(text)["servers"])) == [
        {
            "url": "http://a.test:1",
            "description": "this mock server, as the request that fetched this document reached it",
        }
    ]


def test_the_readme_shows_what_the_server_serves(client: httpx.Client) -> None:
    """The docs' `servers` excerpt (docs/specs-and-tools.md) is what `curl .../__session/job-42/openapi.yaml` gets,
    at the lines it says."""
    readme = (REPOSITORY / "docs" / "specs-and-tools.md").read_text(encoding="utf-8")
    intro = "`curl -s http://127.0.0.1:8000/__session/job-42/openapi.yaml` answers, at\nlines 21-23:\n\n```yaml\n"
    assert intro in readme
    shown = readme.split(intro, 1)[1].split("```", 1)[0].splitlines()

    text = client.get("/__session/job-42/openapi.yaml", headers={"Host": "127.0.0.1:8000"}).text

    assert text.splitlines()[20:23] == shown
