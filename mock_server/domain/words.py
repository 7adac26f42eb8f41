"""How a count reads in the messages people see: `1 scenario`, `2 scenarios`, never `1 scenarios`."""

from __future__ import annotations


def counted(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 scenario`, `0 scenarios`; `nouns` where the plural is not `noun` + "s" (`1 entry`, `2 entries`)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
