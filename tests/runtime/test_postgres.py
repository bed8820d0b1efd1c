"""What only PostgreSQL has: opening it by URL, its errors, runtimes sharing one database.

Every other test in tests/runtime/ runs on PostgreSQL too (see conftest.py there).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from perdure import Context, FakeClock, RunStatus, Runtime, Workflow, done, goto, step
from perdure.core.effects import Reconciled
from perdure.core.errors import StoreError
from perdure.core.model import Message, Run, ToolCall
from perdure.runtime import fleet
from perdure.store.base import CommitRequest
from perdure.store.postgres.driver import _check, translate_error
from perdure.store.postgres.store import PostgresStore
from perdure.store.queries import queries
from perdure.store.url import open_store
from perdure.testing.conformance.support import LEASE, boundary, claim, new_run
from tests.backends import PgServer, database_name, database_url, server_waits
from tests.runtime.test_runtime import agent


@pytest.fixture
def db_url(pg_url: str) -> str:
    """Only PostgreSQL in this module."""
    return pg_url


def test_a_postgres_url_runs_a_multi_step_workflow_to_succeeded(db_url: str) -> None:
    with Runtime(db_url, workflows=[agent]) as rt:
        assert isinstance(rt.store, PostgresStore)
        run = rt.start(agent, {"rounds": 0})
        assert rt.run_until_idle() == 1
        view = rt.status(run.run_id)
    assert (view.run.status, view.run.result) == (RunStatus.SUCCEEDED, {"rounds": 3})
    assert view.completed_steps == ["think", "act"] * 3


@dataclass
class Order:
    amount: int = 0


def test_two_runtimes_on_one_database_run_each_step_once(db_url: str, clock: FakeClock) -> None:
    entered: list[str] = []
    lock = threading.Lock()

    @step
    def only(ctx: Context, s: Order):  # type: ignore[no-untyped-def]
        with lock:
            entered.append(ctx.run_id)
        return done({"amount": s.amount})

    wf = Workflow("shared", state=Order, steps=[only])
    runtimes = [Runtime(db_url, clock=clock, owner=f"w{i}", workflows=[wf]) for i in range(2)]
    runs = [runtimes[0].start(wf, {"amount": i}) for i in range(20)]
    threads = [threading.Thread(target=rt.run_until_idle) for rt in runtimes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(entered) == sorted(r.run_id for r in runs)
    for i, r in enumerate(runs):
        assert runtimes[1].get(r.run_id).result == {"amount": i}
    for rt in runtimes:
        rt.close()


def test_both_url_schemes_open_the_postgres_store(db_url: str) -> None:
    for url in (db_url, db_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        assert store.schema_version() > 0
        store.close()


def test_an_unreachable_server_is_one_line_with_a_fix_and_no_password() -> None:
    with pytest.raises(StoreError) as caught:
        Runtime("postgresql://perdure:s3cret@127.0.0.1:1/perdure")
    line = caught.value.one_line()
    assert line.startswith("error[store_error]: cannot connect to PostgreSQL at 127.0.0.1:1/")
    assert "(fix: check that PostgreSQL is running" in line
    assert "\n" not in line and "s3cret" not in line


def test_a_missing_database_is_a_clear_error(pg_server: PgServer) -> None:
    url = database_url(pg_server.dsn, "perdure_no_such_database")
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL") as caught:
        Runtime(url)
    assert "perdure_no_such_database" in caught.value.one_line()


def test_connections_the_server_dropped_are_replaced_without_a_failed_call(
    runtime: Runtime, pg_server: PgServer, db_url: str
) -> None:
    run = runtime.start(agent)
    terminated = pg_server.admin.execute(
        "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity "
        "WHERE datname = %s AND pid <> pg_backend_pid()",
        [database_name(db_url)],
    ).fetchone()
    assert terminated is not None and terminated[0] >= 1
    assert runtime.run_until_idle() == 1
    assert runtime.get(run.run_id).status is RunStatus.SUCCEEDED


def test_a_connection_lost_mid_operation_is_a_store_error_with_a_fix(
    pg_server: PgServer, db_url: str
) -> None:
    conn = psycopg.connect(db_url)
    pid = conn.info.backend_pid
    pg_server.admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    with pytest.raises(psycopg.OperationalError) as caught:
        conn.execute("SELECT 1")
    conn.close()
    error = translate_error(caught.value, "db.example:5432/app")
    assert isinstance(error, StoreError)
    assert error.one_line().startswith(
        "error[store_unavailable]: lost the connection to PostgreSQL at db.example:5432/app"
    )
    assert "(fix: check that PostgreSQL is running" in error.one_line()


def test_a_checkout_of_a_healthy_connection_makes_no_round_trip(
    pg_server: PgServer, db_url: str, tmp_path: Path
) -> None:
    """The pool's check sends nothing on a healthy idle connection (libpq's protocol trace
    stays empty) and refuses one whose server backend was terminated."""
    conn = psycopg.connect(db_url, autocommit=True)
    try:
        trace = tmp_path / "libpq.trace"
        with trace.open("w") as out:
            conn.pgconn.trace(out.fileno())
            _check(conn)
            conn.pgconn.untrace()
        assert trace.read_text() == ""
        pg_server.admin.execute("SELECT pg_terminate_backend(%s, 10000)", [conn.info.backend_pid])
        # pg_terminate_backend(pid, timeout) returns once the backend has exited, after it
        # sent its farewell and closed the socket: the check sees it and pings, which fails
        with pytest.raises(psycopg.OperationalError):
            _check(conn)
    finally:
        conn.close()


def test_messages_numbered_while_another_writer_held_the_thread_commit_as_a_transaction(
    db_url: str, clock: FakeClock
) -> None:
    """A boundary with messages is one statement that takes the thread's lock before it
    numbers them. When another writer held that lock and added messages meanwhile, the
    statement's view is older than theirs: the numbers collide, the statement writes nothing,
    and the boundary is committed again as a transaction, numbered after the other's."""
    store = open_store(db_url)
    try:
        store.create_run(new_run("r1"), clock.now())
        run = claim(store, clock)
        assert run is not None
        other = psycopg.connect(db_url)  # a transaction holding the thread, as writers do
        other.execute("SELECT pg_advisory_xact_lock(1918989411, hashtext('t1/th1'))")
        other.execute(
            "INSERT INTO perdure.messages (tenant_id, thread_id, seq, role, content, at) "
            "VALUES ('t1', 'th1', 1, 'user', 'from elsewhere', now())"
        )
        mine = boundary(clock, messages=(Message("assistant", "mine"),))
        answer: list[int | BaseException] = []

        def commit() -> None:
            try:
                answer.append(
                    store.commit("t1", "r1", run.fence, run.state_version, [mine], clock.now())
                )
            except BaseException as exc:  # reported below, in the test's thread
                answer.append(exc)

        committer = threading.Thread(target=commit)
        committer.start()
        watcher = psycopg.connect(db_url, autocommit=True)
        for _ in range(3000):  # until the commit waits for the thread's lock (a bound, not a time)
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
            if waiting is not None and waiting[0] == 1:
                break
            threading.Event().wait(0.01)
        else:
            pytest.fail("the commit never waited for the thread's lock")
        watcher.close()
        other.commit()
        other.close()
        committer.join(60)
        assert answer == [run.state_version + 1]
        got = [(m.seq, m.content, m.run_id) for m in store.messages("t1", "th1")]
        assert got == [(1, "from elsewhere", None), (2, "mine", "r1")]
        assert [s.name for s in store.steps("t1", "r1")] == ["first"]
    finally:
        store.close()


