"""Retention and erasure on each database and object store: gc deletes only what expired and
nothing a live run needs; erasing a thread leaves no row and no object behind."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from perdure import FakeClock, Runtime
from perdure.core.errors import RunBusyError
from perdure.core.history import Retention
from perdure.core.model import RunStatus
from perdure.runtime.artifacts import object_key
from tests.apps import artifacts_app as app
from tests.artifacts.conftest import Objects
from tests.backends import rows_mentioning

NOW = Retention(finished=timedelta(0), orphan_grace=timedelta(0))


def report(rt: Runtime, label: str, *, thread: str | None = None, finish: bool = True) -> str:
    run = rt.start(app.report, {"label": label}, thread=thread)
    rt.run_until_idle()
    if finish:
        rt.signal(run.run_id, "go")
        rt.run_until_idle()
        assert rt.get(run.run_id).status is RunStatus.SUCCEEDED
    return run.run_id


def key_of(rt: Runtime, run_id: str) -> str:
    return object_key("default", rt.store.artifacts.find("default", run_id=run_id)[0].ref.digest)


def test_gc_with_zero_retention_deletes_finished_runs_and_nothing_live_runs_need(
    runtime: Runtime, objects: Objects, tmp_path: Path
) -> None:
    live = report(runtime, "live", finish=False)
    done_on_shared = report(runtime, "done-shared", thread="shared")  # one run of a thread at
    live_on_shared = report(runtime, "live-shared", thread="shared", finish=False)  # a time
    done = report(runtime, "done")
    kept_by_savepoint = runtime.start(app.pay, {"ledger": str(tmp_path / "l.txt")})
    runtime.run_until_idle()
    keys = {r: key_of(runtime, r) for r in (live, live_on_shared, done, done_on_shared)}
    shared_before = runtime.store.messages("default", "shared")

    gone = runtime.gc(NOW)

    assert gone.runs == 2
    assert gone.objects_deleted == 2
    for run_id in (done, done_on_shared):
        assert rows_mentioning(runtime.store.url, run_id) == {}, "every row of the run is gone"
        assert keys[run_id] not in objects.list()
    assert runtime.get(kept_by_savepoint.run_id).status is RunStatus.SUCCEEDED
    assert runtime.store.messages("default", "shared") == shared_before
    for run_id in (live, live_on_shared):
        assert keys[run_id] in objects.list()
        runtime.signal(run_id, "go")
    runtime.run_until_idle()
    assert runtime.get(live).status is RunStatus.SUCCEEDED
    assert runtime.get(live_on_shared).status is RunStatus.SUCCEEDED
    assert runtime.gc(NOW).runs == 2, "once finished, they go too"
    assert objects.list() == []


def test_gc_keeps_runs_until_their_retention_passes_and_per_workflow_settings_win(
    runtime: Runtime, clock: FakeClock, tmp_path: Path
) -> None:
    done = report(runtime, "d")
    policy = Retention(finished=timedelta(days=1), workflows={"report": timedelta(days=3)})
    clock.advance(2 * 86_400)
    assert runtime.gc(policy).runs == 0, "report runs are kept 3 days"
    clock.advance(2 * 86_400)
    assert runtime.gc(policy).runs == 1
    assert rows_mentioning(runtime.store.url, done) == {}
    other = report(runtime, "e")
    keep = Retention(finished=timedelta(0), workflows={"report": None})
    assert runtime.gc(keep).runs == 0, "None keeps a workflow's runs"
    assert runtime.get(other).status is RunStatus.SUCCEEDED


def test_erasing_a_thread_leaves_no_row_and_no_object_behind(
    runtime: Runtime, objects: Objects
) -> None:
    mine = report(runtime, "secret", thread="conv")
    big = runtime.start(app.big, thread="conv")
    theirs = runtime.start(app.big, thread="other")
    runtime.run_until_idle()
    unique = key_of(runtime, mine)

    erased = runtime.delete_thread("conv", by="dpo")

    assert erased.rows["runs"] == 2 and erased.erased_by == "dpo"
    left = rows_mentioning(runtime.store.url, "conv", mine, big.run_id)
    assert left == {"erasures": 1}, "only the record that the erasure happened"
    assert unique not in objects.list()
    # the big blobs are the same bytes as the other thread's: they stay for it
    assert runtime.get(theirs.run_id).result == {"blob": app.BIG_STATE, "tool": app.BIG_MESSAGE}
    shared = [a.ref for a in runtime.store.artifacts.find("default", run_id=theirs.run_id)]
    assert runtime.get_artifact(shared[0])
    runtime.delete_thread("other")
    assert objects.list() == [], "nothing left in the bucket"
    assert rows_mentioning(runtime.store.url, theirs.run_id, "other") == {"erasures": 1}


def test_erasing_refuses_a_thread_whose_run_a_worker_holds(runtime: Runtime) -> None:
    run = runtime.start(app.report, thread="busy")
    claimed = runtime.claim_next()
    assert claimed is not None and claimed.run_id == run.run_id
    with pytest.raises(RunBusyError):
        runtime.delete_thread("busy")
    with pytest.raises(RunBusyError):
        runtime.delete_run(run.run_id)
    assert runtime.get(run.run_id).status is RunStatus.RUNNING


def test_erasing_one_run_keeps_the_rest_of_its_thread(runtime: Runtime) -> None:
    a = report(runtime, "a", thread="t")
    b = report(runtime, "b", thread="t")
    runtime.delete_run(a)
    assert rows_mentioning(runtime.store.url, a) == {"erasures": 1}
    assert runtime.get(b).status is RunStatus.SUCCEEDED


def test_an_idle_worker_collects_garbage_at_most_every_gc_every_seconds(
    runtime: Runtime, clock: FakeClock
) -> None:
    from perdure import Worker

    runtime.register(app.report)
    first = report(runtime, "one")
    said: list[str] = []
    w = Worker(runtime, gc_every=3600, retention=NOW, on_gc=said.append)
    w.run(until_idle=True)
    assert said == ["gc: 1 runs, 0 orphaned uploads, 1 objects"]
    assert rows_mentioning(runtime.store.url, first) == {}
    second = report(runtime, "two")
    w.run(until_idle=True)
    assert len(said) == 1, "not again within the hour"
    clock.advance(3601)
    w.run(until_idle=True)
    assert len(said) == 2 and rows_mentioning(runtime.store.url, second) == {}


def test_gc_can_archive_finished_runs_and_restore_brings_one_back_whole(
    runtime: Runtime, objects: Objects
) -> None:
    run_id = report(runtime, "cold")
    big = runtime.start(app.big)
    runtime.run_until_idle()
    before = {
        r: (
            runtime.get(r),
            runtime.store.steps("default", r),
            runtime.store.history.state_changes("default", r),
            [(e.type, e.step, e.data) for e in runtime.store.events("default", r)],
            runtime.store.list_effects("default", run_id=r),
        )
        for r in (run_id, big.run_id)
    }
    ref = runtime.store.artifacts.find("default", run_id=run_id)[0].ref

    gone = runtime.gc(NOW, archive=True)

    assert gone.runs == 2
    assert rows_mentioning(runtime.store.url, run_id, big.run_id) == {}
    assert object_key("default", ref.digest) not in objects.list(), "the shared object went"
    assert runtime.archived() == sorted([run_id, big.run_id])
    for r in (run_id, big.run_id):
        back = runtime.restore(r)
        assert back == before[r][0]
        assert runtime.store.steps("default", r) == before[r][1]
        assert runtime.store.history.state_changes("default", r) == before[r][2]
        events = [(e.type, e.step, e.data) for e in runtime.store.events("default", r)]
        assert events[:-1] == before[r][3] and events[-1][0] == "restored"
        assert runtime.store.list_effects("default", run_id=r) == before[r][4]
    assert runtime.get_artifact(ref).startswith(b"report of cold")
    assert runtime.state_at(big.run_id, 1)["blob"] == "x" * app.BIG_STATE
    tool = [m for m in runtime.status(big.run_id).messages if m.role == "tool"]
    assert len(tool[0].content) == app.BIG_MESSAGE
    assert runtime.archived() == [], "a restored run leaves the archive"
    assert not [k for k in objects.list() if k.startswith("_archive/")]


def test_erasing_a_thread_erases_its_archived_runs_too(runtime: Runtime, objects: Objects) -> None:
    archived = report(runtime, "to-archive", thread="conv")
    kept = report(runtime, "elsewhere", thread="other")
    runtime.gc(NOW, archive=True)
    assert runtime.archived() == sorted([archived, kept])
    erased = runtime.delete_thread("conv")
    assert erased.objects_deleted == 2, "the archive and its artifact copy"
    assert runtime.archived() == [kept]
    assert not [k for k in objects.list() if "conv" in k or archived in k]
    runtime.delete_run(kept)
    assert runtime.archived() == [] and objects.list() == []


def test_gc_can_prune_events_and_history_sooner_than_the_runs(runtime: Runtime) -> None:
    done = report(runtime, "pruned")
    live = report(runtime, "live", finish=False)
    policy = Retention(finished=None, events=timedelta(0), history=timedelta(0))
    gone = runtime.gc(policy)
    assert gone.runs == 0 and gone.rows["events"] > 0 and gone.rows["history"] > 0
    assert runtime.store.events("default", done) == []
    assert runtime.get(done).status is RunStatus.SUCCEEDED
    assert runtime.store.events("default", live) != []
    assert runtime.store.history.state_changes("default", live) != []
