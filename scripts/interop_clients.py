"""Drive every operation through the clients openapi-python-client generated, and replay every example pair of
the public spec; record each request and response for openapi-core (scripts/interop_openapi_core.py).

Runs in .tools/interop-venv (started by scripts/interop.py). Finds each operation's generated module by its
operationId and builds the call from the spec's own examples: the public spec's success pairs, the admin spec's
`example`s. The public and admin clients work in sessions named by URL (/__session/NAME/), so each starts from the
default scenario; the pair replay runs at the origin, as Specmatic does.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from openapi_python_client.strings import snake_case

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_examples import HTTP_METHODS, Pair, all_pairs, resolved

Recorder = Callable[[httpx.Response], None]


def recorder(entries: list[dict[str, Any]], spec: str, expect_valid: list[bool]) -> Recorder:
    def record(response: httpx.Response) -> None:
        response.read()
        request = response.request
        entries.append(
            {
                "spec": spec,
                "method": request.method,
                "url": str(request.url),
                "headers": dict(request.headers),
                "body": request.content.decode("utf-8", "replace"),
                "status": response.status_code,
                "response_headers": dict(response.headers),
                "response_body": response.text,
                "expect_valid_request": expect_valid[0],
            }
        )

    return record


def module_for(clients: Path, package: str, operation_id: str) -> Any:
    name = snake_case(operation_id)
    found = sorted((clients / package / "api").glob(f"*/{name}.py"))
    if len(found) != 1:
        raise SystemExit(f"{package}: no generated module for {operation_id} ({name}.py)")
    return importlib.import_module(f"{package}.api.{found[0].parent.name}.{name}")


def _argument(signature: typing.Mapping[str, Any], name: str) -> str:
    for candidate in (snake_case(name), snake_case(name) + "_"):
        if candidate in signature:
            return candidate
    raise SystemExit(f"the generated function takes no argument for {name!r}: {sorted(signature)}")


def _model(hint: Any) -> Any:
    """The model class of a `body` annotation (`X`, or `X | Unset`)."""
    for option in typing.get_args(hint) or (hint,):
        if hasattr(option, "from_dict"):
            return option
    raise SystemExit(f"no model class in {hint!r}")


def call(module: Any, client: Any, path: dict[str, str], query: dict[str, str], body: Any, has_body: bool) -> Any:
    """`sync_detailed` of the generated module, with the arguments its signature names."""
    function = module.sync_detailed
    hints = typing.get_type_hints(function)
    kwargs: dict[str, Any] = {"client": client}
    for name, value in path.items():
        kwargs[_argument(hints, name)] = value
    for name, value in query.items():
        argument = _argument(hints, name)
        enum = next((t for t in typing.get_args(hints[argument]) or (hints[argument],) if isinstance(t, type)), None)
        kwargs[argument] = enum(value) if enum is not None and hasattr(enum, "__members__") else value
    if has_body:
        kwargs["body"] = _model(hints["body"]).from_dict(body)
    return function(**kwargs)


def first_example(node: dict[str, Any], document: dict[str, Any]) -> tuple[bool, Any]:
    """The example of a parameter or media type: `example`, the first of `examples`, else its schema's first enum
    value or default (an asset name, say)."""
    if "example" in node:
        return True, node["example"]
    for example in node.get("examples", {}).values():
        return True, resolved(document, example)["value"]
    schema = resolved(document, node.get("schema", {}))
    if schema.get("enum"):
        return True, schema["enum"][0]
    if "default" in schema:
        return True, schema["default"]
    return False, None


def admin_requests(document: dict[str, Any]) -> list[tuple[str, dict[str, str], dict[str, str], bool, Any, set[str]]]:
    """(operationId, path params, query params, has body, body, documented statuses) from each operation's examples.

    An admin example may depend on what the session did before (a verification names calls it expects in the
    journal): any status the operation documents is an answer the generated client must handle."""
    calls = []
    for item in document["paths"].values():
        for method in HTTP_METHODS:
            if method not in item:
                continue
            op = item[method]
            path: dict[str, str] = {}
            query: dict[str, str] = {}
            for raw in op.get("parameters", []):
                param = resolved(document, raw)
                has, value = first_example(param, document)
                if not has and param.get("required"):
                    raise SystemExit(f"{op['operationId']}: the required parameter {param['name']} has no example")
                if has and param["in"] == "path":
                    path[param["name"]] = value
                elif has and param["in"] == "query":
                    query[param["name"]] = value
                elif has and param["in"] == "header" and param["name"] != "X-Mock-Session":
                    # X-Mock-Admin: a keyword argument of the generated function, as a query parameter is. (The
                    # session is the URL's: a header naming another would be a 400.)
                    query[param["name"]] = value
            has_body, body = False, None
            if "requestBody" in op:
                has_body, body = first_example(
                    resolved(document, op["requestBody"])["content"]["application/json"], document
                )
            calls.append((op["operationId"], path, query, has_body, body, {str(status) for status in op["responses"]}))
    return calls


def check(label: str, response: Any, expected: str | set[str], problems: list[str]) -> None:
    status = str(int(response.status_code))
    if status not in ({expected} if isinstance(expected, str) else expected):
        problems.append(f"{label}: answered {status}, expected {expected}: {response.content[:300]!r}")
    elif status != "204" and response.parsed is None and not response.content:
        problems.append(f"{label}: the generated client got no {expected} body")
    else:
        kind = type(response.parsed).__name__ if response.parsed is not None else f"{len(response.content)} bytes"
        print(f"  {label}: {status} {kind}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--clients", type=Path, required=True)
    parser.add_argument("--specs", type=Path, required=True)
    parser.add_argument("--record", type=Path, required=True)
    options = parser.parse_args()
    sys.path.insert(0, str(options.clients))
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    valid = [True]
    public = json.loads((options.specs / "public-session.json").read_text(encoding="utf-8"))
    admin = yaml.safe_load((options.specs / "admin-session.yaml").read_text(encoding="utf-8"))

    public_client = importlib.import_module("pix_public_client").Client(
        base_url=public["servers"][0]["url"],
        httpx_args={"event_hooks": {"response": [recorder(entries, "public-session.json", valid)]}},
    )
    driven = set()
    for pair in all_pairs(public):
        if pair.status is not None and not pair.status.startswith("2"):
            continue
        if pair.status is None and pair.method != "DELETE":
            continue
        module = module_for(options.clients, "pix_public_client", pair.operation_id)
        response = call(module, public_client, pair.path_params, {}, pair.body, pair.has_body)
        check(f"public {pair.operation_id} ({pair.name})", response, pair.status or "204", problems)
        driven.add(pair.operation_id)

    admin_client = importlib.import_module("pix_admin_client").Client(
        base_url=admin["servers"][0]["url"],
        httpx_args={"event_hooks": {"response": [recorder(entries, "admin-session.yaml", valid)]}},
    )
    admin_driven = set()
    for operation_id, path, query, has_body, body, expected in admin_requests(admin):
        module = module_for(options.clients, "pix_admin_client", operation_id)
        check(f"admin {operation_id}", call(module, admin_client, path, query, body, has_body), expected, problems)
        admin_driven.add(operation_id)

    replay(options.url, public, entries, problems)
    options.record.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    print(
        f"  generated clients drove {len(driven)} public and {len(admin_driven)} admin operations; "
        f"{len(entries)} exchanges recorded"
    )
    for problem in problems:
        print("  FAILED " + problem)
    return 1 if problems else 0


def replay(url: str, public: dict[str, Any], entries: list[dict[str, Any]], problems: list[str]) -> None:
    """Every example pair of the public spec at the origin (the faulted sessions armed by interop.py)."""
    pairs: list[Pair] = all_pairs(public)
    valid = [True]
    hooks = {"response": [recorder(entries, "public.yaml", valid)]}
    with httpx.Client(base_url=url, event_hooks=hooks, timeout=10) as client:
        for pair in pairs:
            valid[0] = pair.status != "400"  # the invalid_request examples are invalid on purpose
            headers = dict(pair.headers)
            content = None
            if pair.has_body:
                headers["Content-Type"] = "application/json"
                content = json.dumps(pair.body)
            answer = client.request(pair.method, pair.url(), headers=headers, content=content)
            if str(answer.status_code) != (pair.status or "204"):
                problems.append(f"pair {pair.operation_id} {pair.name}: {answer.status_code} {answer.text[:200]}")
    print(f"  replayed {len(pairs)} example pairs of the public spec")


if __name__ == "__main__":
    sys.exit(main())
