"""The fault drills, run against your own workflow: ``perdure drills MODULE:WORKFLOW``.

Each drill starts the workflow in a fresh folder, SQLite database and test clock (the rows of
:func:`perdure.testing.run_matrix`), injects one fault through real processes, resumes the run
in new processes until it ends or needs a person, and compares it with an uninterrupted
reference run: the final status and result (with the ids providers hand out fresh on every
call put aside: :mod:`perdure.drills.receipts`), and how many calls each effect made, which
every row prints beside the reference's. A drill *held* when no effect was called more often
than in the reference and the run either reached the reference outcome or stopped for a person
with a typed reason (never lost, never done twice).

The first three are **effect drills**: they run once for each effect the reference run made
(model calls, side-effecting tools ``tool.<call id>``, ``ctx.effect`` calls), or for each one
that ``effects`` (``--effect PATTERN``) names, and each row names its effect by step and name
(``act/tool.call_1``; ``think#3/model.1`` when the step runs more than once:
:mod:`perdure.drills.effects`):

1. **call times out**: the effect's call raises ``TimeoutError`` before anything is sent
   (``PERDURE_FAULT_AT=timeout:EFFECT@STEP#SEQ``); a retry policy sends it again, or a person
   is asked, and then the row says which policy would have kept the run going. A run that makes
   no effect has its first step time out instead (``timeout:STEP``).
2. **crash after a call succeeded, before the write**: the process dies right after the
   effect's call returned, before its outcome is recorded (crash point
   ``after_call:EFFECT@STEP#SEQ``).
3. **unknown external status**: the effect's call goes through but its reply is lost
   (``PERDURE_FAULT_AT=unknown:EFFECT@STEP#SEQ``): reconciled, or handed to a person, never
   resent (a model call, which changes nothing, may be made again).

The others drill the whole run:

4. **duplicate delivery**: the run is started twice with the same idempotency key, and two
   workers race for it.
5. **late message to a finished run**: a signal and a cancel arrive after the run ended.
6. **approval after hours**: the approval comes six hours (of the test clock) later; needs
   ``--approve-as ROLE`` (which also lets every other drill pass approval waits).
7. **cancel mid-step**: the last step is held open while ``perdure cancel`` is sent; the run
   must end CANCELLED at that step boundary, its confirmed effects compensated.
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
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path

import orjson

from perdure.core.errors import ConfigError
from perdure.core.model import JSON
from perdure.drills.artifacts import artifact_damaged
from perdure.drills.base import Drills, EffectDrill, Outcome, RunDrill
from perdure.drills.effects import DrilledEffect
from perdure.drills.outage import database_unavailable
from perdure.drills.result import DrillResult

__all__ = [
    "DRILLS",
    "DrillResult",
    "DrilledEffect",
    "Drills",
    "format_drills",
    "format_drills_json",
    "run_drills",
]

DRILLS: Sequence[tuple[str, str]] = (
    ("timeout", "call times out"),
    ("crash", "crash after a call succeeded, before the write"),
    ("unknown", "unknown external status"),
    ("duplicate", "duplicate delivery"),
    ("late", "late message to a finished run"),
    ("approval", "approval after hours"),
    ("cancel", "cancel mid-step"),
    ("database", "database briefly unavailable"),
    ("artifact", "artifact corrupted or lost"),
    ("budget", "budget exhausted"),
)
"""The drills (short name, title) in the order of seed 002's list."""

EFFECT_DRILLS: Mapping[str, EffectDrill] = {
    "timeout": Drills.call_times_out,
    "crash": Drills.crash_after_call,
    "unknown": Drills.unknown_status,
}
"""The drills run once per effect of the reference run."""

RUN_DRILLS: Mapping[str, RunDrill] = {
    "duplicate": Drills.duplicate_delivery,
    "late": Drills.late_message,
    "approval": Drills.approval_after_hours,
    "cancel": Drills.cancel_mid_step,
    "database": database_unavailable,
    "artifact": artifact_damaged,
    "budget": Drills.budget_exhausted,
}
"""The drills run once for the whole run."""


def run_drills(
    app: str,
    workflow: str,
    input: JSON = None,
    *,
    approve_as: str | None = None,
    workdir: Path | None = None,
    only: Sequence[str] = (),
    pg: str | None = None,
    effects: Sequence[str] = (),
) -> list[DrillResult]:
    """Run every drill (or those named in ``only``: ``timeout``, ``crash``, ``unknown``,
    ``duplicate``, ``late``, ``approval``, ``cancel``, ``database``, ``artifact``, ``budget``)
    against ``workflow`` of module ``app`` (see the module docstring); the effect drills run
    once per effect of the reference run, or per effect one of the fnmatch patterns
    ``effects`` names (``act/tool.*``). ``workdir`` keeps the folders (default: a temporary
    folder, removed after). ``pg``: a PostgreSQL database the database drill may disrupt
    (default: SQLite's write lock)."""
    unknown = sorted(set(only) - {short for short, _ in DRILLS})
    if unknown:
        raise ConfigError(
            f"no drill is named {', '.join(unknown)}",
            fix=f"pick from {', '.join(short for short, _ in DRILLS)}",
        )
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="perdure-drills-") as tmp:
            return run_drills(
                app,
                workflow,
                input,
                approve_as=approve_as,
                workdir=Path(tmp),
                only=only,
                pg=pg,
                effects=effects,
            )
    drills = Drills(
        app, workflow, input, workdir=workdir, approve_as=approve_as, pg=pg, effects=effects
    )
    drills.reference()
    results = []
    for short, title in DRILLS:
        if only and short not in only:
            continue
        if short in RUN_DRILLS:
            body = RUN_DRILLS[short]
            results.append(_attempt(short, title, None, partial(body, drills)))
        elif not drills.effects:
            results.append(_attempt(short, title, None, partial(drills.no_effect, short)))
        else:
            each = EFFECT_DRILLS[short]
            for effect in drills.effects:
                results.append(_attempt(short, title, effect.label, partial(each, drills, effect)))
    return results


def _attempt(
    short: str, title: str, effect: str | None, body: Callable[[], Outcome]
) -> DrillResult:
    """Run one drill; one that cannot run says why (held: no)."""
    try:
        return DrillResult(short, title, effect, *body())
    except Exception as exc:
        what = f"could not run: {type(exc).__name__}: {exc}"
        return DrillResult(short, title, effect, what, False)


def format_drills(results: Sequence[DrillResult]) -> str:
    """The drills as a text table: drill, effect, held, what happened."""
    rows = [("DRILL", "EFFECT", "HELD", "WHAT HAPPENED")] + [
        (r.drill, r.effect or "-", r.verdict, r.happened) for r in results
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(
        "  ".join([*(r[i].ljust(widths[i]) for i in range(3)), r[3]]).rstrip() for r in rows
    )


def format_drills_json(results: Sequence[DrillResult]) -> str:
    """The drills as JSON lines: one object per row (``drill``, ``title``, ``effect``,
    ``held``, ``what_happened``)."""
    return "\n".join(orjson.dumps(r.to_json()).decode() for r in results)
