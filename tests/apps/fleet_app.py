"""A four-step workflow for fleet tests: several worker processes share its runs on PostgreSQL.

``prepare`` doubles the input; ``apply`` makes one effect against an external counter that does
NOT deduplicate (the table ``fleet_counter`` in the database named by the state's ``counter``
URL: every call inserts a row), with a reconciler that looks the effect key up; ``record`` adds
a message to the run's thread; ``finish`` ends with ``{"n", "doubled", "row"}``.

``FLEET_EFFECT_PAUSE`` (seconds, default 0) makes the effect pause after its row is inserted and
before it returns, widening the window in which a killed worker leaves the outcome unknown.
With ``FLEET_MARKS`` set to a folder, a thread writes ``<pid>-<thread id>.effect`` there (holding
the effect key) while it is inside the effect's call and removes it afterwards, so a test can
kill a worker in the middle of an effect.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from perdure import Context, Workflow, done, goto, step
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome

COUNTER_DDL = """
CREATE TABLE IF NOT EXISTS public.fleet_counter (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    effect_key text NOT NULL,
    n          integer NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
)
"""
"""The external counter: one row per call, no uniqueness on the key (it never deduplicates)."""


@dataclass
class Job:
    n: int = 0
    counter: str = ""
    doubled: int = 0
    row: int | None = None


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, connect_timeout=10)


def _mark() -> Path | None:
    folder = os.environ.get("FLEET_MARKS")
    return Path(folder) / f"{os.getpid()}-{threading.get_ident()}.effect" if folder else None


def count_once(url: str):  # type: ignore[no-untyped-def]
    def execute(request: Any, key: str) -> Any:
        mark = _mark()
        if mark is not None:
            mark.write_text(key)
        with _connect(url) as conn:
            row = conn.execute(
                "INSERT INTO public.fleet_counter (effect_key, n) VALUES (%s, %s) RETURNING id",
                (key, request["n"]),
            ).fetchone()
        time.sleep(float(os.environ.get("FLEET_EFFECT_PAUSE", "0")))
        if mark is not None:
            mark.unlink(missing_ok=True)
        if row is None:
            raise RuntimeError("the counter returned no row id")
        return {"id": row[0]}

    return execute


def look_up(url: str):  # type: ignore[no-untyped-def]
    def reconcile(request: Any, key: str) -> Reconciled:
        with _connect(url) as conn:
            row = conn.execute(
                "SELECT min(id) FROM public.fleet_counter WHERE effect_key = %s", (key,)
            ).fetchone()
        if row is None or row[0] is None:
            return Reconciled.not_found()
        return Reconciled.confirmed({"id": row[0]})

    return reconcile


@step(next=["apply"])
def prepare(ctx: Context, s: Job) -> Outcome:
    s.doubled = s.n * 2
    return goto("apply")


@step(next=["record"])
def apply(ctx: Context, s: Job) -> Outcome:
    out = ctx.effect(
        "count",
        target="fleet-counter",
        operation="insert",
        request={"n": s.n},
        execute=count_once(s.counter),
        reconcile=look_up(s.counter),
    )
    s.row = out["id"]
    return goto("record")


@step(next=["finish"])
def record(ctx: Context, s: Job) -> Outcome:
    ctx.add_message("assistant", f"counted {s.n} as row {s.row}")
    return goto("finish")


@step
def finish(ctx: Context, s: Job) -> Outcome:
    return done({"n": s.n, "doubled": s.doubled, "row": s.row})


fleet_job = Workflow("fleet_job", state=Job, steps=[prepare, apply, record, finish])
