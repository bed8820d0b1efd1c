"""The Runtime's operations for old runs under new code: the pre-deploy check, runs that can
be read again after a rollback, repairing and failing runs that need a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perdure.core import transitions
from perdure.core.effects import EffectStatus
from perdure.core.errors import RunStateError
from perdure.core.graph import GRAPH_WORKFLOW
from perdure.core.ids import checked_text
from perdure.core.model import TERMINAL, Run, RunStatus
from perdure.core.reading import Attention, Readable, inspect
from perdure.core.records import RunError
from perdure.core.versions import Quarantine
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, acting, tenant_of
from perdure.runtime.admin.verbs import verb

if TYPE_CHECKING:
    from collections.abc import Iterable

    from perdure.core.budget import Budget
    from perdure.core.workflow import Workflow

LIVE = [s for s in RunStatus if s not in TERMINAL]


@dataclass(frozen=True, slots=True)
class CheckRow:
    """What the loaded code would do with one stored run: ``run`` (as it is), ``migrate``
    (upgrade first), ``quarantine`` (with the reason), or ``attention`` (an artifact its state
    points to cannot be read); ``note`` explains."""

    tenant_id: str
    run_id: str
    workflow: str
    status: str
    written_with: str
    verdict: str
    reason: str | None
    note: str


class Versions:
    """The Runtime's part for old runs under new code (``rt.versions``): ``check``,
    ``recover_readable``, ``fail``, ``repair``."""

    def __init__(self, parts: RuntimeParts) -> None:
        self.parts = parts
        self._recovered: set[tuple[str, int, int]] = set()

    @verb
    def recover_readable(self) -> list[tuple[str, str]]:
        """Put runs quarantined as ``schema_too_new`` that the loaded workflows can read back to
        RUNNING (after a rollback, when the newer release returns). Workers do this on start."""
        return self._recover(self.parts.workflows.values())

    def recover_new(self) -> list[tuple[str, str]]:
        """:meth:`recover_readable` for the workflows (name, version, schema) this runtime has
        not recovered yet: what ``run_until_idle`` does on each call, so that a loop of calls
        does not open a write transaction per call and per workflow."""
        return self._recover(
            wf
            for wf in self.parts.workflows.values()
            if (wf.name, wf.version, wf.state_schema) not in self._recovered
        )

    def _recover(self, workflows: Iterable[Workflow[Any]]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for wf in list(workflows):
            found += self.parts.store.requeue_too_new(
                wf.name,
                workflow_version=wf.version,
                state_schema=wf.state_schema,
                now=self.parts.clock.now(),
            )
            self._recovered.add((wf.name, wf.version, wf.state_schema))
        return found

    @verb
    def check(self, *, tenant: str | None = None, limit: int = 100_000) -> list[CheckRow]:
        """Tell, without changing anything, what the loaded code would do with every live run
        (of one tenant, or of all): run it, migrate it, or quarantine it and why. Run this in
        CI before a rollout (``perdure check --app MODULE``)."""
        rows: list[CheckRow] = []
        runs = (
            self.parts.store.list_runs(tenant, statuses=LIVE, limit=limit)
            if tenant is not None
            else self.parts.store.scan_runs(LIVE, limit=limit)
        )
        for run in runs:
            if run.workflow == GRAPH_WORKFLOW:
                continue  # a LangGraph thread: perdure.langgraph checks its checkpoints on read
            rows.append(self._check_one(run))
        return rows

    def _check_one(self, run: Run) -> CheckRow:
        written = f"v{run.workflow_version}/schema {run.state_schema}"
        base = (run.tenant_id, run.run_id, run.workflow, str(run.status), written)
        wf = self.parts.workflows.get(run.workflow)
        if wf is None:
            return CheckRow(
                *base,
                "quarantine",
                "unknown_workflow",
                f"no loaded workflow is called {run.workflow!r}",
            )
        stored = self.parts.store.load_state(run.tenant_id, run.run_id)
        artifacts = self.parts.artifacts
        found = inspect(
            run,
            stored,
            wf,
            keyring=self.parts.keyring,
            limits=self.parts.limits,
            resolve=None
            if artifacts is None
            else (lambda f: artifacts.resolve_fields(run.tenant_id, f, wf.codec.lazy)),
        )
        if isinstance(found, Attention):
            return CheckRow(*base, "attention", found.reason, found.message)
        if isinstance(found, Quarantine):
            return CheckRow(*base, "quarantine", found.reason, found.message)
        note = _describe(found, wf)
        if run.status is RunStatus.QUARANTINED:
            reason = run.error.reason if run.error is not None else None
            if reason == "schema_too_new":
                return CheckRow(*base, "run", None, "readable again: " + note)
            return CheckRow(
                *base, "quarantine", reason, f"stays quarantined until repaired ({note})"
            )
        verdict = "migrate" if found.upgrade.changes else "run"
        return CheckRow(*base, verdict, None, note)

    @verb
    def fail(
        self,
        run_id: str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        reason: str,
        by: str | None = None,
    ) -> Run:
        """End a run that needs a person (NEEDS_ATTENTION or QUARANTINED) as FAILED.

        A run with confirmed effects to compensate is refused: cancel it instead, so its
        compensations run. When ``tenant`` is a principal, its subject (unless ``by`` names
        someone) and the credential it came through are recorded (the audit trail)."""
        subject, via = acting(tenant)
        tenant = tenant_of(tenant)
        checked_text(reason, "reason")
        if by is not None:
            checked_text(by, "who failed it")
        run = self.parts.store.get_run(tenant, run_id)
        if run.status not in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED):
            raise RunStateError(
                f"run {run_id} is {run.status}; only runs that need a person can be failed by hand",
                fix="cancel it instead (`perdure cancel RUN`)",
            )
        effects = self.parts.effects(run)
        if any(e.status is EffectStatus.CONFIRMED and e.compensator for e in effects):
            raise RunStateError(
                f"run {run_id} has confirmed effects with compensators",
                fix="cancel it (`perdure cancel RUN`) so they are compensated",
            )
        transitions.check(run.status, RunStatus.FAILED)
        error = RunError(
            "failed_by_person",
            reason,
            run.next_step,
            by=by or subject,
            previous=run.error,
            via=via,
        )
        return self.parts.store.set_status(
            tenant,
            run_id,
            expected_status=run.status,
            expected_version=run.state_version,
            status=RunStatus.FAILED,
            fence=None,
            now=self.parts.clock.now(),
            data=error.to_json(),
            release_lease=True,
        )

    @verb
    def repair(
        self,
        run_id: str,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        at: str | None = None,
        patch: dict[str, Any] | None = None,
        add_budget: Budget | None = None,
        by: str | None = None,
    ) -> Run:
        """Bring a QUARANTINED (or NEEDS_ATTENTION) run back to RUNNING without running it:
        at ``at``, with ``patch`` applied (validated against the state type). Any worker (or
        ``resume``) continues it. When ``tenant`` is a principal, its subject (unless ``by``
        names someone) and the credential it came through are recorded (the audit trail)."""
        subject, via = acting(tenant)
        tenant = tenant_of(tenant)
        run = self.parts.store.get_run(tenant, run_id)
        if run.status not in (RunStatus.NEEDS_ATTENTION, RunStatus.QUARANTINED):
            raise RunStateError(
                f"run {run_id} is {run.status}; only runs that need a person are repaired",
                fix="see `perdure show RUN`",
            )
        wf = self.parts.workflow(run.workflow)
        return self.parts.reopen(run, wf, at, patch, add_budget, by or subject, via=via)


def _describe(found: Readable, wf: Workflow[Any]) -> str:
    up = found.upgrade
    parts = []
    if up.migrations:
        parts.append(f"migrate state schema {up.from_schema} -> {up.to_schema}")
    if up.renamed_from:
        parts.append(f"continue at {up.next_step!r} (was {up.renamed_from!r})")
    if found.drop:
        parts.append(f"drop fields {list(found.drop)}")
    for kind, replacement in up.replacements.items():
        parts.append(f"use {kind} {replacement!r}")
    return "; ".join(parts) or f"readable by {wf.name} v{wf.version}"
