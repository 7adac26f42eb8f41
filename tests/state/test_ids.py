"""Generated ids: version-4 UUIDs, deterministic per session under a seed."""

from __future__ import annotations

import random
import uuid

from mock_server.state.ids import IdSource


def test_ids_are_the_version_4_uuids_the_standard_library_builds_from_the_same_bits() -> None:
    ids, bits = IdSource(7, "worker-1"), random.Random("7:worker-1")
    for _ in range(2000):
        expected = uuid.UUID(int=bits.getrandbits(128), version=4)
        generated = ids.new_uuid()
        assert generated == str(expected)
        assert uuid.UUID(generated).version == 4


def test_a_seeded_session_repeats_its_ids_after_a_reset_and_differs_from_another_session() -> None:
    ids = IdSource(1, "a")
    first = [ids.new_uuid() for _ in range(3)]
    ids.reset()
    assert [ids.new_uuid() for _ in range(3)] == first
    assert [IdSource(1, "b").new_uuid() for _ in range(3)] != first


def test_unseeded_sources_differ() -> None:
    assert IdSource(None, "a").new_uuid() != IdSource(None, "a").new_uuid()