def test_a_claim_reads_from_the_oldest_claimable_run_not_every_run(
    db_url: str, clock: FakeClock
) -> None:
    """With many runs queued, the worker's scan reads runs_claim_order from the oldest and
    stops at the first claimable run, before the table is analysed (a new database, a burst)
    and after; runs waiting for a person with no timer are not in that index at all."""
    store = open_store(db_url)
    try:
        for i in range(1000):
            store.create_run(new_run(f"r{i:04d}", thread=f"th{i}"), clock.now())
            clock.advance(0.001)
    finally:
        store.close()
    conn = psycopg.connect(db_url, autocommit=True)
    try:
        # the 400 oldest wait for an approval (no wake-up time): a scan must not read them
        conn.execute("UPDATE perdure.runs SET status = 'WAITING_EXTERNAL' WHERE run_id < 'r0400'")
        params = {
            "owner": "w1",
            "lease_until": clock.now(),
            "now": clock.now(),
            "dead_owners": [],
            "workflows": ["wf"],
            "tenant_id": None,
        }
        for analysed in (False, True):
            if analysed:
                conn.execute("ANALYZE perdure.runs")
            conn.execute("BEGIN")
            explained = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + queries("postgres")["claim_next"], params
            ).fetchone()
            conn.execute("ROLLBACK")
            assert explained is not None
            (pick,) = [
                n
                for n in plan_nodes(explained[0][0]["Plan"])
                if n.get("Subplan Name") == "CTE picked"
            ]
            outer = [n for n in plan_nodes(pick) if n.get("Alias") == "runs"]
            assert [(n["Node Type"], n.get("Index Name")) for n in outer] == [
                ("Index Scan", "runs_claim_order")
            ], f"analysed: {analysed}"
            assert (outer[0]["Actual Rows"], outer[0].get("Rows Removed by Filter", 0)) == (1, 0)
    finally:
        conn.close()


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A node of an EXPLAIN (FORMAT JSON) plan and every node under it."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def test_a_plain_boundary_with_messages_is_one_round_trip(
    db_url: str, clock: FakeClock, tmp_path: Path
) -> None:
    """An agent's usual step (it goes on, adding its messages) waits for the server once, and so
    does the worker's claim; when input waits on the thread, its delivery adds one (BEGIN, its
    statements and COMMIT in one pipeline). A boundary that ends the run waits twice."""
    store = PostgresStore(db_url, max_connections=1)
    try:
        store.create_run(new_run("r0", thread="th0"), clock.now())
        clock.advance(1)
        store.create_run(new_run("r1"), clock.now())
        store.post_message("t1", "th1", Message("user", "waiting"), None, clock.now())
        claimed: list[Run | None] = []
        for name, waits in (("alone", 1), ("with input", 2)):
            took = server_waits(store, tmp_path / name, lambda: claimed.append(claim(store, clock)))
            assert took == waits, name
        run = claimed[1]
        assert run is not None
        said = (Message("assistant", "", (ToolCall("c1", "lookup", {}),)), Message("tool", "4"))
        b = boundary(clock, state={"n": b"1"}, messages=said)
        waits = server_waits(
            store,
            tmp_path / "commit",
            lambda: store.commit("t1", "r1", run.fence, run.state_version, [b], clock.now()),
        )
        assert waits == 1
        got = [(m.seq, m.content) for m in store.messages("t1", "th1")]
        assert got == [(1, "waiting"), (2, ""), (3, "4")], "the claim delivered the waiting input"
        store.post_message("t1", "th1", Message("user", "also"), None, clock.now())
        b = boundary(clock, "second", "third", state={"n": b"2"})
        waits = server_waits(
            store,
            tmp_path / "delivering",
            lambda: store.commit("t1", "r1", run.fence, run.state_version + 1, [b], clock.now()),
        )
        assert waits == 2, "the statement, then the delivery's transaction in one pipeline"
        assert [m.content for m in store.messages("t1", "th1")][-1] == "also"
        end = boundary(clock, "third", None, RunStatus.SUCCEEDED, result={"ok": True})
        ending = server_waits(
            store,
            tmp_path / "end",
            lambda: store.commit("t1", "r1", run.fence, run.state_version + 2, [end], clock.now()),
        )
        assert ending == 2, "BEGIN with the guard, then every row and event with the COMMIT"
        assert store.get_run("t1", "r1").status is RunStatus.SUCCEEDED
    finally:
        store.close()


