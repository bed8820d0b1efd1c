"""Helpers for testing workflows: fake clocks, crash points, and the crash-matrix harness.

:class:`FakeClock` is a fake time inside one process. :class:`FileClock` is a fake time shared by
every process that has ``PERDURE_TEST_CLOCK`` naming its file (the CLI, workers a test starts):
the test moves it with ``advance`` instead of sleeping until a timer, retry or lease is due
(see :mod:`perdure.runtime.clock`).

The crash matrix runs a workflow once without interruption (the reference), then once per crash
point (both sides of every step commit, and the four points around every effect), each time in
a fresh folder and database: a new process runs until it dies at that point (``os._exit(75)``),
then fresh processes resume it until it ends (each row has its own :class:`FileClock`, moved
on to any retry or timer the run waits for; ``approve_as`` approves approval waits as that
role). Each row tells where the run resumed, how many
calls each effect made, the final status and whether it matches the reference. A row with more
calls than the reference for any effect is a duplicated side effect.

From the command line: ``perdure chaos MODULE:WORKFLOW --input JSON [--approve-as ROLE]``. The
fault drills (:mod:`perdure.drills`, ``perdure drills``) use the same rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from perdure.core.clock import FakeClock
from perdure.core.model import JSON, RunStatus
from perdure.runtime.clock import FileClock
from perdure.runtime.crashpoints import COMMIT_POINTS, EFFECT_POINTS, EXIT_CODE, arm
from perdure.runtime.runtime import Runtime

__all__ = [
    "FakeClock",
    "FileClock",
    "MatrixRow",
    "arm",
    "crash_points",
    "format_matrix",
    "migrate_fixture",
    "run_matrix",
]


@dataclass(frozen=True, slots=True)
class MatrixRow:
    """One line of the crash matrix."""

    point: str
    reached: bool
    resumed_at: str | None
    calls: dict[str, int]
    status: str
    result: JSON
    matches: bool
    duplicate: bool
    processes: int = 1

    @property
    def ok(self) -> bool:
        """No duplicated effect, and the reference outcome or a hand-off to a person."""
        return not self.duplicate and (self.matches or self.status == "NEEDS_ATTENTION")


@dataclass(frozen=True, slots=True)
class _Observed:
    run_id: str
    status: str
    result: JSON
    next_step: str | None
    calls: dict[str, int]
    steps: list[str]
    wake_at: datetime | None = None
    error: str | None = None


class _Row:
    """One isolated folder, database, clock and set of processes (``start=False``: the
    caller creates the run and sets ``run_id``)."""

    def __init__(
        self,
        folder: Path,
        app: str,
        workflow: str,
        input_json: str,
        mode: str,
        *,
        start: bool = True,
        extra: Sequence[str] = (),
        db: str | None = None,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.db = db or f"sqlite:///{folder / 'perdure.db'}"
        self.app = app
        self.clock = FileClock.create(folder / "clock")
        skip = ("PERDURE_CRASH_AT", "PERDURE_FAULT_AT", "PERDURE_FAULT_GATE")
        self.env = {k: v for k, v in os.environ.items() if k not in skip}
        self.env.update(self.clock.env)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p
        )
        self.run_id = ""
        self.processes = 0
        if start:
            self.run_id = self.start(workflow, input_json, mode, *extra)

    def start(self, workflow: str, input_json: str, mode: str, *extra: str) -> str:
        out = self._cli(
            "start",
            workflow,
            "--app",
            self.app,
            "--input",
            input_json,
            "--durability",
            mode,
            *extra,
        )
        if out.returncode != 0:
            raise RuntimeError(f"could not start the workflow: {out.stderr.strip()}")
        return out.stdout.split()[1]

    def _cli(
        self, *args: str, crash: str | None = None, fault: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**self.env, **(fault or {})}
        if crash:
            env["PERDURE_CRASH_AT"] = crash
        return subprocess.run(
            [sys.executable, "-m", "perdure", "--db", self.db, *args],
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``perdure --db ROW_DB ARGS`` in this row's folder and environment."""
        return self._cli(*args)

    def popen(self, *args: str, fault: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """Start ``perdure --db ROW_DB ARGS`` without waiting for it (output discarded)."""
        self.processes += 1
        return subprocess.Popen(
            [sys.executable, "-m", "perdure", "--db", self.db, *args],
            cwd=self.folder,
            env={**self.env, **(fault or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def resume(self, crash: str | None = None, fault: dict[str, str] | None = None) -> int:
        self.processes += 1
        out = self._cli("resume", self.run_id, "--app", self.app, crash=crash, fault=fault)
        return out.returncode

    def observe(self) -> _Observed:
        with Runtime(self.db, migrate=False, clock=self.clock) as rt:
            run = rt.get(self.run_id)
            calls: dict[str, int] = {}
            for e in rt.effects(run_id=self.run_id):
                calls[e.name] = calls.get(e.name, 0) + e.attempts
            steps = rt.status(self.run_id, events=0).completed_steps
        error = run.error.reason if run.error is not None else None
        return _Observed(
            run.run_id, str(run.status), run.result, run.next_step, calls, steps, run.wake_at, error
        )

    def settle(self, approve_as: str | None, max_resumes: int = 5) -> tuple[_Observed, set[str]]:
        """Resume the run until it ends or needs a person: approval waits are approved as
        ``approve_as`` (left waiting without it), the clock is moved on to a retry or timer it
        sleeps for. Returns the run and every status seen on the way."""
        seen: set[str] = set()
        current = self.observe()
        for _ in range(max_resumes + 1):
            seen.add(current.status)
            if _settled(current.status):
                break
            if current.status == "WAITING_APPROVAL":
                if approve_as is None:
                    break
                self.approve(approve_as)
            elif current.wake_at is not None and current.wake_at > self.clock.now():
                self.clock.advance((current.wake_at - self.clock.now()).total_seconds() + 1)
            elif current.status == "WAITING_EXTERNAL":
                break  # a signal nobody here can send
            self.resume()
            current = self.observe()
        return current, seen

    def resume_until(
        self,
        *,
        crash: str | None = None,
        fault: dict[str, str] | None = None,
        approve_as: str | None = None,
    ) -> bool:
        """Resume with a crash point or a fault armed until it fires, approving approval waits
        on the way (as ``approve_as``); True when it fired."""
        mark = self.folder / f"fault-{self.processes}.mark"
        armed = {**fault, "PERDURE_FAULT_MARK": str(mark)} if fault else None
        for _ in range(5):
            code = self.resume(crash=crash, fault=armed)
            if (crash and code == EXIT_CODE) or mark.exists():
                return True
            if approve_as is None or self.observe().status != "WAITING_APPROVAL":
                return False
            self.approve(approve_as)
        return False

    def approve(self, role: str) -> None:
        self._cli("approve", self.run_id, "--as", "perdure-drills", "--role", role)


def _settled(status: str) -> bool:
    return status in {*(str(s) for s in RunStatus if s.terminal), "NEEDS_ATTENTION", "QUARANTINED"}


def crash_points(steps: Sequence[str], effects: Sequence[str]) -> list[str]:
    """Every crash point a run through these steps and effects passes."""
    points = [f"{p}:{e}" for e in dict.fromkeys(effects) for p in EFFECT_POINTS]
    points += [f"{p}:{s}" for s in dict.fromkeys(steps) for p in COMMIT_POINTS]
    return points


def run_matrix(
    app: str,
    workflow: str,
    input: JSON = None,
    *,
    durability: str = "sync",
    workdir: Path | None = None,
    max_resumes: int = 5,
    approve_as: str | None = None,
    only: Sequence[str] = (),
) -> list[MatrixRow]:
    """Run the crash matrix for ``workflow`` defined in module ``app``; the first row is the
    reference. ``workdir`` keeps the folders (default: a temporary folder, removed after).
    ``approve_as`` approves the run's approval waits as that role, so they can be passed;
    ``only`` runs just those crash points (e.g. ``after_call:refund``)."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="perdure-chaos-") as tmp:
            return run_matrix(
                app,
                workflow,
                input,
                durability=durability,
                workdir=Path(tmp),
                max_resumes=max_resumes,
                approve_as=approve_as,
                only=only,
            )
    input_json = orjson.dumps(input if input is not None else {}).decode()
    ref_row = _Row(workdir / "reference", app, workflow, input_json, durability)
    ref_row.resume()
    ref, _ = ref_row.settle(approve_as, max_resumes)
    rows = [MatrixRow("reference", False, None, ref.calls, ref.status, ref.result, True, False)]
    compensations = [n for n in ref.calls if n.endswith(".compensate")]
    effects = [n for n in ref.calls if n not in compensations]
    points = crash_points(ref.steps, [*effects, *compensations])
    for i, point in enumerate(p for p in points if not only or p in only):
        row = _Row(workdir / f"row-{i:03d}", app, workflow, input_json, durability)
        reached = row.resume_until(crash=point, approve_as=approve_as)
        after_crash = row.observe()
        current, _ = row.settle(approve_as, max_resumes)
        processes = row.processes
        duplicate = any(n > ref.calls.get(name, 0) for name, n in current.calls.items())
        rows.append(
            MatrixRow(
                point=point,
                reached=reached,
                resumed_at=after_crash.next_step if reached else None,
                calls=current.calls,
                status=current.status,
                result=current.result,
                matches=(current.status, current.result) == (ref.status, ref.result),
                duplicate=duplicate,
                processes=processes,
            )
        )
    return rows


def format_matrix(rows: Sequence[MatrixRow]) -> str:
    """The matrix as a text table."""
    header = ("POINT", "RESUMED AT", "CALLS PER EFFECT", "FINAL", "MATCHES", "VERDICT")
    lines = [header]
    for r in rows:
        calls = ", ".join(f"{k}={v}" for k, v in sorted(r.calls.items())) or "-"
        verdict = (
            "reference"
            if r.point == "reference"
            else (
                "DUPLICATE EFFECT"
                if r.duplicate
                else "ok"
                if r.matches
                else "ok (needs a person)"
                if r.status == "NEEDS_ATTENTION"
                else "DIFFERENT RESULT"
            )
        )
        resumed = r.resumed_at or ("-" if r.reached or r.point == "reference" else "not reached")
        lines.append((r.point, resumed, calls, r.status, "yes" if r.matches else "no", verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


def migrate_fixture(workflow: Any, data: dict[str, Any], from_schema: int) -> Any:
    """Bring a stored state you keep as a test fixture (a dict of fields, as written at
    ``from_schema``) up to the workflow's current schema, and decode it into its state type.

    Raises :class:`AssertionError` naming the problem, so a test of your migrations reads::

        state = migrate_fixture(refund_review, json.load(open("fixtures/v1.json")), 1)
        assert state.currency == "EUR"
    """
    from perdure.core.model import Release, Run, RunStatus
    from perdure.core.reading import inspect
    from perdure.core.serde import Limits, dumps
    from perdure.core.versions import Quarantine

    now = FakeClock().now()
    run = Run(
        run_id="fixture",
        tenant_id="fixture",
        thread_id="fixture",
        workflow=workflow.name,
        status=RunStatus.RUNNING,
        next_step=workflow.start,
        state_version=1,
        fence=1,
        owner=None,
        lease_until=None,
        release=Release(workflow.min_version, from_schema),
        idempotency_key=None,
        result=None,
        error=None,
        steps_done=0,
        created_at=now,
        updated_at=now,
        workflow_version=workflow.min_version,
        state_schema=from_schema,
    )
    found = inspect(
        run, {k: dumps(v) for k, v in data.items()}, workflow, keyring=None, limits=Limits()
    )
    if isinstance(found, Quarantine):
        raise AssertionError(
            f"fixture of schema {from_schema} would be quarantined: {found.reason}: {found.message}"
        )
    return found.state
