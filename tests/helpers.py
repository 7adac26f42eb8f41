"""Assertions the API tests share (test modules cannot import each other under --import-mode=importlib)."""

from __future__ import annotations

from typing import Any

import httpx


def assert_error(response: httpx.Response, status: int, code: str, fields: list[str] | None = None) -> dict[str, Any]:
    """The contract's error body: `status`, `code`, and (when given) exactly these `details[].field`s."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    if fields is not None:
        assert sorted(d["field"] for d in body.get("details", [])) == sorted(fields)
    return body
