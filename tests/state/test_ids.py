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


def test_a_saved_source_goes_on_with_the_same_ids_whatever_its_batch_had_drawn() -> None:
    ids, reference = IdSource(3, "s"), IdSource(3, "s")
    expected = [reference.new_uuid() for _ in range(300)]
    handed = [ids.new_uuid() for _ in range(100)]  # mid-batch: batches of 1, 2, 4, ... 64 drew more than 100
    saved = ids.saved()
    assert saved["drawn"], "the last batch still holds ids"
    again = IdSource(None, "other")
    again.restore(saved)
    assert handed + [again.new_uuid() for _ in range(200)] == expected


def test_a_state_saved_before_ids_were_drawn_in_batches_goes_on_from_its_generator() -> None:
    bits = random.Random("5:old")
    for _ in range(10):
        bits.getrandbits(128)
    version, internal, gauss = bits.getstate()
    ids = IdSource(None, "x")
    ids.restore({"seed": 5, "session": "old", "state": [version, list(internal), gauss]})
    expected = [str(uuid.UUID(int=bits.getrandbits(128), version=4)) for _ in range(70)]
    assert [ids.new_uuid() for _ in range(70)] == expected


def test_a_restored_source_saved_again_keeps_the_ids_it_had_not_handed_out() -> None:
    ids, reference = IdSource(4, "s"), IdSource(4, "s")
    expected = [reference.new_uuid() for _ in range(40)]
    handed = [ids.new_uuid() for _ in range(10)]  # batches 1, 2, 4, 8: 15 drawn, 5 left
    restored = IdSource(None, "other")
    restored.restore(ids.saved())
    assert restored.saved()["drawn"] == ids.saved()["drawn"] and len(ids.saved()["drawn"]) == 5
    handed.append(restored.new_uuid())
    again = IdSource(None, "third")
    again.restore(restored.saved())  # mid-way through the restored ids
    assert handed + [again.new_uuid() for _ in range(29)] == expected
