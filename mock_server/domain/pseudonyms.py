"""Pseudonyms for the personal identifiers a recording holds (CPF, CNPJ, account ids): the same layout, valid check
digits, derived from the original by a keyed hash (HMAC-SHA256), so one key always gives one input the same
pseudonym, in one recording and across recordings, and nobody without the key can go back."""

from __future__ import annotations

import hashlib
import hmac
import string
from collections.abc import Iterator

from mock_server.domain.documents import (
    canonical_document,
    format_document,
    is_valid_document,
    with_valid_check_digits,
)

KEY_BYTES = 32  # a random key per recording when none is given: 256 bits, HMAC-SHA256's block-sized secret
_CHECK_DIGITS = 2
# Tries before giving up on a pseudonym that is neither the original nor another input's: each try draws anew, and
# a clash needs two inputs whose 9+ derived digits agree.
MAX_TRIES = 64


class Pseudonymizer:
    """Maps originals to pseudonyms, remembering each pair (`mapping`: as the original was seen)."""

    def __init__(self, key: bytes) -> None:
        if not key:
            raise ValueError("a pseudonym key must not be empty")
        self._key = key
        self.mapping: dict[str, str] = {}  # original, as seen -> pseudonym
        # canonical original -> canonical pseudonym, and back: two layouts of one number share a pseudonym, and two
        # numbers never do
        self._by_original: dict[tuple[str, str], str] = {}
        self._taken: dict[tuple[str, str], str] = {}

    def document(self, number: str) -> str:
        """A CPF or CNPJ (bare or punctuated, alphanumeric CNPJ too) -> another valid number of the same kind, in
        the same layout; letters stay letters, digits digits. A value that is no valid document is returned as
        it is (it identifies nobody)."""
        if not is_valid_document(number):
            return number
        bare = canonical_document(number)
        pseudonym = self._derived("document", bare, _document_candidates(self._key, bare))
        shown = format_document(pseudonym) if len(number) != len(bare) else pseudonym
        self.mapping[number] = shown
        return shown

    def account_id(self, account_id: str) -> str:
        """An account id -> one of the same shape: each digit a digit, each letter a letter of the same case, every
        other character kept (`0001-123456` stays `NNNN-NNNNNN`)."""
        if not any(c.isascii() and c.isalnum() for c in account_id):
            return account_id
        pseudonym = self._derived("account", account_id, _shape_candidates(self._key, account_id))
        self.mapping[account_id] = pseudonym
        return pseudonym

    def _derived(self, kind: str, original: str, candidates: Iterator[str]) -> str:
        known = self._by_original.get((kind, original))
        if known is not None:
            return known
        for candidate, _ in zip(candidates, range(MAX_TRIES), strict=False):
            owner = self._taken.get((kind, candidate))
            if candidate != original and owner in (None, original) and (kind, candidate) not in self._by_original:
                self._by_original[(kind, original)] = candidate
                self._taken[(kind, candidate)] = original
                return candidate
        raise ValueError(f"no pseudonym found for a {kind} of {len(original)} characters")  # pragma: no cover


def _stream(key: bytes, label: str, attempt: int) -> Iterator[int]:
    """Bytes derived from `label`, as many as asked: HMAC-SHA256 in counter mode."""
    block = 0
    while True:
        yield from hmac.new(key, f"{label}\x00{attempt}\x00{block}".encode(), hashlib.sha256).digest()
        block += 1


def _replaced(template: str, drawn: Iterator[int]) -> str:
    """Each ASCII digit of `template` a digit drawn, each letter a letter of its case; the rest kept."""
    out = []
    for char in template:
        if char.isascii() and char.isdigit():
            out.append(string.digits[next(drawn) % 10])
        elif char.isascii() and char.isupper():
            out.append(string.ascii_uppercase[next(drawn) % 26])
        elif char.isascii() and char.islower():
            out.append(string.ascii_lowercase[next(drawn) % 26])
        else:
            out.append(char)
    return "".join(out)


def _shape_candidates(key: bytes, original: str) -> Iterator[str]:
    attempt = 0
    while True:
        yield _replaced(original, _stream(key, f"account\x00{original}", attempt))
        attempt += 1


def _document_candidates(key: bytes, bare: str) -> Iterator[str]:
    """Bare numbers of `bare`'s kind: its body's characters replaced class by class, check digits computed."""
    attempt = 0
    while True:
        body = _replaced(bare[:-_CHECK_DIGITS], _stream(key, f"document\x00{bare}", attempt))
        candidate = with_valid_check_digits(body + "00")  # never one repeated digit: it nudges that body
        if is_valid_document(candidate):
            yield candidate
        attempt += 1
