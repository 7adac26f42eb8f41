"""openapi-core validates a recorded flow (scripts/interop_clients.py) against the specs as the server served them.

Runs in .tools/interop-venv. Each request is matched to an operation through the served spec's `servers` (so a
spec fetched under /__session/NAME/ must name that URL) and validated; so is each response. An example that is
invalid on purpose (the 400 examples) must be found invalid by openapi-core too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml
from openapi_core import Config, OpenAPI
from openapi_core.testing import MockRequest, MockResponse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from mock_server.domain.documents import is_valid_document  # noqa: E402  (pure: the standard library only)


def _text(content: bytes) -> str:
    return content.decode("utf-8")


def load(path: Path) -> OpenAPI:
    text = path.read_text(encoding="utf-8")
    document = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    config = Config(
        # The spec's own string format (check digits); openapi-core cannot know it.
        extra_format_validators={"br-document": lambda value: not isinstance(value, str) or is_valid_document(value)},
        # The specs and the state export are YAML documents (application/yaml, RFC 9512); the pages' scripts and
        # styles are text its schemas call strings (openapi-core would hand the validator bytes).
        extra_media_type_deserializers={
            "application/yaml": yaml.safe_load,
            **{media: _text for media in ("text/css", "text/javascript", "application/javascript", "text/markdown")},
        },
    )
    return OpenAPI.from_dict(document, config=config)


def media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "application/json").split(";")[0].strip()


def exchange(entry: dict[str, Any]) -> tuple[MockRequest, MockResponse]:
    url = urlsplit(entry["url"])
    request = MockRequest(
        host_url=f"{url.scheme}://{url.netloc}",
        method=entry["method"],
        path=url.path,
        args=dict(parse_qsl(url.query)),
        headers=entry["headers"],
        data=entry["body"].encode() or None,
        content_type=media_type(entry["headers"]),
    )
    response = MockResponse(
        entry["response_body"].encode(),
        status_code=entry["status"],
        headers=entry["response_headers"],
        content_type=media_type(entry["response_headers"]),
    )
    return request, response


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--specs", type=Path, required=True)
    parser.add_argument("flow", type=Path)
    options = parser.parse_args()
    specs: dict[str, OpenAPI] = {}
    problems: list[str] = []
    counts = {"requests": 0, "responses": 0, "invalid_on_purpose": 0}
    for line in options.flow.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        spec = specs.get(entry["spec"]) or specs.setdefault(entry["spec"], load(options.specs / entry["spec"]))
        request, response = exchange(entry)
        label = f"{entry['method']} {entry['url']} -> {entry['status']} ({entry['spec']})"
        request_errors = list(spec.iter_request_errors(request))
        if entry["expect_valid_request"]:
            if request_errors:
                problems.append(f"{label}: request: {'; '.join(map(str, request_errors))}")
            counts["requests"] += 1
        elif not request_errors:
            problems.append(f"{label}: an invalid example request was found valid")
        else:
            counts["invalid_on_purpose"] += 1
        response_errors = list(spec.iter_response_errors(request, response))
        if response_errors:
            causes = [f"{e}: {getattr(e, '__cause__', '')}" for e in response_errors]
            problems.append(f"{label}: response: {'; '.join(causes)}")
        counts["responses"] += 1
    print(
        "  openapi-core: {requests} requests valid, {invalid_on_purpose} invalid ones found invalid, "
        "{responses} responses valid".format(**counts)
    )
    for problem in problems:
        print("  FAILED " + (problem if len(problem) < 600 else problem[:600] + " ..."))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
