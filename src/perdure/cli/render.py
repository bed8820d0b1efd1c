"""Turning runs into text and JSON for people and scripts (used by the CLI)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson

from perdure.core.model import JSON, Approval, Message, Run, RunStatus, WorkerInfo
from perdure.core.shapes import approval_json, effect_json, event_json, iso, run_json

__all__ = ["approval_json", "effect_json", "event_json", "run_json"]  # used by other commands
from perdure.runtime.admin.inspector import RunView
from perdure.runtime.admin.versions import CheckRow
from perdure.runtime.runtime import Runtime

FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


def approval_line(a: Approval) -> str:
    """One approval request as one line."""
    decided = f" by {a.decided_by}" if a.decided_by else ""
    return (
        f"{a.run_id}  {a.status}{decided}  role={a.role}  step={a.step}  "
        f"request={orjson.dumps(a.request).decode()}"
    )


def view_json(view: RunView) -> dict[str, JSON]:
    """What ``perdure show --json`` prints."""
    return {
        **run_json(view.run),
        "completed_steps": view.completed_steps,
        "messages": [m.to_json() for m in view.messages],
        "effects": [effect_json(e) for e in view.effects],
        "events": [event_json(e) for e in view.events],
    }


def message_line(m: Message) -> str:
    """One message as one line, tool-call ids included."""
    if m.tool_calls:
        calls = ", ".join(
            f"{c.name}({orjson.dumps(c.arguments).decode()}) id={c.id}" for c in m.tool_calls
        )
        body = f"tool call {calls}" + (f" — {m.content}" if m.content else "")
    elif m.tool_call_id:
        body = f"{m.content}  (result of {m.tool_call_id})"
    else:
        body = m.content
    if len(body) > 2000:  # a large (offloaded) output: its start, and where the rest is
        where = f"; {m.artifact.uri}" if m.artifact is not None else ""
        body = f"{body[:2000]}... ({len(body)} characters{where})"
    return f"{m.seq:>4}  {m.role:<9} {body}"


def attempt_note(run: Run) -> str:
    """`` (attempt 2: 1 cut short by a crash)`` when the step in progress has been tried
    before, else nothing."""
    if run.next_step is None or run.attempt == 1 or run.status in FINISHED:
        return ""
    why = []
    if run.step_attempts:
        why.append(f"{run.step_attempts} failed")
    if run.interrupted_attempts:
        why.append(f"{run.interrupted_attempts} cut short by a crash")
    return f" (attempt {run.attempt}: {', '.join(why)})"


def view_text(view: RunView) -> str:
    """What ``perdure show`` prints."""
    run = view.run
    lease = (
        f"held by {run.owner} until {iso(run.lease_until)} (fence {run.fence})"
        if run.owner
        else f"free (fence {run.fence})"
    )
    rel = run.release
    lines = [
        f"run        {run.run_id}",
        f"workflow   {run.workflow} v{rel.workflow_version} (state schema {rel.state_schema})",
        f"tenant     {run.tenant_id}   thread {run.thread_id}",
        f"status     {run.status}",
        f"next step  {run.next_step or '-'}{attempt_note(run)}",
        f"completed  {', '.join(view.completed_steps) or '-'}",
        f"lease      {lease}",
        f"durability {rel.durability}   version {run.state_version}",
    ]
    if run.result is not None:
        lines.append(f"result     {orjson.dumps(run.result).decode()}")
    if run.wake_at is not None and run.status is RunStatus.RUNNING and run.owner is None:
        lines.append(f"waits      until {iso(run.wake_at)}, then runs {run.next_step} again")
        retried = [e for e in view.events if e.type == "retry_scheduled"]
        if retried and isinstance(retried[-1].data, dict):
            found = retried[-1].data.get("error")
            why = found if isinstance(found, dict) else {}
            text = ": ".join(str(why[k]) for k in ("kind", "message") if why.get(k))
            attempts = f" (failed attempts so far: {run.step_attempts})"
            lines.append(f"           because {text or 'a retry was scheduled'}{attempts}")
    if run.error is not None and run.status in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED):
        err = run.error
        lines.append(f"why        {err.reason} at step {err.step}")
        if err.message:
            lines.append(f"           {err.message}")
        if err.suggested_action:
            lines.append(f"do         {err.suggested_action}")
        if err.evidence:
            lines.append(f"evidence   {orjson.dumps(err.evidence).decode()}")
    elif run.error is not None:
        lines.append(f"error      {orjson.dumps(run.error.to_json()).decode()}")
    lines.append(f"messages   {len(view.messages)}")
    lines += [f"  {message_line(m)}" for m in view.messages]
    if view.effects:
        lines.append(f"effects    {len(view.effects)}")
        lines += [
            f"  {e.status:<11} attempts={e.attempts} {e.target}.{e.operation}  {e.key}"
            for e in view.effects
        ]
    lines.append(f"events     last {len(view.events)}")
    for e in view.events:
        data = "" if e.data is None else orjson.dumps(e.data).decode()
        lines.append(f"  {e.seq:>5}  {iso(e.at)}  {e.type:<15} {e.step or '':<10} {data}")
    return "\n".join(lines)


def runs_table(runs: list[Run]) -> str:
    """What ``perdure runs`` prints."""
    if not runs:
        return "no runs"
    rows = [("RUN", "WORKFLOW", "STATUS", "NEXT", "STEPS", "THREAD", "UPDATED", "WHY")]
    rows += [
        (
            r.run_id,
            r.workflow,
            str(r.status),
            r.next_step or "-",
            str(r.steps_done),
            r.thread_id,
            iso(r.updated_at) or "",
            _why(r),
        )
        for r in runs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    )


def _why(run: Run) -> str:
    """The reason a run needs a person, for listings."""
    if run.status in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED) and run.error:
        return run.error.reason
    return ""


def resumed(rt: Runtime, run_id: str, tenant: str, **options: Any) -> tuple[str, Run]:
    """Resume a run inline (``options`` as :meth:`Runtime.resume`); return one line that
    describes the outcome, and the run afterwards."""
    before = rt.get(run_id, tenant=tenant)
    if before.status.terminal:
        return f"run {run_id} is finished ({before.status}); nothing to resume", before
    after = rt.resume(run_id, tenant=tenant, **options)
    where = f", next step {after.next_step}" if after.next_step else ""
    why = f" ({after.error.reason})" if after.error and not after.status.terminal else ""
    return f"run {run_id} {after.status}{why}{where}", after


def check_json(row: CheckRow) -> dict[str, JSON]:
    """One row of ``perdure check`` as JSON."""
    return {
        "tenant_id": row.tenant_id,
        "run_id": row.run_id,
        "workflow": row.workflow,
        "status": row.status,
        "written_with": row.written_with,
        "verdict": row.verdict,
        "reason": row.reason,
        "note": row.note,
    }


def check_table(rows: list[CheckRow]) -> str:
    """What ``perdure check`` prints."""
    if not rows:
        return "no live runs"
    table = [("VERDICT", "REASON", "RUN", "TENANT", "WORKFLOW", "STATUS", "WRITTEN WITH", "NOTE")]
    table += [
        (
            r.verdict,
            r.reason or "-",
            r.run_id,
            r.tenant_id,
            r.workflow,
            r.status,
            r.written_with,
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    return "\n".join(
        "  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]])
        for row in table
    )


def worker_json(w: WorkerInfo, now: datetime) -> dict[str, JSON]:
    """A worker as JSON, with how long ago it last beat."""
    return {
        "owner": w.owner,
        "host": w.host,
        "pid": w.pid,
        "concurrency": w.concurrency,
        "runs_held": w.runs_held,
        "started_at": iso(w.started_at),
        "last_beat": iso(w.last_beat),
        "seconds_since_beat": round((now - w.last_beat).total_seconds(), 1),
        "stopped_at": iso(w.stopped_at),
        "state": str(w.state),
    }


def workers_table(found: list[WorkerInfo], now: datetime) -> str:
    """What ``perdure workers`` prints."""
    if not found:
        return "no workers"
    rows = [("OWNER", "HOST", "PID", "RUNS", "SLOTS", "LAST BEAT", "STATE")]
    for w in found:
        ago = (now - w.last_beat).total_seconds()
        state = str(w.state)
        rows.append(
            (
                w.owner,
                w.host,
                str(w.pid),
                str(w.runs_held),
                str(w.concurrency),
                f"{ago:.0f}s ago",
                state,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(n) for c, n in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def dumps(value: Any) -> str:
    """Indented JSON text."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def next_step_note(next_step: str | None) -> str:
    """`` (next step NAME)`` after a run's status, or nothing when it has none (finished)."""
    return f" (next step {next_step})" if next_step else ""