def test_a_landed_plain_step_keeps_its_answer_when_delivering_waiting_input_fails(
    db_url: str, clock: FakeClock
) -> None:
    """A plain boundary lands in one statement; the input that waited on its thread is delivered
    in a transaction after it. When that delivery fails, the step still landed: alone or in a
    group, the commit answers with the new version (never an error for a step that is written),
    the input stays in the inbox, and the run's next boundary delivers it."""
    store = open_store(db_url)
    conn = psycopg.connect(db_url, autocommit=True)
    try:
        runs: list[Run] = []
        for run_id in ("r1", "r2"):
            store.create_run(new_run(run_id, thread=f"th-{run_id}"), clock.now())
            run = claim(store, clock, tenant_id="t1", run_id=run_id)
            assert run is not None
            runs.append(run)
        store.post_message("t1", "th-r1", Message("user", "refused once"), None, clock.now())
        refuse_once(conn)
        first, second = runs
        group = [
            CommitRequest("t1", r.run_id, r.fence, r.state_version, [boundary(clock)]) for r in runs
        ]
        assert store.commit_many(group, clock.now()) == [
            first.state_version + 1,
            second.state_version + 1,
        ]
        version = store.commit(
            "t1", "r1", first.fence, first.state_version + 1, [boundary(clock)], clock.now()
        )
        assert version == first.state_version + 2
        assert store.messages("t1", "th-r1") == []
        assert store.thread("t1", "th-r1").inbox == 1, "the input is kept"
        conn.execute("DROP TRIGGER refuse_once ON perdure.messages")
        store.commit("t1", "r1", first.fence, version, [boundary(clock)], clock.now())
        assert [m.content for m in store.messages("t1", "th-r1")] == ["refused once"]
        assert [s.name for s in store.steps("t1", "r1")] == ["first"] * 3
        assert [s.name for s in store.steps("t1", "r2")] == ["first"]
    finally:
        conn.close()
        store.close()


