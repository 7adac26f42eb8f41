"""A spec file's parse kept beside it (`__pycache__/NAME.parsed.json`, as Python keeps byte code): used only when it
is that text's, written only when Python would write byte code, and never for a document JSON cannot give back."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from mock_server.spec.openapi import read_document
from mock_server.spec.resources import data_path

DOCUMENT = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n"


@pytest.fixture
def writes_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)


def cache_of(path: Path) -> Path:
    return path.parent / "__pycache__" / f"{path.name}.parsed.json"


def test_the_second_read_comes_from_the_cache_and_gives_the_same_document(tmp_path, writes_caches, monkeypatch):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    expected = (DOCUMENT, yaml.safe_load(DOCUMENT))
    assert read_document(spec) == expected
    assert cache_of(spec).is_file()
    monkeypatch.setattr(yaml, "load", lambda *a, **k: pytest.fail("parsed again, cache unused"))
    assert read_document(spec) == expected


def test_the_shipped_specs_come_back_from_their_cache_as_yaml_reads_them(tmp_path, writes_caches):
    for name in ("openapi.yaml", "admin/openapi.yaml"):
        copy = tmp_path / name.replace("/", "_")
        copy.write_text(data_path(name).read_text(encoding="utf-8"), encoding="utf-8")
        read_document(copy)
        assert cache_of(copy).is_file()
        assert read_document(copy)[1] == yaml.safe_load(copy.read_text(encoding="utf-8"))


def test_a_changed_file_is_parsed_again_and_its_cache_replaced(tmp_path, writes_caches):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    read_document(spec)
    spec.write_text(DOCUMENT.replace("title: t", "title: changed"), encoding="utf-8")
    assert read_document(spec)[1]["info"]["title"] == "changed"
    assert json.loads(cache_of(spec).read_text(encoding="utf-8"))["document"]["info"]["title"] == "changed"


def test_a_cache_of_another_text_is_not_used(tmp_path, writes_caches):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    read_document(spec)
    held = json.loads(cache_of(spec).read_text(encoding="utf-8"))
    held["document"]["info"]["title"] = "not what the file says"
    cache_of(spec).write_text(json.dumps(held), encoding="utf-8")  # the same key: as if the file changed under it
    spec.write_text(DOCUMENT + "# a comment: another text\n", encoding="utf-8")
    assert read_document(spec)[1]["info"]["title"] == "t"


@pytest.mark.parametrize("held", ["", "{", "[]", '{"key": 1}', "\x00\xff"])
def test_a_damaged_cache_is_parsed_past_and_written_anew(tmp_path, writes_caches, held):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    cache_of(spec).parent.mkdir()
    cache_of(spec).write_text(held, encoding="utf-8", errors="surrogateescape")
    assert read_document(spec)[1] == yaml.safe_load(DOCUMENT)
    assert json.loads(cache_of(spec).read_text(encoding="utf-8"))["document"] == yaml.safe_load(DOCUMENT)


def test_nothing_is_written_where_python_writes_no_byte_code(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    assert read_document(spec)[1] == yaml.safe_load(DOCUMENT)
    assert not (tmp_path / "__pycache__").exists()


@pytest.mark.parametrize(
    "value",
    ["example: 2026-11-21", "example: .nan", "responses: {200: ok}"],
    ids=["a date", "NaN", "a key that is no string"],
)
def test_a_document_json_cannot_give_back_is_not_cached(tmp_path, writes_caches, value):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT + value + "\n", encoding="utf-8")
    document = read_document(spec)[1]
    assert not cache_of(spec).exists()
    assert read_document(spec)[1].keys() == document.keys()


def test_a_directory_it_cannot_write_only_costs_the_parse(tmp_path, writes_caches):
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    (tmp_path / "__pycache__").write_text("a file where the directory would be", encoding="utf-8")
    assert read_document(spec)[1] == yaml.safe_load(DOCUMENT)


def test_a_write_that_fails_halfway_leaves_no_temporary(tmp_path, writes_caches, monkeypatch):
    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    spec = tmp_path / "openapi.yaml"
    spec.write_text(DOCUMENT, encoding="utf-8")
    assert read_document(spec)[1] == yaml.safe_load(DOCUMENT)
    assert list((tmp_path / "__pycache__").iterdir()) == []
