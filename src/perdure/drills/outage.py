"""The database drill: the database is briefly unavailable while a step runs and commits."""

from __future__ import annotations

import contextlib
import time

from perdure.drills.base import Drills
from perdure.store.faults import postgres_sessions_ender, sqlite_write_lock
from perdure.testing import _Row

OUTAGE_SECONDS = 2.0
"""How long the outage lasts (wall time): SQLite's write lock held, or PostgreSQL's
connections ended."""


def database_unavailable(self: Drills) -> tuple[str, bool | None]:
    """SQLite: another connection holds the write lock; PostgreSQL (``pg``): every perdure
    connection to the database is ended, again and again (see the package docstring)."""
    if not self.ref.steps:
        return "not applicable: the run completes no step", None
    step = self.ref.steps[0]
    if self.pg is not None:
        return postgres_outage(self, step)
    row = self.row("database-unavailable")
    with contextlib.ExitStack() as outage:
        with self.held_at(row, step) as proc:
            if proc is None:
                return f"could not hold step {step} open ({row.observe().status})", False
            outage.enter_context(sqlite_write_lock(row.db.removeprefix("sqlite:///")))
        time.sleep(OUTAGE_SECONDS)  # the step runs; its writes wait for the lock
    proc.wait(timeout=120)
    seen, _ = row.settle(self.approve_as)
    what = f"SQLite's write lock held {OUTAGE_SECONDS:.0f} s by another connection as {step} ran"
    return self.judge(row, seen, what)


def postgres_outage(self: Drills, step: str) -> tuple[str, bool | None]:
    folder = self.workdir / "database-unavailable"
    row = _Row(folder, self.app, self.workflow, self.input_json, self.durability, db=self.pg)
    ended = 0
    with postgres_sessions_ender(row.db) as end_sessions:
        with self.held_at(row, step) as proc:
            if proc is None:
                return f"could not hold step {step} open ({row.observe().status})", False
        end = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < end:  # the outage: the step runs, its connections die
            ended += end_sessions()
            time.sleep(0.05)
    proc.wait(timeout=120)
    seen, _ = row.settle(self.approve_as)
    what = f"PostgreSQL: {ended} connections ended over {OUTAGE_SECONDS:.0f} s as {step} ran"
    return self.judge(row, seen, what)
