"""A memory search pages in the database: order, limit and offset counted over the items a
prefix, expiry and filter keep, whether the query checks the whole filter or the process
checks part of it over keyset pages; and the filter means what perdure.core.memory.matches
says on both databases, for every kind of value."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perdure import FakeClock
from perdure.core.memory import MemoryWrite, Namespace, matches
from perdure.store.base import Store
from perdure.store.wings.memory.conditions import pushed
from perdure.store.wings.memory.engine import CHUNK

T = "t1"


def put_all(store: Store, clock: FakeClock, items: list[tuple[Namespace, str, Any]]) -> None:
    store.memory.put(T, [MemoryWrite(ns, k, v) for ns, k, v in items], clock.now())


def keys(store: Store, clock: FakeClock, prefix: Namespace, **kw: Any) -> list[str]:
    return [i.key for i in store.memory.search(T, prefix, clock.now(), **kw)]


def test_pages_follow_namespace_then_key_bytewise_and_tile_the_whole(
    store: Store, clock: FakeClock
) -> None:
    # written out of order; "B" < "a" < "b" < "é" bytewise, "a/b" < "a!": namespace order is
    # its stored text's
    items = [
        (("p", "b"), "k2", {}),
        (("p", "a"), "k9", {}),
        (("p", "a"), "k10", {}),
        (("p", "B"), "z", {}),
        (("p", "é"), "a", {}),
        (("p", "a", "x"), "k1", {}),
        (("p",), "zz", {}),
    ]
    put_all(store, clock, items)
    whole = [(i.namespace, i.key) for i in store.memory.search(T, ("p",), clock.now())]
    assert whole == [
        (("p",), "zz"),
        (("p", "B"), "z"),
        (("p", "a"), "k10"),
        (("p", "a"), "k9"),
        (("p", "a", "x"), "k1"),
        (("p", "b"), "k2"),
        (("p", "é"), "a"),
    ]
    for limit in (1, 2, 3, 10):
        for offset in range(9):
            page = store.memory.search(T, ("p",), clock.now(), limit=limit, offset=offset)
            assert [(i.namespace, i.key) for i in page] == whole[offset : offset + limit]


def test_a_prefix_is_a_whole_label_and_the_empty_prefix_is_every_namespace(
    store: Store, clock: FakeClock
) -> None:
    put_all(
        store,
        clock,
        [
            (("a",), "1", {}),
            (("a", "b"), "2", {}),
            (("a!",), "3", {}),  # "!" sorts before "/": inside the prefix's range, not under it
            (("a.b",), "4", {}),
            (("ab",), "5", {}),
            (("a0",), "6", {}),  # "0" is the first character after "/"
            (("b",), "7", {}),
        ],
    )
    assert keys(store, clock, ("a",)) == ["1", "2"]
    assert keys(store, clock, ("a",), limit=1, offset=1) == ["2"]
    assert keys(store, clock, ("a",), offset=2) == []
    assert keys(store, clock, ("a", "b")) == ["2"]
    assert keys(store, clock, ()) == ["1", "3", "4", "2", "6", "5", "7"]
    assert keys(store, clock, (), limit=2, offset=5) == ["5", "7"]
    assert keys(store, clock, ("a0",)) == ["6"]
    assert keys(store, clock, (), limit=10**30, offset=6) == ["7"], "beyond 64 bits: all"
    assert keys(store, clock, (), offset=10**30) == []
    assert keys(store, clock, (), filter={"x": 1.5}, offset=10**30) == []


def test_expired_items_are_skipped_before_the_offset_is_counted(
    store: Store, clock: FakeClock
) -> None:
    soon = clock.now() + timedelta(seconds=10)
    store.memory.put(
        T,
        [
            MemoryWrite(("e",), f"k{i}", {"i": i}, expires_at=soon if i % 2 == 0 else None)
            for i in range(8)
        ],
        clock.now(),
    )
    assert keys(store, clock, ("e",), limit=2, offset=1) == ["k1", "k2"]
    clock.advance(10)  # at expires_at: expired
    assert keys(store, clock, ("e",)) == ["k1", "k3", "k5", "k7"]
    assert keys(store, clock, ("e",), limit=2, offset=1) == ["k3", "k5"]
    assert keys(store, clock, ("e",), filter={"i": {"$gte": 2}}, limit=1, offset=1) == ["k5"]
    assert keys(store, clock, ("e",), filter={"i": {"$gte": 2.0}}, limit=1, offset=1) == ["k5"]


def test_a_filter_is_applied_before_the_page_is_cut(store: Store, clock: FakeClock) -> None:
    put_all(store, clock, [(("f",), f"k{i:03}", {"m": i % 3, "x": float(i)}) for i in range(30)])
    every = [f"k{i:03}" for i in range(30) if i % 3 == 1]
    assert pushed({"m": 1})[1], "checked whole by the query"
    assert not pushed({"x": 4.0})[1], "a float is checked in the process"
    for flt in ({"m": 1}, {"m": {"$eq": 1}}, {"x": {"$in": 1}, "m": 1}):
        if "x" in flt:  # not all operators: an object compared deeply, so nothing matches
            assert keys(store, clock, ("f",), filter=flt) == []
            continue
        for limit, offset in ((3, 0), (3, 2), (1, 9), (5, 8), (2, 10)):
            got = keys(store, clock, ("f",), filter=flt, limit=limit, offset=offset)
            assert got == every[offset : offset + limit], (flt, limit, offset)
    odd_x = [f"k{i:03}" for i in range(30) if i % 3 == 1 and i > 10]
    got = keys(store, clock, ("f",), filter={"m": 1, "x": {"$gt": 10.0}}, limit=2, offset=1)
    assert got == odd_x[1:3]


def test_a_filter_checked_in_the_process_reads_on_across_pages_until_the_page_is_full(
    store: Store, clock: FakeClock
) -> None:
    n = 3 * CHUNK + 7  # more rows than one keyset page holds
    items = [(("c",), f"k{i:04}", {"x": i + 0.5, "even": i % 2 == 0}) for i in range(n)]
    put_all(store, clock, items)
    late = [f"k{i:04}" for i in range(n) if i + 0.5 > n - 30]
    flt = {"x": {"$gt": n - 30.0}}  # a float: checked in the process
    assert not pushed(flt)[1]
    assert keys(store, clock, ("c",), filter=flt) == late
    assert keys(store, clock, ("c",), filter=flt, limit=4, offset=3) == late[3:7]
    assert keys(store, clock, ("c",), filter=flt, limit=4, offset=28) == late[28:]
    evens = [f"k{i:04}" for i in range(n) if i % 2 == 0]
    both = {"even": True, "x": {"$lt": 1e9}}  # one condition in the query, one here
    assert keys(store, clock, ("c",), filter=both, offset=CHUNK, limit=3) == evens[CHUNK:][:3]
    assert len(keys(store, clock, ("c",), filter=both, limit=None)) == len(evens)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63)]),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e23, 2.0**53, 2.0000000000000004, 0.1, 1e-300]),
    st.sampled_from(["", "a", "A", "b", "é", "a\u0000b", 'q"', "back\\slash", "\n", "1"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=4,
)
FIELDS = st.sampled_from(["a", "b", "a.b", "", "é", 'q"', "x\\y", "t\tab", "n\u0000ul"])
ITEM = st.one_of(st.dictionaries(FIELDS, VALUES, max_size=3), VALUES)
WANTS = st.one_of(
    VALUES,
    st.dictionaries(
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
        SCALARS,
        min_size=1,
        max_size=2,
    ),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    values=st.lists(ITEM, min_size=1, max_size=8),
    flt=st.dictionaries(FIELDS, WANTS, min_size=1, max_size=2),
    limit=st.integers(1, 4),
    offset=st.integers(0, 3),
)
def test_a_search_filter_means_what_matches_says_on_every_value(
    store: Store, clock: FakeClock, values: list[Any], flt: dict[str, Any], limit: int, offset: int
) -> None:
    ns = ("h", uuid.uuid4().hex[:8])  # each example in a namespace of its own
    put_all(store, clock, [(ns, f"k{i}", v) for i, v in enumerate(values)])
    expected = [f"k{i}" for i, v in enumerate(values) if matches(v, flt)]
    assert keys(store, clock, ns, filter=flt, limit=100) == expected
    assert (
        keys(store, clock, ns, filter=flt, limit=limit, offset=offset)
        == expected[offset : offset + limit]
    )


def test_get_many_answers_each_key_in_order_in_one_read(store: Store, clock: FakeClock) -> None:
    soon = clock.now() + timedelta(seconds=10)
    store.memory.put(
        T,
        [
            MemoryWrite(("m",), "a", {"v": "a"}),
            MemoryWrite(("m", "x"), "a", {"v": "xa"}),
            MemoryWrite(("m",), "ttl", {"v": "t"}, expires_at=soon, ttl_seconds=10),
            MemoryWrite(("m",), "gone", {"v": "g"}, expires_at=soon),
        ],
        clock.now(),
    )
    store.memory.put("t2", [MemoryWrite(("m",), "other", {"v": "o"})], clock.now())
    keys_asked = [
        (("m", "x"), "a"),
        (("m",), "a"),
        (("m",), "missing"),
        (("m",), "other"),  # another tenant's
        (("m",), "a"),  # asked twice: answered twice
        (("m",), "ttl"),
        (("m",), "gone"),
    ]
    got = store.memory.get_many(T, keys_asked, clock.now())
    assert [None if i is None else i.value["v"] for i in got] == [
        "xa", "a", None, None, "a", "t", "g"
    ]  # fmt: skip
    assert got[1] is not got[4] and got[1] == got[4]
    assert store.memory.get_many(T, [], clock.now()) == []
    clock.advance(5)
    refreshed = store.memory.get_many(T, keys_asked[-2:], clock.now(), refresh_ttl=True)
    assert refreshed[0] is not None and refreshed[0].expires_at == clock.now() + timedelta(
        seconds=10
    )
    assert refreshed[1] is not None and refreshed[1].expires_at == soon, "no time to live: kept"
    clock.advance(5)  # the put's expiry has passed; the refreshed one has not
    later = store.memory.get_many(T, keys_asked[-2:], clock.now())
    assert later[0] is not None and later[1] is None


def test_a_refreshing_read_of_items_without_a_time_to_live_takes_no_write_lock(
    tmp_path: Path, clock: FakeClock
) -> None:
    """SQLite only: a PostgreSQL read never waits for a writer, so there is nothing to see."""
    import sqlite3

    from perdure.store.sqlite.store import SqliteStore

    store = SqliteStore(str(tmp_path / "memory.db"))
    store.migrate(clock.now())
    driver = store.driver
    put_all(store, clock, [(("w",), "k", {"v": 1})])
    writer = sqlite3.connect(driver.path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds SQLite's write lock: a write
    # transaction would wait for it (the busy timeout), then fail
    try:
        item = store.memory.get(T, ("w",), "k", clock.now(), refresh_ttl=True)
        found = store.memory.search(T, ("w",), clock.now(), refresh_ttl=True)
        many = store.memory.get_many(T, [(("w",), "k")], clock.now(), refresh_ttl=True)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        store.close()
    assert item is not None and [i.key for i in found] == ["k"] and many[0] is not None
