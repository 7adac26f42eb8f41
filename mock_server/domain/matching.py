"""The JSON subset rule shared by verification and fault predicates: does a pattern hold within a value?"""

from __future__ import annotations

from typing import Any


def contains(pattern: Any, value: Any) -> bool:
    """Whether `value` holds `pattern`.

    - an object pattern: `value` is an object with every key of the pattern, each value holding the pattern's;
      keys the pattern leaves out may be anything;
    - an array pattern: `value` is an array of the same length, element by element (order matters);
    - anything else: equal, numbers by value (`1` is `1.0`) but never a boolean for a number (`true` is not `1`).
    """
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and contains(v, value[k]) for k, v in pattern.items())
    if isinstance(pattern, list):
        return isinstance(value, list) and len(value) == len(pattern) and all(map(contains, pattern, value))
    if isinstance(pattern, bool) or isinstance(value, bool):
        return type(pattern) is type(value) and pattern == value
    if isinstance(pattern, (int, float)) and isinstance(value, (int, float)):
        return pattern == value
    return type(pattern) is type(value) and bool(pattern == value)
