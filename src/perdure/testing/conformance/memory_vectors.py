"""Semantic search over memory (migration 0023), writes outside a run (a LangGraph store's),
namespaces, paging, comparison filters and refreshed expiry: one body on both databases."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.errors import PerdureError
from perdure.core.memory import MemoryVector, MemoryWrite
from perdure.store.base import Store
from perdure.testing.conformance.memory import commit
from perdure.testing.conformance.support import needs


@pytest.fixture(autouse=True)
def needs_memory_wing(store: Store) -> None:
    """Every test here needs the memory wing: skipped on a store without."""
    needs(store, "memory")


def vec(path: str, *xs: float) -> MemoryVector:
    return MemoryVector(path, tuple(xs))


def test_a_query_orders_items_by_their_best_vector_and_unindexed_items_come_last(
    store: Store, clock: FakeClock
) -> None:
    ns = ("docs",)
    store.memory.put(
        "t1",
        [
            MemoryWrite(ns, "a", {"t": "a"}, vectors=(vec("t", 1, 0, 0),)),
            MemoryWrite(
                ns, "b", {"t": "b"}, vectors=(vec("t.0", 0, 1, 0), vec("t.1", 0.9, 0.1, 0))
            ),
            MemoryWrite(ns, "c", {"t": "c"}),
            MemoryWrite(ns, "d", {"t": "d"}, vectors=(vec("t", 0, 0, 1),)),
        ],
        clock.now(),
    )
    found = store.memory.search("t1", ns, clock.now(), query=(1.0, 0.0, 0.0))
    assert [i.key for i in found] == ["a", "b", "d", "c"]
    scores = [i.score for i in found]
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] == pytest.approx(0.9 / (0.81 + 0.01) ** 0.5, rel=1e-5)  # the best of two
    assert scores[2] == pytest.approx(0.0) and scores[3] is None
    page = store.memory.search("t1", ns, clock.now(), query=(1.0, 0.0, 0.0), offset=1, limit=2)
    assert [i.key for i in page] == ["b", "d"]
    plain = store.memory.search("t1", ns, clock.now())
    assert [(i.key, i.score) for i in plain] == [(k, None) for k in "abcd"]


def test_a_put_replaces_the_vectors_and_a_delete_or_erase_removes_them(
    store: Store, clock: FakeClock
) -> None:
    ns = ("docs",)
    store.memory.put("t1", [MemoryWrite(ns, "a", 1, vectors=(vec("$", 1, 0),))], clock.now())
    store.memory.put("t1", [MemoryWrite(ns, "a", 2, vectors=(vec("$", 0, 1),))], clock.now())
    (item,) = store.memory.search("t1", ns, clock.now(), query=(0.0, 1.0))
    assert (item.value, item.version) == (2, 2)
    assert item.score == pytest.approx(1.0)
    store.memory.put("t1", [MemoryWrite(ns, "a", 3)], clock.now())  # unindexed now
    (item,) = store.memory.search("t1", ns, clock.now(), query=(0.0, 1.0))
    assert item.score is None
    store.memory.put("t1", [MemoryWrite(ns, "a", 4, vectors=(vec("$", 1, 0),))], clock.now())
    store.memory.put("t1", [MemoryWrite(ns, "a", deleted=True)], clock.now())
    store.memory.put("t1", [MemoryWrite(ns, "a", 5)], clock.now())
    (item,) = store.memory.search("t1", ns, clock.now(), query=(1.0, 0.0))
    assert (item.version, item.score) == (1, None), "the delete took the vectors with the item"
    store.memory.put("t1", [MemoryWrite(ns, "b", 1, vectors=(vec("$", 1, 0),))], clock.now())
    assert store.memory.erase("t1", ns, by="ops", now=clock.now()) == 2
    store.memory.put("t1", [MemoryWrite(ns, "b", 1)], clock.now())
    assert [i.score for i in store.memory.search("t1", ns, clock.now(), query=(1.0, 0.0))] == [None]


def test_vectors_commit_with_a_boundary_and_stay_with_their_tenant(
    store: Store, clock: FakeClock
) -> None:
    commit(store, clock, MemoryWrite(("u",), "k", {"x": 1}, vectors=(vec("x", 0.5, 0.5),)))
    (item,) = store.memory.search("t1", ("u",), clock.now(), query=(1.0, 1.0))
    assert item.run_id == "r1" and item.score == pytest.approx(1.0)
    assert store.memory.search("t2", ("u",), clock.now(), query=(1.0, 1.0)) == []


def test_a_vector_of_another_length_is_not_scored(store: Store, clock: FakeClock) -> None:
    store.memory.put("t1", [MemoryWrite(("d",), "a", 1, vectors=(vec("$", 1, 0, 0),))], clock.now())
    (item,) = store.memory.search("t1", ("d",), clock.now(), query=(1.0, 0.0))
    assert item.score is None


def test_writes_outside_a_run_are_versioned_and_apply_in_order(
    store: Store, clock: FakeClock
) -> None:
    ns = ("graph", "u1")
    store.memory.put("t1", [MemoryWrite(ns, "k", 1), MemoryWrite(ns, "k", 2)], clock.now())
    item = store.memory.get("t1", ns, "k", clock.now())
    assert item is not None and (item.value, item.version, item.run_id) == (2, 2, None)
    store.memory.put("t1", [MemoryWrite(ns, "gone", deleted=True)], clock.now())  # no item: fine
    store.memory.put("t1", [], clock.now())


def test_namespaces_lists_those_with_a_live_item(store: Store, clock: FakeClock) -> None:
    later = clock.now() + timedelta(seconds=10)
    store.memory.put(
        "t1",
        [
            MemoryWrite(("a", "b"), "k", 1),
            MemoryWrite(("a", "b"), "l", 1),
            MemoryWrite(("a",), "k", 1),
            MemoryWrite(("z",), "k", 1, expires_at=later),
        ],
        clock.now(),
    )
    store.memory.put("t2", [MemoryWrite(("other",), "k", 1)], clock.now())
    assert store.memory.namespaces("t1", clock.now()) == [("a",), ("a", "b"), ("z",)]
    clock.advance(10)
    assert store.memory.namespaces("t1", clock.now()) == [("a",), ("a", "b")]


def test_offset_pages_through_a_filtered_search(store: Store, clock: FakeClock) -> None:
    ns = ("n",)
    writes = [MemoryWrite(ns, f"k{i}", {"i": i, "even": i % 2 == 0}) for i in range(10)]
    store.memory.put("t1", writes, clock.now())
    pages = [
        [
            i.value["i"]
            for i in store.memory.search(
                "t1", ns, clock.now(), filter={"even": True}, offset=o, limit=2
            )
        ]
        for o in (0, 2, 4)
    ]
    assert pages == [[0, 2], [4, 6], [8]]
    older = store.memory.search("t1", ns, clock.now(), filter={"i": {"$gte": 3, "$lt": 6}})
    assert [i.key for i in older] == ["k3", "k4", "k5"]
    ne = store.memory.search("t1", ns, clock.now(), filter={"i": {"$ne": 0}, "even": True})
    assert [i.key for i in ne] == ["k2", "k4", "k6", "k8"]


def test_a_read_that_refreshes_restarts_the_items_time_to_live(
    store: Store, clock: FakeClock
) -> None:
    ns = ("s",)
    expires = clock.now() + timedelta(seconds=60)
    store.memory.put(
        "t1",
        [MemoryWrite(ns, "ttl", 1, expires_at=expires, ttl_seconds=60), MemoryWrite(ns, "no", 1)],
        clock.now(),
    )
    clock.advance(50)
    assert store.memory.get("t1", ns, "ttl", clock.now()) is not None  # a plain read: no refresh
    item = store.memory.get("t1", ns, "ttl", clock.now(), refresh_ttl=True)
    assert item is not None and item.expires_at == clock.now() + timedelta(seconds=60)
    clock.advance(50)
    found = store.memory.search("t1", ns, clock.now(), refresh_ttl=True)
    assert [(i.key, i.expires_at) for i in found] == [
        ("no", None),
        ("ttl", clock.now() + timedelta(seconds=60)),
    ]
    clock.advance(61)
    assert store.memory.get("t1", ns, "ttl", clock.now(), refresh_ttl=True) is None
    assert store.memory.expire(clock.now(), limit=10) == 1


def test_a_vector_that_is_not_numbers_is_refused_without_a_traceback(
    store: Store, clock: FakeClock
) -> None:
    for numbers in (("x",), (1e39,), ()):
        bad = MemoryVector("$", numbers)  # type: ignore[arg-type]
        with pytest.raises(PerdureError, match="float32") as err:
            store.memory.put("t1", [MemoryWrite(("d",), "a", 1, vectors=(bad,))], clock.now())
        assert err.value.code == "invalid_input"
    assert store.memory.get("t1", ("d",), "a", clock.now()) is None, "nothing was written"
