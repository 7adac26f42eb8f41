"""Brazilian taxpayer numbers: CPF (people) and CNPJ (companies).

Layout and check digits follow the Receita Federal rules, including the
alphanumeric CNPJ issued from July 2026, whose first 12 positions may hold
uppercase letters while the two check digits stay numeric.
"""

from __future__ import annotations

import random
import re
import string

# `[0-9]` rather than `\d`: Python's `\d` also matches non-ASCII digits such as
# "٣", while ECMA-262 (what JSON Schema validators use) does not, and the two
# must agree on what the mock accepts.
_CPF_BARE = r"[0-9]{11}"
_CPF_PUNCTUATED = r"[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}"
_CNPJ_BARE = r"[0-9A-Z]{12}[0-9]{2}"
_CNPJ_PUNCTUATED = r"[0-9A-Z]{2}\.[0-9A-Z]{3}\.[0-9A-Z]{3}/[0-9A-Z]{4}-[0-9]{2}"

DOCUMENT_PATTERN: str = f"^(?:{_CPF_BARE}|{_CPF_PUNCTUATED}|{_CNPJ_BARE}|{_CNPJ_PUNCTUATED})$"

_DOCUMENT_RE = re.compile(DOCUMENT_PATTERN)
_PUNCTUATION = str.maketrans("", "", ".-/")

_CPF_LENGTH = 11
_CNPJ_LENGTH = 14
_CHECK_DIGITS = 2
_CNPJ_ALPHANUMERIC = string.digits + string.ascii_uppercase

# CPF weights run 2..11 from the right without wrapping; CNPJ weights cycle 2..9.
_CPF_MAX_WEIGHT = 11
_CNPJ_MAX_WEIGHT = 9


def _check_digit(body: str, max_weight: int) -> str:
    # `ord(c) - 48` is the Receita Federal value of a character: digits keep
    # their value and letters continue from there ('A' = 17 ... 'Z' = 42).
    total = 0
    for position, char in enumerate(reversed(body)):
        weight = 2 + position % (max_weight - 1)
        total += (ord(char) - 48) * weight
    remainder = total % 11
    return "0" if remainder < 2 else str(11 - remainder)


def _with_check_digits(body: str, max_weight: int) -> str:
    for _ in range(_CHECK_DIGITS):
        body += _check_digit(body, max_weight)
    return body


def is_valid_document(value: str) -> bool:
    """Whether `value` is a CPF or CNPJ in an accepted layout with correct check digits."""
    if not isinstance(value, str) or _DOCUMENT_RE.fullmatch(value) is None:
        return False
    bare = canonical_document(value)
    # All-same numbers pass the arithmetic but are never issued, and clients
    # commonly send them as placeholders.
    if len(set(bare)) == 1:
        return False
    max_weight = _CPF_MAX_WEIGHT if len(bare) == _CPF_LENGTH else _CNPJ_MAX_WEIGHT
    body = bare[:-_CHECK_DIGITS]
    return _with_check_digits(body, max_weight) == bare


def canonical_document(value: str) -> str:
    """The bare form of a valid document, so either layout of one number compares equal."""
    return value.translate(_PUNCTUATION)


def bare_cnpj(value: str) -> str | None:
    """A CNPJ (bare or punctuated, check digits right) in its bare form; None when `value` is no valid CNPJ (a CPF
    included)."""
    if not is_valid_document(value):
        return None
    bare = canonical_document(value)
    return bare if len(bare) == _CNPJ_LENGTH else None


def format_document(bare: str) -> str:
    """The punctuated layout of a bare CPF or CNPJ."""
    if len(bare) == _CPF_LENGTH:
        return f"{bare[:3]}.{bare[3:6]}.{bare[6:9]}-{bare[9:]}"
    if len(bare) == _CNPJ_LENGTH:
        return f"{bare[:2]}.{bare[2:5]}.{bare[5:8]}/{bare[8:12]}-{bare[12:]}"
    raise ValueError(f"not a bare CPF or CNPJ: {bare!r}")


def _random_body(rng: random.Random, alphabet: str, length: int) -> str:
    chars = [rng.choice(alphabet) for _ in range(length)]
    # Nudging the last character, instead of drawing again, keeps the draw count
    # fixed: Hypothesis drives `rng` in the strategies and shrinks towards
    # all-zero draws, which a redraw loop would never escape.
    if len(set(chars)) == 1:
        chars[-1] = alphabet[(alphabet.index(chars[-1]) + 1) % len(alphabet)]
    return "".join(chars)


def generate_cpf(rng: random.Random, punctuated: bool) -> str:
    """A valid CPF drawn from `rng`."""
    bare = _with_check_digits(_random_body(rng, string.digits, _CPF_LENGTH - _CHECK_DIGITS), _CPF_MAX_WEIGHT)
    return format_document(bare) if punctuated else bare


def generate_cnpj(rng: random.Random, punctuated: bool, alphanumeric: bool) -> str:
    """A valid CNPJ drawn from `rng`; `alphanumeric` lets letters into the first 12 positions."""
    alphabet = _CNPJ_ALPHANUMERIC if alphanumeric else string.digits
    bare = _with_check_digits(_random_body(rng, alphabet, _CNPJ_LENGTH - _CHECK_DIGITS), _CNPJ_MAX_WEIGHT)
    return format_document(bare) if punctuated else bare


def with_valid_check_digits(value: str) -> str:
    """`value` (in an accepted layout) with its check digits recomputed, the layout kept.

    Lets a test generator that only knows the layout (a regex) produce numbers that also pass the digits.
    """
    bare = canonical_document(value)
    body = bare[:-_CHECK_DIGITS]
    if len(set(body)) == 1:
        alphabet = string.digits if body[-1].isdigit() else _CNPJ_ALPHANUMERIC
        body = body[:-1] + alphabet[(alphabet.index(body[-1]) + 1) % len(alphabet)]
    max_weight = _CPF_MAX_WEIGHT if len(bare) == _CPF_LENGTH else _CNPJ_MAX_WEIGHT
    fixed = _with_check_digits(body, max_weight)
    return format_document(fixed) if len(value) != len(bare) else fixed
