"""What every drill runs on: :class:`Drills`, one workflow's reference run and the effects it
made, the folders (rows of :func:`perdure.testing.run_matrix`) the drills start from, how a
drill is judged against the reference, and the drills that need nothing more. The database
drill (:mod:`perdure.drills.outage`) and the artifact drill (:mod:`perdure.drills.artifacts`)
are written beside it, as functions of a :class:`Drills`; :mod:`perdure.drills` lists them all
and runs them."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import orjson

from perdure.core.budget import Budget
from perdure.core.chat import MODEL_TARGET
from perdure.core.model import JSON
from perdure.core.workflow import Workflow
from perdure.drills.effects import DrilledEffect, chosen, labelled
from perdure.drills.receipts import normalised, provider_values
from perdure.runtime.runtime import Runtime
from perdure.testing import _Observed, _Row

HOURS_LATER = 6
"""How late (test-clock hours) the approval-after-hours drill approves."""

TOOL_TARGET = "tool"
"""The effect target of a side-effecting tool run by ``run_tools``."""

Outcome = tuple[str, bool | None]
"""What a drill reports: what happened, and whether it held (None: it does not apply)."""


class Drills:
    """The drills of one workflow: :meth:`reference` runs it once uninterrupted; each drill
    then runs in its own folder. ``effects``: fnmatch patterns of the effects the effect drills
    aim at (default: every effect the reference made; see :mod:`perdure.drills.effects`)."""

    def __init__(
        self,
        app: str,
        workflow: str,
        input: JSON = None,
        *,
        workdir: Path,
        approve_as: str | None = None,
        durability: str = "sync",
        pg: str | None = None,
        effects: Sequence[str] = (),
    ) -> None:
        self.app, self.workflow, self.durability, self.pg = app, workflow, durability, pg
        self.input = input if input is not None else {}
        self.input_json = orjson.dumps(self.input).decode()
        self.workdir, self.approve_as = workdir, approve_as
        self.patterns = tuple(effects)
        self.effects: list[DrilledEffect] = []
        """The effects the effect drills aim at, in the order the reference made them."""

    def row(self, name: str, *, start: bool = True) -> _Row:
        folder = self.workdir / name
        return _Row(folder, self.app, self.workflow, self.input_json, self.durability, start=start)

    def reference(self) -> None:
        """Run the reference to its end (or to a person), and list the effects it made that
        the patterns name (a pattern that names none is a ``ConfigError``)."""
        ref_row = self.row("reference")
        ref_row.resume()
        self.ref_row = ref_row
        self.ref, self.ref_seen = ref_row.settle(self.approve_as)
        with Runtime(ref_row.db, migrate=False, clock=ref_row.clock) as rt:
            records = rt.effects.list(run_id=ref_row.run_id)
        self.effects = chosen(labelled(records, self.ref.steps), self.patterns)
        self.ref_result = normalised(self.ref.result, provider_values(records), self.ref.run_id)
        """The reference's result with its provider ids put aside (:mod:`.receipts`)."""

    # -- judging -------------------------------------------------------------------------------

    def duplicated(self, seen: _Observed, allow: Mapping[str, int] | None = None) -> list[str]:
        """Effects called more often than in the reference (a compensation: than its effect);
        ``allow``: extra calls a drill expects of an effect (a call that timed out counts)."""
        over = []
        for name, n in seen.calls.items():
            limit = seen.calls.get(name.removesuffix(".compensate"), 0)
            if not name.endswith(".compensate"):
                limit = self.ref.calls.get(name, 0) + (allow or {}).get(name, 0)
            if n > limit:
                over.append(f"{name} {n}x")
        return over

    def result_of(self, row: _Row, seen: _Observed) -> JSON:
        """The drill run's result with its provider ids put aside, as the reference's is."""
        with Runtime(row.db, migrate=False, clock=row.clock) as rt:
            records = rt.effects.list(run_id=seen.run_id)
        return normalised(seen.result, provider_values(records), seen.run_id)

    def matches(self, row: _Row, seen: _Observed) -> bool:
        """The reference's status and result (provider ids put aside)."""
        if seen.status != self.ref.status:
            return False
        if seen.result == self.ref.result:
            return True
        return bool(self.result_of(row, seen) == self.ref_result)

    def judge(
        self, row: _Row, seen: _Observed, what: str, allow: Mapping[str, int] | None = None
    ) -> tuple[str, bool]:
        """Held: nothing duplicated, and the reference outcome (its provider ids aside) or a
        person asked. Every row ends with the effects' call counts beside the reference's."""
        counted = self.calls(seen)
        over = self.duplicated(seen, allow)
        if over:
            return f"{what}; DUPLICATED: {', '.join(over)} ({counted})", False
        if self.matches(row, seen):
            aside = "" if seen.result == self.ref.result else ", provider ids aside"
            return f"{what}; ended {seen.status} as the reference{aside} ({counted})", True
        if seen.status == "NEEDS_ATTENTION":
            return f"{what}; handed to a person: {seen.error} ({counted})", True
        if seen.status == self.ref.status:
            got, ref = short(seen.result), short(self.ref.result)
            return (
                f"{what}; ended {seen.status} with {got}, the reference with {ref} ({counted})",
                False,
            )
        ended = f"ended {seen.status} ({seen.error}), not as the reference"
        return f"{what}; {ended} ({counted})", False

    def judge_timeout(
        self, row: _Row, seen: _Observed, what: str, effect: DrilledEffect | None = None
    ) -> Outcome:
        """:meth:`judge` for a call (or a step) that timed out: the call that timed out counts;
        a run that went to a person says which policy would have kept it going."""
        allow = {effect.name: 1} if effect is not None else None
        if seen.status != "NEEDS_ATTENTION" or self.duplicated(seen, allow):
            return self.judge(row, seen, what, allow)
        why = absorbed(seen.error, effect)
        counted = self.calls(seen)
        return f"{what}; needs a person: timeout ({seen.error}); {why} ({counted})", True

    def calls(self, seen: _Observed) -> str:
        """Each effect's calls in the drill, with the reference's where they differ:
        ``charge 2x (reference 1x)`` tells a provider paid twice from another receipt id."""
        names = sorted(set(seen.calls) | set(self.ref.calls))
        parts = []
        for name in names:
            n, ref = seen.calls.get(name, 0), self.ref.calls.get(name, 0)
            parts.append(f"{name} {n}x" + ("" if n == ref else f" (reference {ref}x)"))
        return "calls: " + (", ".join(parts) or "no effect calls")

    # -- the effect drills: one row per effect ---------------------------------------------------

    def call_times_out(self, effect: DrilledEffect) -> Outcome:
        """The effect's call raises ``TimeoutError`` before anything is sent."""
        row = self.row(f"timeout-{effect.slug}")
        if not self.inject(row, fault={"PERDURE_FAULT_AT": f"timeout:{effect.point}"}):
            return self.not_reached(effect), None
        seen, _ = row.settle(self.approve_as)
        return self.judge_timeout(row, seen, f"{effect.label} timed out before it was sent", effect)

    def crash_after_call(self, effect: DrilledEffect) -> Outcome:
        """The process dies right after the effect's call returned, before its outcome."""
        row = self.row(f"crash-{effect.slug}")
        if not self.inject(row, crash=f"after_call:{effect.point}"):
            return self.not_reached(effect), None
        at = row.observe().next_step
        seen, _ = row.settle(self.approve_as)
        return self.judge(
            row, seen, f"killed after {effect.label} returned, before its outcome; resumed at {at}"
        )

    def unknown_status(self, effect: DrilledEffect) -> Outcome:
        """The effect's call goes through, its reply is lost: reconciled or a person; a model
        call may be made again (it changes nothing)."""
        row = self.row(f"unknown-{effect.slug}")
        if not self.inject(row, fault={"PERDURE_FAULT_AT": f"unknown:{effect.point}"}):
            return self.not_reached(effect), None
        seen, _ = row.settle(self.approve_as)
        model = effect.target == MODEL_TARGET
        what, held = self.judge(
            row,
            seen,
            f"{effect.label} was applied but its reply was lost",
            {effect.name: 1} if model else None,
        )
        if model and held and seen.status == "NEEDS_ATTENTION":
            what += (
                "; a model call changes nothing: a retry= policy on it that retries this kind "
                "of failure would have made it again"
            )
        return what, held

    def no_effect(self, short: str) -> Outcome:
        """An effect drill on a run that makes no effect: the timeout drill times the first
        step out instead; the others do not apply."""
        if short != "timeout":
            return "not applicable: the run makes no effect", None
        first = self.ref.steps[0] if self.ref.steps else None
        if first is None:
            return "not applicable: the run completes no step", None
        row = self.row("step-timeout")
        if not self.inject(row, fault={"PERDURE_FAULT_AT": f"timeout:{first}"}):
            return f"not run: the run never reached step {first}", None
        seen, _ = row.settle(self.approve_as)
        return self.judge_timeout(row, seen, f"step {first} raised TimeoutError once")

    def not_reached(self, effect: DrilledEffect) -> str:
        hint = " (pass --approve-as ROLE?)" if self.approve_as is None else ""
        return f"not run: the run never called {effect.label}{hint}"

    # -- the drills of the whole run -----------------------------------------------------------

    def duplicate_delivery(self) -> Outcome:
        row = self.row("duplicate-delivery", start=False)
        key = ("--idempotency-key", "drill-duplicate")
        ids = {row.start(self.workflow, self.input_json, self.durability, *key) for _ in range(2)}
        row.run_id = sorted(ids)[0]
        workers = [row.popen("worker", "--app", self.app, "--until-idle") for _ in range(2)]
        for w in workers:
            w.wait(timeout=120)
        seen, _ = row.settle(self.approve_as)
        text, held = self.judge(
            row, seen, f"started twice with one key: {len(ids)} run; two workers raced"
        )
        return text, held and len(ids) == 1

    def late_message(self) -> Outcome:
        if self.ref.status not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            return f"not applicable: the run does not finish (it ends {self.ref.status})", None
        row = self.ref_row
        signal = row.cli("signal", row.run_id, "drill-late", "--payload", '{"late": true}')
        cancel = row.cli("cancel", row.run_id)
        after = row.observe()
        same = (after.status, after.result, after.calls) == (
            self.ref.status,
            self.ref.result,
            self.ref.calls,
        )
        what = f"signal: {said(signal, row.run_id)}; cancel: {said(cancel, row.run_id)}"
        if same:
            what += f"; the run stayed {after.status}, result unchanged"
        return f"{what} ({self.calls(after)})", same

    def approval_after_hours(self) -> Outcome:
        if "WAITING_APPROVAL" not in self.ref_seen:
            return "not applicable: the run never waits for an approval", None
        if self.approve_as is None:
            return "not run: the run waits for an approval; pass --approve-as ROLE", None
        row = self.row("approval-after-hours")
        row.resume()
        if row.observe().status == "WAITING_APPROVAL":
            row.clock.advance(HOURS_LATER * 3600)
        seen, _ = row.settle(self.approve_as)
        return self.judge(row, seen, f"approved as {self.approve_as} {HOURS_LATER} h later")

    def cancel_mid_step(self) -> Outcome:
        if not self.ref.steps:
            return "not applicable: the run completes no step", None
        step = self.ref.steps[-1]
        row = self.row("cancel-mid-step")
        with self.held_at(row, step) as proc:
            if proc is None:
                return f"could not hold step {step} open (the run is {row.observe().status})", False
            said = first_line(row.cli("cancel", row.run_id, "--reason", "drill").stdout)
        proc.wait(timeout=120)
        seen, _ = row.settle(self.approve_as)
        undone = sum(n for name, n in seen.calls.items() if name.endswith(".compensate"))
        what = f"cancel sent while step {step} ran ({said}); {undone} compensation call(s)"
        over = self.duplicated(seen)
        if over:
            return f"{what}; DUPLICATED: {', '.join(over)} ({self.calls(seen)})", False
        return f"{what}; ended {seen.status} ({self.calls(seen)})", seen.status == "CANCELLED"

    def budget_exhausted(self) -> Outcome:
        limit = len(self.ref.steps) // 2
        row = self.row("budget-exhausted", start=False)
        wf = self.load()
        with Runtime(row.db, workflows=[wf], clock=row.clock) as rt:
            budget = Budget(steps=limit, on_exhausted="needs_attention")
            row.run_id = rt.start(wf, self.input, durability=self.durability, budget=budget).run_id
        row.resume()
        seen, _ = row.settle(self.approve_as)
        what = f"a budget of {limit} step(s): stopped after {len(seen.steps)}, {seen.status}"
        over = self.duplicated(seen)
        if over:
            return f"{what}; DUPLICATED: {', '.join(over)} ({self.calls(seen)})", False
        stopped = seen.status == "NEEDS_ATTENTION" and seen.error == "budget_exhausted"
        return f"{what} ({seen.error}; {self.calls(seen)})", stopped and len(seen.steps) <= limit

    # -- helpers -------------------------------------------------------------------------------

    def inject(
        self, row: _Row, *, crash: str | None = None, fault: dict[str, str] | None = None
    ) -> bool:
        return row.resume_until(crash=crash, fault=fault, approve_as=self.approve_as)

    @contextlib.contextmanager
    def held_at(self, row: _Row, step: str) -> Iterator[subprocess.Popen[str] | None]:
        """Resume the run in a process that waits at the start of ``step`` until the block
        ends (approving approval waits on the way); yields that process, or None when the run
        never reached the step. The caller waits for the process after the block."""
        gate = row.folder / "gate"
        held = open(gate, "a")  # noqa: SIM115 - held until the step may go on
        fcntl.flock(held, fcntl.LOCK_EX)
        reached = row.folder / "hold.mark"
        fault = {
            "PERDURE_FAULT_AT": f"hold:{step}",
            "PERDURE_FAULT_GATE": str(gate),
            "PERDURE_FAULT_MARK": str(reached),
        }
        proc = None
        try:
            for _ in range(5):
                proc = row.popen("resume", row.run_id, "--app", self.app, fault=fault)
                while proc.poll() is None and not reached.exists():
                    time.sleep(0.02)  # bounded by the process: it reaches the gate or exits
                if reached.exists() or self.approve_as is None:
                    break
                if row.observe().status != "WAITING_APPROVAL":
                    break
                row.approve(self.approve_as)
            yield proc if reached.exists() else None
        finally:
            held.close()

    def load(self) -> Workflow[object]:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(self.app)
        for value in vars(module).values():
            if isinstance(value, Workflow) and value.name == self.workflow:
                return value
        raise LookupError(f"module {self.app} defines no workflow {self.workflow!r}")


