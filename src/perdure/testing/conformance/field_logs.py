"""Field logs in the store: a base written whole, tails appended by later commits, joined on
load and in history; compacted, rewritten by a person, archived and deleted with the run."""

from __future__ import annotations

from typing import Any

from perdure.core.clock import FakeClock
from perdure.core.model import RunStatus
from perdure.store.base import Store
from perdure.testing.conformance.support import boundary, claimed, needs, patched_by_a_person


def commit(store: Store, clock: FakeClock, **kw: Any) -> None:
    run = store.get_run("t1", "r1")
    store.commit("t1", "r1", run.fence, run.state_version, [boundary(clock, **kw)], clock.now())


def grown(store: Store, clock: FakeClock) -> None:
    """r1: ``log`` becomes a log at step 1 (``[1]``), then steps 2 and 3 append 2, then 3."""
    claimed(store, clock)
    commit(store, clock, state={"log": b"[1]"}, logs=frozenset({"log"}))
    commit(store, clock, appends={"log": b",2"})
    commit(store, clock, appends={"log": b",3"}, state={"n": b"7"})


def test_a_log_is_its_base_and_every_tail_appended(store: Store, clock: FakeClock) -> None:
    needs(store, "history")
    grown(store, clock)
    loaded = store.load_state("t1", "r1")
    assert loaded == {"n": b"7", "log": b"[1,2,3]"}
    assert loaded.logs == {"log": 2}
    assert [
        (c.step_seq, c.field, c.size, c.appended) for c in store.history.state_changes("t1", "r1")
    ] == [
        (0, "n", 1, False),
        (1, "log", 3, False),
        (2, "log", 2, True),
        (3, "log", 2, True),
        (3, "n", 1, False),
    ]
    assert store.history.state_at("t1", "r1", 0) == {"n": b"0"}
    assert store.history.state_at("t1", "r1", 2) == {"n": b"0", "log": b"[1,2]"}
    assert store.history.state_at("t1", "r1", 3) == {"n": b"7", "log": b"[1,2,3]"}


def test_a_log_starting_empty_takes_tails_without_a_leading_comma(
    store: Store, clock: FakeClock
) -> None:
    claimed(store, clock)
    commit(store, clock, state={"log": b"[]"}, logs=frozenset({"log"}))
    commit(store, clock, appends={"log": b'{"a":1}'})
    commit(store, clock, appends={"log": b',{"b":[2]}'})
    assert store.load_state("t1", "r1")["log"] == b'[{"a":1},{"b":[2]}]'


def test_a_log_written_whole_again_drops_its_tails(store: Store, clock: FakeClock) -> None:
    needs(store, "history")
    grown(store, clock)
    commit(store, clock, state={"log": b"[1,2,3,4]"}, logs=frozenset({"log"}))  # compacted
    loaded = store.load_state("t1", "r1")
    assert loaded["log"] == b"[1,2,3,4]" and loaded.logs == {"log": 0}
    commit(store, clock, appends={"log": b",5"})
    assert store.load_state("t1", "r1")["log"] == b"[1,2,3,4,5]"
    assert store.history.state_at("t1", "r1", 3)["log"] == b"[1,2,3]", "history keeps the old tails"


def test_a_person_rewriting_a_log_makes_it_a_plain_field(store: Store, clock: FakeClock) -> None:
    grown(store, clock)
    patched_by_a_person(store, clock, {"log": b"[9]"})
    loaded = store.load_state("t1", "r1")
    assert loaded["log"] == b"[9]" and loaded.logs == {}


def test_an_archived_log_comes_back_whole_and_deleting_the_run_takes_its_tails(
    store: Store, clock: FakeClock
) -> None:
    needs(store, "archive", "retention")
    grown(store, clock)
    commit(store, clock, appends={"log": b",4"}, next_step=None, status=RunStatus.SUCCEEDED)
    before = store.load_state("t1", "r1")
    rows = store.archive.export_run("t1", "r1")
    assert [r.row["value"] for r in rows if r.table == "state_tails"] == [",2", ",3", ",4"]
    store.retention.delete_runs([("t1", "r1")], clock.now())
    assert store.load_state("t1", "r1") == {}
    store.archive.import_run("t1", rows, clock.now())
    after = store.load_state("t1", "r1")
    assert after == before == {"n": b"7", "log": b"[1,2,3,4]"}
    assert after.logs == before.logs == {"log": 3}
