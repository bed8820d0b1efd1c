"""What a step context offers for fan-out and fan-in: child runs (``spawn``, ``children``,
``merge_children``), parallel branches (``parallel``, ``gather``) and reducers (``merge``).
A part of :class:`~perdure.runtime.context.Context`; ``docs/parallel.md`` tells the whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from perdure.core.children import ChildRecord, by_key
from perdure.core.errors import DefinitionError
from perdure.core.reducers import combine

if TYPE_CHECKING:
    from perdure.core.budget import Budget
    from perdure.core.workflow import Workflow
    from perdure.runtime.context import StepHost
    from perdure.runtime.parallel import Call


class FanOut:
    """Child runs, parallel branches and reducers for a step (mixed into ``Context``)."""

    _host: StepHost
    step: str

    def spawn(
        self,
        workflow: Workflow[Any],
        input: Any = None,
        *,
        key: str,
        budget: Budget | None = None,
        share: float | None = None,
    ) -> ChildRecord:
        """Start a child run of ``workflow`` with ``input`` under ``key`` and return its record.

        Idempotent by ``key``: the child's run id and idempotency key are derived from this run
        and ``key``, so when this step runs again (after a crash, a retry) it finds the child it
        started. The child runs on its own thread, in this run's tenant, by any worker that has
        ``workflow`` registered; it never writes this run's state. Its budget is ``budget``,
        else ``share`` (0..1] of each limit this run has left, else the workflow's own. Wait for
        children with ``wait_for_children(on_done=...)`` and read them with :attr:`children`.
        """
        self._no_loop("spawn", "await ctx.aspawn(...)")
        host = self._host
        return host.spawner.spawn(host.claim.run, host.budget, workflow, input, key, budget, share)

    async def aspawn(
        self,
        workflow: Workflow[Any],
        input: Any = None,
        *,
        key: str,
        budget: Budget | None = None,
        share: float | None = None,
    ) -> ChildRecord:
        """:meth:`spawn` for ``async def`` steps (the write runs in the execution thread)."""
        host = self._host
        run, left = host.claim.run, host.budget
        return await host.bridge.call(
            lambda: host.spawner.spawn(run, left, workflow, input, key, budget, share)
        )

    @property
    def children(self) -> dict[str, ChildRecord]:
        """This run's children by key (in key order): each with ``key``, ``run_id``,
        ``workflow``, ``status``, ``result`` and ``error``, read from the store."""
        run = self._host.claim.run
        return by_key(self._host.store.child_runs(run.tenant_id, run.run_id))

    def merge(self, state: Any, updates: Mapping[str, Mapping[str, Any]]) -> Any:
        """``state`` with ``updates`` (``{branch id or key: {field: value}}``) applied in key
        order through the workflow's declared reducers; two writes of a field without a
        reducer raise :class:`~perdure.core.errors.ConflictingUpdatesError`."""
        return combine(state, updates, self._host.effects.workflow.reducers)

    def merge_children(self, state: Any, *, keys: list[str] | None = None) -> Any:
        """``state`` with the result of every SUCCEEDED child (a dict of state fields) merged in
        key order through the declared reducers (:meth:`merge`). Children that did not succeed
        are left out: read :attr:`children` to decide what they mean."""
        found = self.children
        chosen = found if keys is None else {k: found[k] for k in keys if k in found}
        updates: dict[str, Mapping[str, Any]] = {}
        for key, child in chosen.items():
            if not child.succeeded:
                continue
            if not isinstance(child.result, Mapping):
                raise DefinitionError(
                    f"child {key!r} returned {type(child.result).__name__}, not a dict of fields",
                    fix="end the child with done({'field': value, ...}) to merge it",
                )
            updates[key] = child.result
        return self.merge(state, updates)

    def parallel(self, branches: Mapping[str, Call]) -> dict[str, Any]:
        """Run several effects or model calls at once and return their results by branch id,
        in branch-id order. ``branches`` maps a stable branch id to an
        :class:`~perdure.runtime.parallel.EffectCall` or a
        :class:`~perdure.runtime.parallel.ModelCall`; each gets its own effect key from its
        branch id, so after a crash only the branches not confirmed are called again. Plain
        callables run in threads, ``async def`` ones as tasks; the bookkeeping stays in the
        run's execution thread. See :mod:`perdure.runtime.parallel`."""
        self._no_loop("parallel", "await ctx.gather(...)")
        from perdure.runtime.parallel import run_branches

        return run_branches(self, branches)  # type: ignore[arg-type]

    async def gather(self, branches: Mapping[str, Call]) -> dict[str, Any]:
        """:meth:`parallel` for ``async def`` steps: ``results = await ctx.gather({...})``."""
        if not self._host.bridge.active:
            raise DefinitionError(
                f"ctx.gather is for async def steps; step {self.step!r} is a plain function",
                fix="write `ctx.parallel({...})` in plain steps",
            )
        from perdure.runtime.parallel import run_branches

        return await self._host.bridge.call(lambda: run_branches(self, branches))  # type: ignore[arg-type]

    def _no_loop(self, what: str, fix: str) -> None:
        if self._host.bridge.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.{what} would block every run on the loop",
                fix=f"write `{fix}` in async steps",
            )