RunDrill = Callable[[Drills], Outcome]
"""A drill of the whole run: what happened, and whether it held."""
EffectDrill = Callable[[Drills, DrilledEffect], Outcome]
"""A drill of one effect of the run: what happened, and whether it held."""


def absorbed(reason: str | None, effect: DrilledEffect | None) -> str:
    """What would have kept a run going that went to a person (for ``reason``) after a call of
    ``effect`` (None: its step) timed out."""
    if effect is None:
        return "a retry= policy on the step would have retried it"
    where = {TOOL_TARGET: "the tool", MODEL_TARGET: "the model call"}.get(
        effect.target, "the effect"
    )
    if reason == "ambiguous_effect":
        return (
            f"a reconcile= on {where} would have found it was never sent, "
            "and a retry= policy would have sent it again"
        )
    return f"a retry= policy on {where} would have retried it"


def short(value: JSON) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def first_line(text: str) -> str:
    return (text.strip().splitlines() or ["-"])[0]


def said(out: subprocess.CompletedProcess[str], run_id: str) -> str:
    """What a command answered, short: ``refused (code)`` for an error line."""
    line = first_line(out.stderr if out.returncode else out.stdout)
    if line.startswith("error[") and "]" in line:
        return f"refused ({line[6 : line.index(']')]})"
    return line.replace(f"run {run_id} ", "")
