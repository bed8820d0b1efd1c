"""Old runs under new code, on real SQLite files: migrations, renames, retired dependencies,
every quarantine reason, rollbacks, the pre-deploy check, and a decoder that never crashes."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, step
from perdure.core.errors import DefinitionError
from perdure.core.serde import Limits
from perdure.testing import migrate_fixture
from tests.apps import versions_v1 as v1
from tests.apps import versions_v2 as v2
from tests.apps import versions_v3 as v3
from tests.backends import overwrite_state_field


def rt(db_url: str, clock: FakeClock, wf: Workflow[Any], **kw: Any) -> Runtime:
    return Runtime(db_url, clock=clock, owner=f"v{wf.version}", workflows=[wf], **kw)


@step(name="collect")
def only_collect(ctx: Context, s: v1.Profile):  # type: ignore[no-untyped-def]
    return done()


def waiting_v1_run(db_url: str, clock: FakeClock, name: str = "Ada Lovelace", **start: Any) -> str:
    with rt(db_url, clock, v1.profile) as old:
        run = old.start(v1.profile, {"name": name}, **start)
        old.run_until_idle()
        old.signal(run.run_id, "go")
    return run.run_id


def test_a_v1_run_is_migrated_through_two_schemas_and_a_renamed_step(
    db_url: str, clock: FakeClock
) -> None:
    run_id = waiting_v1_run(db_url, clock)
    with rt(db_url, clock, v3.profile) as new:
        new.run_until_idle()
        view = new.status(run_id, events=50)
    assert view.run.status is RunStatus.SUCCEEDED
    assert view.run.result == {"v3": ["Ada", "Lovelace", "ada@example.com"], "model": None}
    assert (view.run.workflow_version, view.run.state_schema) == (3, 3)
    assert view.run.release.workflow_version == 1, "the manifest keeps what it started under"
    (upgraded,) = [e for e in view.events if e.type == "upgraded"]
    assert upgraded.data["from_schema"] == 1 and upgraded.data["to_schema"] == 3
    assert upgraded.data["renamed_step"] == {"finish": "complete"}
    assert upgraded.data["dropped_fields"] == ["name"]
    assert view.completed_steps == ["collect", "complete"]


def test_fixtures_of_old_states_are_tested_with_the_helper() -> None:
    state = migrate_fixture(v3.profile, {"name": "Grace Hopper"}, from_schema=1)
    assert (state.first, state.last, state.email) == ("Grace", "Hopper", "grace@example.com")
    with pytest.raises(AssertionError, match="decode_error"):
        migrate_fixture(v3.profile, {"first": 1}, from_schema=3)


def test_a_retired_model_is_replaced_as_declared(db_url: str, clock: FakeClock) -> None:
    run_id = waiting_v1_run(db_url, clock, release={"model": "old-model"})
    with rt(db_url, clock, v3.profile) as new:
        new.run_until_idle()
        assert new.get(run_id).result["model"] == "new-model"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        ("retired", "retired_dependency"),
        ("missing_migration", "no_migration"),
        ("broken_migration", "no_migration"),
        ("too_old", "no_migration"),
        ("unknown_step", "unknown_step"),
        ("bad_value", "decode_error"),
        ("oversize", "oversize"),
    ],
)
def test_each_unreadable_run_is_quarantined_with_its_reason_and_kept(
    db_url: str, clock: FakeClock, make: str, reason: str
) -> None:
    release = {"model": "dead-model"} if make == "retired" else None
    run_id = waiting_v1_run(db_url, clock, release=release)
    code: Workflow[Any] = v3.profile
    kw: dict[str, Any] = {}
    if make == "missing_migration":
        code = Workflow(
            "profile",
            version=3,
            state_schema=3,
            state=v3.Profile,
            steps=[v3.collect, v3.complete],
            renamed={"finish": "complete"},
        )
    elif make == "broken_migration":
        code = Workflow(
            "profile",
            version=2,
            state_schema=2,
            state=v2.Profile,
            steps=[v2.collect, v2.complete],
            renamed={"finish": "complete"},
        )
        code.migration(from_schema=1)(lambda data: data["missing"])
    elif make == "too_old":
        code = Workflow(
            "profile",
            version=3,
            state_schema=1,
            state=v1.Profile,
            steps=[v1.collect, v1.finish],
            min_version=2,
        )
    elif make == "unknown_step":
        code = Workflow("profile", version=1, state=v1.Profile, steps=[only_collect])
    elif make == "bad_value":
        overwrite_state_field(db_url, run_id, None, "42")
        code = v1.profile
    elif make == "oversize":
        code, kw = v1.profile, {"limits": Limits(max_bytes=10)}
    with rt(db_url, clock, code, **kw) as new:
        new.run_until_idle()
        run = new.get(run_id)
        assert run.status is RunStatus.QUARANTINED
        assert run.error.reason == reason
        assert run.error.message
        assert run.next_step == "finish", "kept in place, never restarted"
        listed = new.runs(status=["QUARANTINED"])
    assert [r.run_id for r in listed] == [run_id]


def test_a_run_written_by_a_newer_release_waits_for_it_after_a_rollback(
    db_url: str, clock: FakeClock
) -> None:
    with rt(db_url, clock, v2.profile) as newer:
        run = newer.start(v2.profile, {"first": "Alan", "last": "Turing"})
        newer.run_until_idle()
        newer.signal(run.run_id, "go")
    with rt(db_url, clock, v1.profile) as rolled_back:
        rolled_back.run_until_idle()
        parked = rolled_back.get(run.run_id)
        assert parked.status is RunStatus.QUARANTINED
        assert parked.error.reason == "schema_too_new"
        assert rolled_back.versions.check()[0].verdict == "quarantine"
    with rt(db_url, clock, v2.profile) as back:
        (row,) = back.versions.check()
        assert (row.verdict, row.note.startswith("readable again")) == ("run", True)
        back.run_until_idle()
        assert back.get(run.run_id).result == {"v2": ["Alan", "Turing"]}


def test_the_check_reports_without_changing_anything(db_url: str, clock: FakeClock) -> None:
    dead = waiting_v1_run(db_url, clock, release={"model": "dead-model"})
    with rt(db_url, clock, v1.profile) as first:
        old = first.start(v1.profile, {"name": "Ada Lovelace"}).run_id
    with rt(db_url, clock, v3.profile) as new:
        fresh = new.start(v3.profile, {"first": "Linus"}, tenant="acme")
        before = [(r.run_id, r.state_version) for r in new.store.scan_runs(list(RunStatus))]
        rows = {r.run_id: r for r in new.versions.check()}
        after = [(r.run_id, r.state_version) for r in new.store.scan_runs(list(RunStatus))]
    assert before == after
    assert rows[old].verdict == "migrate"
    assert "schema 1 -> 3" in rows[old].note
    assert rows[fresh.run_id].verdict == "run"
    assert (rows[dead].verdict, rows[dead].reason) == ("quarantine", "retired_dependency")


def test_a_quarantined_run_is_repaired_and_continues(db_url: str, clock: FakeClock) -> None:
    run_id = waiting_v1_run(db_url, clock)
    overwrite_state_field(db_url, run_id, None, "42")
    with rt(db_url, clock, v1.profile) as code:
        code.run_until_idle()
        assert code.get(run_id).status is RunStatus.QUARANTINED
        code.versions.repair(run_id, patch={"name": "Repaired"}, by="ops")
        code.run_until_idle()
        assert code.get(run_id).result == {"v1": "Repaired"}


def test_a_quarantined_run_can_be_ended_by_a_person(db_url: str, clock: FakeClock) -> None:
    run_id = waiting_v1_run(db_url, clock, release={"model": "dead-model"})
    with rt(db_url, clock, v3.profile) as code:
        code.run_until_idle()
        failed = code.versions.fail(run_id, reason="model retired, customer informed", by="ops")
    assert failed.status is RunStatus.FAILED
    assert failed.error.previous.reason == "retired_dependency"


def test_declaring_migrations_and_renames_is_checked() -> None:
    with pytest.raises(DefinitionError, match="does not lead"):
        v1.profile.migration(from_schema=1)(lambda d: d)
    with pytest.raises(DefinitionError, match="two migrations"):
        v3.profile.migration(from_schema=1)(lambda d: d)
    with pytest.raises(DefinitionError, match="not a declared step"):
        Workflow("x", state=v1.Profile, steps=[v1.collect, v1.finish], renamed={"a": "zzz"})
    with pytest.raises(DefinitionError, match="still declared"):
        Workflow(
            "x", state=v1.Profile, steps=[v1.collect, v1.finish], removed={"finish": "collect"}
        )


@dataclass
class Small:
    n: int = 0
    tags: list[str] = field(default_factory=list)


@step
def finish_small(ctx: Context, s: Small):  # type: ignore[no-untyped-def]
    return done(s.n)


small = Workflow("small", state=Small, steps=[finish_small])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    garbage=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)),
    cut=st.integers(min_value=0, max_value=30),
)
def test_random_or_truncated_state_never_crashes_the_worker(
    tmp_path_factory: pytest.TempPathFactory, garbage: bytes, cut: int
) -> None:
    db = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'f.db'}"
    with Runtime(db, clock=FakeClock(), workflows=[small]) as runtime:
        bad = runtime.start(small, {"n": 7, "tags": ["a", "b"]})
        good = runtime.start(small, {"n": 1})
        conn = sqlite3.connect(db.removeprefix("sqlite:///"))
        value = (b'{"tags": ["a", "b"]' + garbage)[: len(garbage) + 20 - cut]
        conn.execute(
            "UPDATE state_fields SET value = ? WHERE run_id = ? AND field = 'tags'",
            (value.decode("utf-8", "replace"), bad.run_id),
        )
        conn.commit()
        conn.close()
        runtime.run_until_idle()
        assert runtime.get(good.run_id).status is RunStatus.SUCCEEDED
        after = runtime.get(bad.run_id)
        assert after.status in (RunStatus.QUARANTINED, RunStatus.SUCCEEDED)
        if after.status is RunStatus.QUARANTINED:
            assert after.error.reason in ("decode_error", "oversize")
