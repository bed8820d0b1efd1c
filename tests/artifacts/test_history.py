"""State history, savepoints and forks on each database (and object store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perdure import Runtime
from perdure.core.errors import InvalidInputError
from perdure.core.model import RunStatus
from tests.apps import artifacts_app as app
from tests.backends import rows_mentioning


def paid(rt: Runtime, tmp_path: Path, amount: int = 10) -> str:
    run = rt.start(app.pay, {"ledger": str(tmp_path / "ledger.txt"), "amount": amount})
    rt.run_until_idle()
    assert rt.get(run.run_id).status is RunStatus.SUCCEEDED
    return run.run_id


def snapshot(rt: Runtime, run_id: str) -> dict[str, Any]:
    """Everything stored about a run, to show it did not change."""
    run = rt.get(run_id)
    return {
        "run": run,
        "steps": rt.store.steps("default", run_id),
        "state": rt.store.load_state("default", run_id),
        "history": rt.store.history.state_changes("default", run_id),
        "events": rt.store.events("default", run_id),
        "effects": rt.store.list_effects("default", run_id=run_id),
        "messages": rt.store.messages("default", run.thread_id),
        "savepoints": rt.store.history.savepoints("default", run_id),
    }


def test_history_lists_each_step_with_the_fields_it_changed(
    runtime: Runtime, tmp_path: Path
) -> None:
    run_id = paid(runtime, tmp_path)
    entries = runtime.history(run_id)
    assert [(e.step_seq, e.step) for e in entries] == [
        (0, None),
        (1, "plan"),
        (2, "charge"),
        (3, "notify"),
        (4, "finish"),
    ]
    assert {c.field for c in entries[0].changes} == {"ledger", "amount", "note"}
    assert [c.field for c in entries[1].changes] == ["note"]
    assert [c.field for c in entries[2].changes] == ["note"]
    assert entries[2].savepoints == ("paid",)
    assert entries[3].changes == () and entries[4].changes == ()


def test_the_state_at_any_step_is_rebuilt_from_the_deltas(runtime: Runtime, tmp_path: Path) -> None:
    run_id = paid(runtime, tmp_path, amount=7)
    assert runtime.state_at(run_id, 0)["note"] == ""
    assert runtime.state_at(run_id, 1)["note"] == "plan 7"
    assert runtime.state_at(run_id, 2)["note"] == "paid 7"
    assert runtime.state_at(run_id, 4) == runtime.state_at(run_id, 2)
    with pytest.raises(InvalidInputError):
        runtime.state_at(run_id, 5)
    with pytest.raises(InvalidInputError):
        runtime.state_at(run_id, -1)


def test_a_fork_from_a_savepoint_does_not_repeat_the_confirmed_payment(
    runtime: Runtime, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.txt")
    run_id = paid(runtime, tmp_path)
    assert [c.split()[0] for c in app.calls(ledger)] == ["charge", "notify"]
    before = snapshot(runtime, run_id)
    fork = runtime.fork(run_id, savepoint="paid", by="alice")
    assert fork.run_id != run_id and fork.status is RunStatus.PENDING
    assert fork.next_step == "notify", "the fork continues after the savepoint's step"
    runtime.run_until_idle()
    done = runtime.get(fork.run_id)
    assert done.status is RunStatus.SUCCEEDED and done.result == {"note": "paid 10"}
    lines = app.calls(ledger)
    assert [c.split()[0] for c in lines] == ["charge", "notify", "notify"]
    notify_keys = [c.split()[-1] for c in lines if c.startswith("notify")]
    assert notify_keys[0] != notify_keys[1], "the fork's effects have their own keys"
    assert fork.run_id in notify_keys[1]
    assert snapshot(runtime, run_id) == before, "the original is unchanged"
    lineage = runtime.lineage(fork.run_id)
    assert lineage is not None
    assert (lineage.source_run_id, lineage.step_seq, lineage.savepoint, lineage.created_by) == (
        run_id,
        2,
        "paid",
        "alice",
    )
    assert [e.name for e in runtime.store.list_effects("default", run_id=fork.run_id)] == ["notify"]
    # the fork's thread has what the original's thread had at the fork point, then its own
    contents = [m.content for m in runtime.store.messages("default", fork.thread_id)]
    assert contents == ["notified: paid 10"]
    assert fork.thread_id != before["run"].thread_id


def test_a_fork_at_a_step_with_a_patch_runs_from_there_with_the_patched_state(
    runtime: Runtime, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.txt")
    run_id = paid(runtime, tmp_path)
    fork = runtime.fork(run_id, at=1, patch={"amount": 25})
    assert fork.next_step == "charge"
    runtime.run_until_idle()
    assert runtime.get(fork.run_id).result == {"note": "paid 25"}
    assert [c.split()[:2] for c in app.calls(ledger)] == [
        ["charge", "10"],
        ["notify", "paid"],
        ["charge", "25"],
        ["notify", "paid"],
    ]
    lineage = runtime.lineage(fork.run_id)
    assert lineage is not None and lineage.patched == ("amount",)


def test_a_fork_refuses_what_it_cannot_do(runtime: Runtime, tmp_path: Path) -> None:
    run_id = paid(runtime, tmp_path)
    with pytest.raises(InvalidInputError, match="exactly one"):
        runtime.fork(run_id, at=1, savepoint="paid")
    with pytest.raises(InvalidInputError, match="no savepoint"):
        runtime.fork(run_id, savepoint="nope")
    with pytest.raises(InvalidInputError, match="no step follows"):
        runtime.fork(run_id, at=4)
    with pytest.raises(InvalidInputError):
        runtime.fork(run_id, at=1, patch={"amount": "not a number"})
    with pytest.raises(InvalidInputError):
        runtime.fork(run_id, at=99)
    assert runtime.runs(workflow="pay") == [runtime.get(run_id)], "nothing was created"


def test_a_person_marks_a_savepoint_and_a_repeat_changes_nothing(
    runtime: Runtime, tmp_path: Path
) -> None:
    run_id = paid(runtime, tmp_path)
    sp = runtime.savepoint(run_id, "reviewed", at=1, by="bob")
    assert (sp.step_seq, sp.created_by) == (1, "bob")
    assert runtime.savepoint(run_id, "reviewed", at=1, by="bob") == sp
    with pytest.raises(InvalidInputError, match="already has savepoint"):
        runtime.savepoint(run_id, "reviewed", at=2)
    assert [s.label for s in runtime.savepoints(run_id)] == ["reviewed", "paid"]
    fork = runtime.fork(run_id, savepoint="reviewed")
    assert fork.next_step == "charge"


def test_a_fork_of_a_run_with_offloaded_state_shares_the_artifact(runtime: Runtime) -> None:
    run = runtime.start(app.big)
    runtime.run_until_idle()
    fork = runtime.fork(run.run_id, at=1)
    runtime.run_until_idle()
    assert runtime.get(fork.run_id).result == {"blob": app.BIG_STATE, "tool": app.BIG_MESSAGE}
    digests = {a.ref.digest for a in runtime.store.artifacts.find("default", run_id=fork.run_id)}
    assert digests == {
        a.ref.digest for a in runtime.store.artifacts.find("default", run_id=run.run_id)
    }
    assert rows_mentioning(runtime.store.url, fork.run_id)


def test_history_and_forks_of_sealed_state_open_and_reseal_for_the_fork(
    db_url: str, clock: Any, objects: Any, tmp_path: Path
) -> None:
    from perdure import Keyring

    keyring = Keyring({"k1": b"0123456789abcdef0123456789abcdef"}, "k1")
    with Runtime(db_url, clock=clock, artifacts=objects.location, keyring=keyring) as rt:
        run_id = paid(rt, tmp_path)
        assert rt.state_at(run_id, 1)["note"] == "plan 10"
        fork = rt.fork(run_id, at=1, patch={"amount": 3})
        rt.run_until_idle()
        assert rt.get(fork.run_id).result == {"note": "paid 3"}
        sealed = rt.store.load_state("default", fork.run_id)
        assert all(v.startswith(b"rk2.h.k1.") for v in sealed.values())


def test_an_async_application_reads_history_and_forks_through_the_async_runtime(
    runtime: Runtime, tmp_path: Path
) -> None:
    import asyncio

    from perdure import AsyncRuntime

    run_id = paid(runtime, tmp_path)

    async def go() -> tuple[int, str | None]:
        art = AsyncRuntime(runtime)
        entries = await art.history(run_id)
        fork = await art.fork(run_id, savepoint="paid")
        return len(entries), fork.next_step

    assert asyncio.run(go()) == (5, "notify")


def test_an_upgrade_that_rewrites_an_offloaded_field_commits_its_artifact(
    runtime: Runtime, objects: Any
) -> None:
    from dataclasses import dataclass
    from datetime import timedelta

    from perdure import Context, Retention, Workflow, done, step, wait_for_signal

    @dataclass
    class V1:
        notes: str = ""

    @dataclass
    class V2:
        notes: str = ""
        words: int = 0

    @step(next=["end"])
    def begin(ctx: Context, s: Any) -> Any:
        s.notes = "n" * 200_000
        return wait_for_signal("go", next="end")

    @step
    def end(ctx: Context, s: Any) -> Any:
        return done({"len": len(s.notes), "words": s.words})

    v1 = Workflow("doc", version=1, state_schema=1, state=V1, steps=[begin, end])
    v2 = Workflow("doc", version=2, state_schema=2, state=V2, steps=[begin, end])

    @v2.migration(from_schema=1)
    def count(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "notes": data["notes"] + "!", "words": 1}

    run = runtime.start(v1)
    runtime.run_until_idle()
    runtime.register(v2)
    runtime.signal(run.run_id, "go")
    runtime.gc(Retention(finished=None, orphan_grace=timedelta(0)))
    runtime.run_until_idle()
    statuses = {str(a.status) for a in runtime.store.artifacts.find("default", run_id=run.run_id)}
    assert statuses == {"committed"}, "the migrated value's upload is committed with the upgrade"
    swept = runtime.gc(Retention(finished=None, orphan_grace=timedelta(0)))
    assert swept.objects_deleted == 0, "the old value stays too: the history points to it"
    assert len(objects.list()) == 2
    assert runtime.get(run.run_id).result == {"len": 200_001, "words": 1}
