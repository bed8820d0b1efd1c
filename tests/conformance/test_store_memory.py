"""The conformance bodies of :mod:`perdure.testing.conformance.memory`, on each backend, and
what only this project's backends can show: the rows an erasure leaves."""

from perdure.core.clock import FakeClock
from perdure.store.base import Store
from perdure.testing.conformance.memory import *  # noqa: F403
from perdure.testing.conformance.memory import commit, put
from tests.backends import rows_mentioning


def test_erase_deletes_a_prefix_and_below_only(store: Store, clock: FakeClock) -> None:
    commit(
        store,
        clock,
        put(("user", "u1"), "a", 1),
        put(("user", "u1", "notes"), "b", 2),
        put(("user", "u10"), "c", 3),
    )
    now = clock.now()
    assert store.memory.erase("t2", ("user",), by="dpo", now=now) == 0
    assert store.memory.erase("t1", ("user", "u1"), by="dpo", now=now) == 2
    assert store.memory.erase("t1", ("user", "u1"), by="dpo", now=now) == 0
    assert [i.key for i in store.memory.search("t1", (), clock.now())] == ["c"]
    assert rows_mentioning(store.url, "dpo") == {"erasures": 3}, "who asked, each time"
    assert rows_mentioning(store.url, "user") == {"memory": 1}, "the record keeps no namespace"
