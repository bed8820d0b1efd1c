"""Reading stored runs: one run, its view (:class:`RunView`), lists of runs, its children,
its current state. A part of :class:`~perdure.runtime.runtime.Runtime`, which binds its verbs
(the kernel's reads: ``rt.get``, ``rt.status``, ``rt.runs`` ...)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perdure.core.children import ChildRecord
from perdure.core.effects import EffectRecord
from perdure.core.ids import checked_id
from perdure.core.listing import RunCursor, RunFilter, RunPage
from perdure.core.model import JSON, Event, Message, Run, RunStatus, StepRecord
from perdure.core.seal import open_state
from perdure.core.serde import loads
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, statuses_of, tenant_of
from perdure.runtime.admin.verbs import verb
from perdure.runtime.artifacts import Artifacts


@dataclass(frozen=True, slots=True)
class RunView:
    """What ``status`` tells about a run: the run, its committed steps, its latest events, its
    thread's messages and its effects."""

    run: Run
    steps: list[StepRecord]
    events: list[Event]
    messages: list[Message]
    effects: list[EffectRecord]

    @property
    def completed_steps(self) -> list[str]:
        """Names of the committed steps, in order."""
        return [s.name for s in self.steps]


class Inspector:
    """Reads of a runtime's store, scoped to a tenant."""

    def __init__(self, parts: RuntimeParts, artifacts: Artifacts) -> None:
        self.parts = parts
        self.store = parts.store
        self.clock = parts.clock
        self.artifacts = artifacts

    @verb
    def get(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> Run:
        """The run, or :class:`~perdure.core.errors.RunNotFoundError`."""
        tenant = tenant_of(tenant)
        return self.store.get_run(tenant, checked_id(run_id, "run id"))

    @verb
    def status(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT, events: int = 20) -> RunView:
        """The run with its committed steps, last ``events`` events, thread messages and
        effects."""
        tenant = tenant_of(tenant)
        run = self.store.get_run(tenant, run_id)
        messages = self.store.messages(tenant, run.thread_id)
        recent = self.store.events(tenant, run_id, limit=events, latest=True) if events else []
        return RunView(
            run=run,
            steps=self.store.steps(tenant, run_id),
            events=recent,
            messages=[self.artifacts.readable(tenant, m) for m in messages],
            effects=self.store.list_effects(tenant, run_id=run_id),
        )

    @verb
    def runs(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        status: Sequence[RunStatus | str] = (),
        workflow: str | None = None,
        thread: str | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """Runs of a tenant, newest first, filtered by status, workflow and thread."""
        tenant = tenant_of(tenant)
        statuses = statuses_of(RunStatus, status, upper=True)
        return self.store.list_runs(
            tenant, statuses=statuses, workflow=workflow, thread_id=thread, limit=limit
        )

    @verb
    def run_page(
        self,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        where: RunFilter | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> RunPage:
        """One page of a tenant's runs, newest first, that ``where`` selects; ``cursor`` is the
        ``next_cursor`` of the page before (``None``: the first page). Pages follow a stable
        keyset, so reading them all lists every run that matched exactly once, even while
        runs are started. A cursor that is not one is :class:`InvalidInputError`."""
        tenant = tenant_of(tenant)
        where = where or RunFilter()
        after = None if cursor is None else RunCursor.parse(cursor)
        found = self.store.list_runs(
            tenant,
            statuses=where.statuses,
            workflow=where.workflow,
            thread_id=where.thread,
            since=where.since,
            until=where.until,
            search=where.search,
            after=after,
            limit=limit + 1,
        )
        runs = found[:limit]
        more = len(found) > limit
        return RunPage(runs, RunCursor.of(runs[-1]).token() if more and runs else None)

    @verb
    def children(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> list[ChildRecord]:
        """The child runs a run started (``ctx.spawn``), by key, with status and outcome."""
        tenant = tenant_of(tenant)
        self.store.get_run(tenant, run_id)  # RunNotFoundError for an unknown run
        return self.store.child_runs(tenant, run_id)

    @verb
    def state(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> dict[str, JSON]:
        """The run's current state fields as JSON (opened with the keyring when state is
        sealed; :class:`IntegrityError` when a field was tampered with). Read-only; needs no
        workflow loaded."""
        tenant_id = tenant_of(tenant)
        run = self.parts.store.get_run(tenant_id, run_id)  # another tenant's run: not found
        stored = self.parts.store.load_state(tenant_id, run_id)
        fields, _ = open_state(
            self.parts.keyring, tenant_id, run_id, stored, seal=run.state_seal, steps=run.steps_done
        )
        return {name: loads(value) for name, value in sorted(fields.items())}
