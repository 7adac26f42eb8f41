"""The specs as the server hands them out: the admin document bundled, and `servers` naming this server.

The repository's documents stay the single source of truth. Two things change in what is served:

- The admin document refers into the public one (`../openapi.yaml#/components/...`), which tools such as
  openapi-python-client do not follow. It is served bundled: every public component it reaches is copied into
  its own components, built from the two files when first downloaded (`bundle_admin`), never kept by hand.
- `servers` names the origin the request came in on (scheme, the Host header, and the ASGI root path, where a
  session path prefix or a proxy's prefix lives), so a client of a `--port 0` server, or of a session, calls
  back where the document came from. The files keep `http://127.0.0.1:8000` (`make run`).

The public YAML is served as written, comments included, with only its `servers` block replaced. The bundled
admin document has to be written anew, so its YAML carries no comments.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mock_server.spec.openapi import Specs

if TYPE_CHECKING:
    import yaml
    from starlette.types import Scope  # the ASGI scope, a plain mapping: no Starlette at run time

PUBLIC_REF = "../openapi.yaml#"  # how the admin document refers to the public one
_COMPONENT_REF = re.compile(r"^#/components/([^/]+)/([^/]+)$")
# A Host header worth repeating in a URL: a DNS name or IPv4 address, or a bracketed IPv6 one, and a port.
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?$")
# The top-level `servers:` block of a YAML document: the key's line and every indented or list line after it.
_SERVERS_BLOCK = re.compile(r"^servers:[^\n]*\n(?:(?:[ \t-][^\n]*)?\n)*", re.MULTILINE)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


@functools.cache
def _readable_dumper() -> type[yaml.SafeDumper]:
    """libyaml's safe dumper (about 15 ms for the admin document), writing multi-line text as `|` blocks, as
    the repository's files do; made on the admin document's first YAML download (PyYAML is not imported by a
    start that never writes YAML)."""
    import yaml

    base: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class ReadableDumper(base):  # type: ignore[misc, valid-type]
        pass

    ReadableDumper.add_representer(str, _text)
    return ReadableDumper


class BundleError(ValueError):
    """The admin document cannot be made self-contained (a reference the bundler does not understand)."""


def _refs(node: Any) -> Iterator[dict[str, Any]]:
    """Every object with a `$ref` in `node`, depth first."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _component(ref: str) -> tuple[str, str]:
    match = _COMPONENT_REF.match(ref)
    if match is None:
        raise BundleError(f"cannot bundle a reference outside components: {ref!r}")
    return match.group(1), match.group(2)


def bundle_admin(admin: dict[str, Any], public: dict[str, Any]) -> dict[str, Any]:
    """A copy of `admin` in which every reference into the public document points at a copy of what it named,
    placed under the same name in the admin document's own components (with whatever that refers to in turn).

    An admin component that is only a reference to the public component of the same name (an alias, such as
    `responses/PayloadTooLarge`) becomes that component. Any other clash of names is a BundleError.
    """
    bundled = copy.deepcopy(admin)
    components: dict[str, dict[str, Any]] = bundled.setdefault("components", {})
    copied: set[tuple[str, str]] = set()
    pending: list[tuple[str, str]] = []

    def local(ref: str) -> str:
        kind, name = _component(ref)
        if (kind, name) not in copied:
            copied.add((kind, name))
            pending.append((kind, name))
        return f"#/components/{kind}/{name}"

    for node in _refs(bundled):
        ref = node["$ref"]
        if ref.startswith(PUBLIC_REF):
            node["$ref"] = local(ref[len(PUBLIC_REF) - 1 :])
        elif not ref.startswith("#"):
            raise BundleError(f"cannot bundle a reference to another document: {ref!r}")
    while pending:
        kind, name = pending.pop()
        try:
            content = copy.deepcopy(public["components"][kind][name])
        except KeyError:
            raise BundleError(f"the public document has no components/{kind}/{name}") from None
        for node in _refs(content):  # the public document's own references, now copied along
            node["$ref"] = local(node["$ref"])
        section = components.setdefault(kind, {})
        existing = section.get(name)
        if existing is not None and existing != {"$ref": f"#/components/{kind}/{name}"} and existing != content:
            raise BundleError(f"components/{kind}/{name} is in both documents with different content")
        section[name] = content
    return bundled


def external_refs(document: Any) -> list[str]:
    """The references of `document` that point outside it (empty for a self-contained document)."""
    return [node["$ref"] for node in _refs(document) if not node["$ref"].startswith("#")]


def base_url(scope: Scope) -> str:
    """The URL the request's API is served at: its scheme, the Host it named (the socket's address when the
    header is missing or not a plain host[:port]), and the ASGI root path (a session or proxy prefix)."""
    host = ""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value.decode("latin-1")
            break
    if not _HOST.fullmatch(host):
        server = scope.get("server")
        if server is None:
            host = "127.0.0.1"
        else:
            address, port = server[0], server[1]
            address = f"[{address}]" if ":" in address else address
            host = address if port is None else f"{address}:{port}"
    return f"{scope.get('scheme', 'http')}://{host}{scope.get('root_path', '')}"


def _servers(url: str) -> list[dict[str, str]]:
    return [{"url": url, "description": "this mock server, as the request that fetched this document reached it"}]


def _servers_yaml(url: str) -> str:
    entry = _servers(url)[0]
    # JSON strings are YAML flow scalars: the URL and description are quoted whatever they hold.
    return f"servers:\n  - url: {json.dumps(entry['url'])}\n    description: {json.dumps(entry['description'])}\n"


@dataclass(frozen=True)
class _YamlTemplate:
    """A YAML document's text cut around its top-level `servers` block."""

    before: str
    after: str

    @classmethod
    def of(cls, text: str) -> _YamlTemplate:
        match = _SERVERS_BLOCK.search(text)
        if match is None:
            raise BundleError("the document has no top-level servers block")
        return cls(text[: match.start()], text[match.end() :])

    def render(self, url: str) -> str:
        return self.before + _servers_yaml(url) + self.after


@dataclass
class ServedSpecs:
    """The three documents the server hands out, with `servers` filled in per request."""

    public: dict[str, Any]
    public_yaml: _YamlTemplate
    _specs: Specs = field(repr=False)
    _admin: dict[str, Any] | None = field(default=None, repr=False)
    _admin_yaml: _YamlTemplate | None = field(default=None, repr=False)

    @classmethod
    def build(cls, specs: Specs) -> ServedSpecs:
        return cls(specs.public.document, _YamlTemplate.of(specs.public.text), specs)

    @property
    def admin(self) -> dict[str, Any]:
        """The admin document bundled, made on first download: no start waits for a document most runs never
        fetch (that the shipped documents bundle is tested: tests/http/test_served_specs.py)."""
        if self._admin is None:
            self._admin = bundle_admin(self._specs.admin.document, self._specs.public.document)
        return self._admin

    def public_yaml_for(self, url: str) -> str:
        return self.public_yaml.render(url)

    def public_json_for(self, url: str) -> str:
        return json.dumps({**self.public, "servers": _servers(url)}, ensure_ascii=False)

    def admin_yaml_for(self, url: str) -> str:
        if self._admin_yaml is None:  # written on first download: start-up need not pay for it
            import yaml

            dumper = _readable_dumper()
            text = yaml.dump(self.admin, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
            self._admin_yaml = _YamlTemplate.of(text)
        return self._admin_yaml.render(url)

    def admin_for(self, url: str) -> dict[str, Any]:
        return {**self.admin, "servers": _servers(url)}