def test_a_claim_whose_waiting_input_cannot_be_delivered_fails_and_the_next_one_delivers_it(
    db_url: str, clock: FakeClock
) -> None:
    """The worker's claim is one statement; input waiting for the run is delivered after it,
    before the run is handed over. When that delivery fails, the claim fails: no worker gets
    the run without its input. Once the lease runs out, the next claim delivers it."""
    store = open_store(db_url)
    conn = psycopg.connect(db_url, autocommit=True)
    try:
        store.create_run(new_run("r1"), clock.now())
        store.post_message("t1", "th1", Message("user", "refused once"), None, clock.now())
        refuse_once(conn)
        with pytest.raises(StoreError):
            claim(store, clock)
        conn.execute("DROP TRIGGER refuse_once ON perdure.messages")
        assert claim(store, clock) is None, "the failed claim still holds the lease"
        clock.advance(LEASE.total_seconds() + 1)
        run = claim(store, clock, "w2")
        assert run is not None and run.fence == 2
        assert [m.content for m in store.messages("t1", "th1")] == ["refused once"]
    finally:
        conn.close()
        store.close()


def refuse_once(conn: psycopg.Connection[Any]) -> None:
    """A trigger that makes inserting the message 'refused once' into a thread fail."""
    conn.execute(
        "CREATE FUNCTION perdure.refuse_once() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN IF NEW.content = 'refused once' THEN RAISE EXCEPTION 'not now'; END IF; "
        "RETURN NEW; END $$"
    )
    conn.execute(
        "CREATE TRIGGER refuse_once BEFORE INSERT ON perdure.messages "
        "FOR EACH ROW EXECUTE FUNCTION perdure.refuse_once()"
    )


