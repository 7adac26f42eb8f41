"""Where the shipped data files are: inside the wheel, or beside the package in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # mock_server/


def data_path(name: str) -> Path:
    """`openapi.yaml`, `admin/openapi.yaml` or `fixtures`: the wheel's copy, else the repository's."""
    packaged = _PACKAGE / "_data" / name
    if packaged.exists():
        return packaged
    return _PACKAGE.parent / name
