"""The ten fault drills, run against your own workflow: ``perdure drills MODULE:WORKFLOW``.

Each drill starts the workflow in a fresh folder, SQLite database and test clock (the rows of
:func:`perdure.testing.run_matrix`), injects one fault through real processes, resumes the run
in new processes until it ends or needs a person, and compares it with an uninterrupted
reference run: the final status and result, and how many calls each effect made. A drill
*held* when no effect was called more often than in the reference and the run either reached
the reference outcome or stopped for a person with a typed reason (never lost, never done
twice). The drills:

1. **model call times out**: the first step raises ``TimeoutError`` once
   (``PERDURE_FAULT_AT=timeout:STEP``); its retry policy, or a person, takes it from there.
2. **crash after a tool succeeded, before the write**: the process dies right after the first
   effect's call returned, before its outcome is recorded (crash point ``after_call``).
3. **duplicate delivery**: the run is started twice with the same idempotency key, and two
   workers race for it.
4. **late message to a finished run**: a signal and a cancel arrive after the run ended.
5. **approval after hours**: the approval comes six hours (of the test clock) later; needs
   ``--approve-as ROLE`` (which also lets every other drill pass approval waits).
6. **cancel mid-step**: the last step is held open while ``perdure cancel`` is sent; the run
   must end CANCELLED at that step boundary, its confirmed effects compensated.
7. **unknown external status**: the first effect's call goes through but its reply is lost
   (``PERDURE_FAULT_AT=unknown:EFFECT``): reconciled, or handed to a person, never resent.
8. **database briefly unavailable**: SQLite's write lock is held by another connection for two
   seconds while the first step runs and commits; the writes wait and go on. Given a PostgreSQL
   database (``pg``, one you can throw away), this drill's run lives there instead, and every
   perdure connection to it is ended again and again for two seconds (what a restart or a
   failover does to them) while the step runs (:mod:`perdure.drills.outage`).
9. **artifact corrupted or lost**: killed after the first step that stored an artifact, the
   run's objects are corrupted (one row) or deleted (another), then it resumes
   (:mod:`perdure.drills.artifacts`).
10. **budget exhausted**: the run is started with a step budget of half the reference's steps.

:class:`~perdure.drills.base.Drills` holds the reference run, the judging and the drills that
need no module of their own; :data:`DRILLS` lists them all.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from perdure.core.errors import ConfigError
from perdure.core.model import JSON
from perdure.drills.artifacts import artifact_damaged
from perdure.drills.base import Drill, DrillResult, Drills
from perdure.drills.outage import database_unavailable

__all__ = ["DRILLS", "Drill", "DrillResult", "Drills", "format_drills", "run_drills"]

DRILLS: Sequence[Drill] = (
    ("timeout", "model call times out", Drills.model_timeout),
    ("crash", "crash after a tool succeeded, before the write", Drills.crash_after_tool),
    ("duplicate", "duplicate delivery", Drills.duplicate_delivery),
    ("late", "late message to a finished run", Drills.late_message),
    ("approval", "approval after hours", Drills.approval_after_hours),
    ("cancel", "cancel mid-step", Drills.cancel_mid_step),
    ("unknown", "unknown external status", Drills.unknown_status),
    ("database", "database briefly unavailable", database_unavailable),
    ("artifact", "artifact corrupted or lost", artifact_damaged),
    ("budget", "budget exhausted", Drills.budget_exhausted),
)
"""The drills (short name, title, body) in the order of seed 002's list."""


def run_drills(
    app: str,
    workflow: str,
    input: JSON = None,
    *,
    approve_as: str | None = None,
    workdir: Path | None = None,
    only: Sequence[str] = (),
    pg: str | None = None,
) -> list[DrillResult]:
    """Run every drill (or those named in ``only``: ``timeout``, ``crash``, ``duplicate``,
    ``late``, ``approval``, ``cancel``, ``unknown``, ``database``, ``artifact``, ``budget``)
    against ``workflow`` of module ``app`` (see the module docstring); ``workdir`` keeps the
    folders (default: a temporary folder, removed after). ``pg``: a PostgreSQL database the
    database drill may disrupt (default: SQLite's write lock)."""
    unknown = sorted(set(only) - {short for short, _, _ in DRILLS})
    if unknown:
        raise ConfigError(
            f"no drill is named {', '.join(unknown)}",
            fix=f"pick from {', '.join(short for short, _, _ in DRILLS)}",
        )
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="perdure-drills-") as tmp:
            return run_drills(
                app, workflow, input, approve_as=approve_as, workdir=Path(tmp), only=only, pg=pg
            )
    drills = Drills(app, workflow, input, workdir=workdir, approve_as=approve_as, pg=pg)
    return drills.run(DRILLS, only)


def format_drills(results: Sequence[DrillResult]) -> str:
    """The drills as a text table: drill, what happened, held."""
    rows = [("DRILL", "WHAT HAPPENED", "HELD")] + [
        (r.drill, r.happened, r.verdict) for r in results
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    return "\n".join(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}" for r in rows)