def calls_then_end(calls: int, name: str, reconciled: bool = False) -> Workflow[Any]:
    """A no-op step, then a step making ``calls`` no-op recorded calls (with a reconciler when
    ``reconciled``)."""

    @step(next=["act"])
    def first(ctx: Context, s: Any):  # type: ignore[no-untyped-def]
        return goto("act")

    @step
    def act(ctx: Context, s: Any):  # type: ignore[no-untyped-def]
        no_op_calls(ctx, calls, reconciled)
        return done(None)

    return Workflow(name, state=Order, steps=[first, act])


def no_op_calls(ctx: Context, calls: int, reconciled: bool) -> None:
    """``calls`` no-op recorded calls, with a reconciler (that finds nothing) when
    ``reconciled``."""
    reconcile = (lambda r, k: Reconciled.not_found()) if reconciled else None
    for i in range(calls):
        ctx.effect(
            f"e{i}",
            target="t",
            operation="o",
            request=i,
            execute=lambda r, k: r,
            reconcile=reconcile,
        )


def first_step_calls(calls: int, reconciled: bool = False) -> Workflow[Any]:
    """One step making ``calls`` no-op recorded calls: the first step of its execution."""

    @step
    def only(ctx: Context, s: Any):  # type: ignore[no-untyped-def]
        no_op_calls(ctx, calls, reconciled)
        return done(None)

    return Workflow(f"first_step{calls}{'r' if reconciled else ''}", state=Order, steps=[only])


def waits_of_a_run(db_url: str, clock: FakeClock, wf: Workflow[Any], trace: Path) -> int:
    """Round trips of one run of ``wf`` from its claim to its end, after five runs of it (the
    driver prepares a statement on its fifth use: a round trip of its own)."""
    with Runtime(PostgresStore(db_url, max_connections=1), workflows=[wf], clock=clock) as rt:
        for _ in range(5):
            rt.start(wf)
        rt.run_until_idle()
        rt.start(wf)
        return server_waits(rt.store, trace, rt.run_until_idle)


def test_a_recorded_call_after_the_first_step_of_an_execution_is_three_round_trips(
    db_url: str, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded call in a step occurrence no execution ran before waits for the server three
    times (its intent, ``executing``, its outcome): the read that tells a replay from a first
    call is left out, since nothing can be recorded there yet. In the first step an execution
    runs (which may be a re-execution) it is read, a fourth."""
    monkeypatch.setattr(fleet, "REFRESH_SECONDS", 10**9)  # the dead workers: read once, kept
    plain = waits_of_a_run(db_url, clock, calls_then_end(0, "calls0"), tmp_path / "0")
    three = waits_of_a_run(db_url, clock, calls_then_end(3, "calls3"), tmp_path / "3")
    assert three - plain == 3 * 3

    without = waits_of_a_run(db_url, clock, first_step_calls(0), tmp_path / "without")
    first = waits_of_a_run(db_url, clock, first_step_calls(3), tmp_path / "first")
    assert first - without == 3 * 4, "the read, the intent and two moves"


def test_a_recorded_call_with_a_reconciler_is_two_round_trips_after_the_first_step(
    db_url: str, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a reconciler, the intent is recorded as the first attempt under way (``executing``,
    with its deadline): a recorded call waits for the server twice, the intent and the outcome,
    and three times in the first step an execution runs (the read before the intent)."""
    monkeypatch.setattr(fleet, "REFRESH_SECONDS", 10**9)  # the dead workers: read once, kept
    plain = waits_of_a_run(db_url, clock, calls_then_end(0, "rcalls0", True), tmp_path / "0")
    three = waits_of_a_run(db_url, clock, calls_then_end(3, "rcalls3", True), tmp_path / "3")
    assert three - plain == 3 * 2
    without = waits_of_a_run(db_url, clock, first_step_calls(0, True), tmp_path / "without")
    first = waits_of_a_run(db_url, clock, first_step_calls(3, True), tmp_path / "first")
    assert first - without == 3 * 3, "the read, the intent recorded executing, the outcome"
