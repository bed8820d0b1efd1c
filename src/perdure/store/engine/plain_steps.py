"""Plain step boundaries in one statement, where the database can (PostgreSQL).

Most boundaries are plain: the run goes on RUNNING, and the boundary holds only its step, the
fields that changed and the messages it adds. The ``commit_steps`` query writes such
boundaries of any number of runs as one data-modifying statement in autocommit: one
transaction and one round trip, each run still under its own guard (fence, expected version,
status RUNNING); ``commit_step`` is the same for one run without messages, with scalar
parameters. Input that waited on a committed run's thread is then delivered in a transaction
of its own, and refused runs are explained (and their ``late_commit`` events recorded) in
another, only when there are any. Messages numbered from a stale view of their thread fail
the statement whole (:class:`~perdure.store.driver.NumberingConflictError`): nothing was
written, and the caller commits those boundaries again another way.
Used by :meth:`perdure.store.engine.commits.Commits.commit` and ``commit_many`` when
:attr:`~perdure.store.driver.Driver.one_statement_writes` is true.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perdure.core.errors import PerdureError
from perdure.core.model import RunStatus
from perdure.core.values import JSON
from perdure.store.base import CommitRequest
from perdure.store.driver import Driver
from perdure.store.engine import threads
from perdure.store.engine.tx import refused
from perdure.store.rows import (
    iso,
    message_object,
    step_completion,
    to_json,
)


def plain(request: CommitRequest) -> bool:
    """Whether a request is plain: one boundary, after which the run goes on, carrying nothing
    but its step, changed fields and messages (no artifacts, savepoints, field logs or memory
    writes, which the transaction path writes). ``commit_steps`` writes such a request whole
    (PostgreSQL); on SQLite its run update is ``advance_plain``."""
    if len(request.boundaries) != 1:
        return False
    b = request.boundaries[0]
    return (
        b.status is RunStatus.RUNNING
        and not b.artifacts
        and not b.savepoints
        and not b.logs
        and not b.appends
        and not b.memory
    )


def commit_plain(d: Driver, requests: Sequence[CommitRequest], at: Any) -> list[int | PerdureError]:
    """Commit plain requests of different runs in one statement; for each, its run's new
    state_version, or the error its refused guard gets (as :meth:`Store.commit` raises it).

    Raises only when the statement failed, so nothing was written. What follows it cannot
    change a landed run's answer: when delivering the waiting input fails, that input stays in
    the inbox for the run's next boundary (a plain run goes on); when explaining a refusal
    fails, that failure is the refused runs' answer."""
    with d.statement() as tx:
        if len(requests) == 1 and not requests[0].boundaries[0].messages:
            row = tx.one("commit_step", _step_params(requests[0], at))
            found = [] if row is None else [row]
        else:
            found = tx.all("commit_steps", _params(requests, at))
    landed = {row["run_id"]: row for row in found}
    tenant_of = {r.run_id: r.tenant_id for r in requests}
    waiting = [row for row in found if row["inbox"]]
    if waiting:
        try:
            with d.write() as tx, tx.batch(last=True):
                for row in waiting:
                    run_id, thread_id = row["run_id"], row["thread_id"]
                    threads.deliver_unread(tx, tenant_of[run_id], thread_id, None, at)
        except PerdureError:
            pass  # the steps landed all the same; the input waits for the run's next boundary
    why: dict[str, PerdureError] = {}
    lost = [r for r in requests if r.run_id not in landed]
    if lost:
        try:
            with d.write() as tx:
                why = {r.run_id: refused(tx, r, at) for r in lost}
        except PerdureError as exc:  # each refused run still wrote nothing
            why = dict.fromkeys((r.run_id for r in lost), exc)
    return [
        int(landed[r.run_id]["state_version"]) if r.run_id in landed else why[r.run_id]
        for r in requests
    ]


def _step_params(request: CommitRequest, at: Any) -> dict[str, Any]:
    """The parameters of ``commit_step`` (one run): the guard, and the rest as one JSON object
    (times as ISO-8601 text, the changed fields' values as their JSON text)."""
    b = request.boundaries[0]
    finished = iso(b.finished_at)
    step = {
        "fence": request.fence,
        "next_step": b.next_step,
        "budget": b.budget.to_json() if b.budget is not None else None,
        "workflow_version": b.workflow_version,
        "state_schema": b.state_schema,
        "state_seal": b.state_seal,
        "name": b.step,
        "outcome": b.outcome,
        "started_at": iso(b.started_at),
        "finished_at": finished,
        "completed": to_json(step_completion(b)),
        "fields": list(b.state),
        "values": [v.decode() for v in b.state.values()],
        "now": finished if at is b.finished_at else iso(at),
    }
    return {
        "tenant_id": request.tenant_id,
        "run_id": request.run_id,
        "fence": request.fence,
        "expected_version": request.expected_version,
        "step": to_json(step),
    }


def _params(requests: Sequence[CommitRequest], at: Any) -> dict[str, Any]:
    """The parameters of ``commit_steps``: the runs, their changed fields and their messages
    (each with its place among its run's, ``ord``), as JSON."""
    runs: list[dict[str, Any]] = []
    changed: list[dict[str, str]] = []
    messages: list[dict[str, JSON]] = []
    for r in requests:
        b = r.boundaries[0]
        runs.append(
            {
                "tenant_id": r.tenant_id,
                "run_id": r.run_id,
                "fence": r.fence,
                "expected_version": r.expected_version,
                "next_step": b.next_step,
                "budget": to_json(b.budget),
                "workflow_version": b.workflow_version,
                "state_schema": b.state_schema,
                "state_seal": b.state_seal,
                "name": b.step,
                "outcome": b.outcome,
                "started_at": iso(b.started_at),
                "finished_at": iso(b.finished_at),
                "completed": to_json(step_completion(b)),
            }
        )
        changed.extend(
            {"run_id": r.run_id, "field": name, "value": value.decode()}
            for name, value in b.state.items()
        )
        messages.extend(
            {**message_object(m), "run_id": r.run_id, "ord": ord}
            for ord, m in enumerate(b.messages, 1)
        )
    return {
        "runs": to_json(runs),
        "changed": to_json(changed),
        "messages": to_json(messages),
        "now": at,
    }
