"""The Runtime's part for a run's past: its history by step, the state at any step,
savepoints, and forks (time travel) from a step or a savepoint.

A fork is a new run (new id, own lease, own effects, own thread) that starts from the state
the original had at the fork point and continues with the step that came next. Effects the
original confirmed in steps up to the fork point are not repeated: the fork never runs those
steps. Steps after the fork point run again in the fork, as the fork's own steps: their
effects get new effect keys (the key names the run), so an effect the original already made
after the fork point is made again by the fork, unless the step's code or the patched state
decides otherwise. The original run is not touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from perdure.core.artifacts import pointer
from perdure.core.errors import InvalidInputError
from perdure.core.history import FieldChange, Lineage, Savepoint
from perdure.core.ids import checked_id, new_id
from perdure.core.model import JSON, Message, Run
from perdure.core.seal import open_each, seal_state
from perdure.core.serde import dumps, loads
from perdure.core.settling import in_doubt
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.artifacts import Artifacts, refs_in
from perdure.store.base import NewRun


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One point of a run's history: step ``step_seq`` (0: the start) named ``step``, how it
    ended, where it went next, when it finished, the fields written at that point and the
    savepoints that mark it."""

    step_seq: int
    step: str | None
    outcome: str | None
    next_step: str | None
    finished_at: datetime | None
    changes: tuple[FieldChange, ...]
    savepoints: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()
    """The artifacts the step stored (``artifact:sha256:...``), offloaded values included."""

    def to_json(self) -> dict[str, JSON]:
        """The entry as a JSON object."""
        return {
            "step_seq": self.step_seq,
            "step": self.step,
            "outcome": self.outcome,
            "next_step": self.next_step,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "changes": [c.to_json() for c in self.changes],
            "savepoints": list(self.savepoints),
            "artifacts": list(self.artifacts),
        }


class Timeline:
    """See the module docstring; the :class:`~perdure.runtime.runtime.Runtime` exposes its
    methods."""

    def __init__(self, parts: RuntimeParts, artifacts: Artifacts) -> None:
        self.parts = parts
        self.artifacts = artifacts

    def history(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> list[HistoryEntry]:
        """The run's history: its start (step 0) and every committed step, each with the state
        fields it wrote (sizes, not values) and its savepoints."""
        tenant_id = tenant_of(tenant)
        store = self.parts.store
        store.get_run(tenant_id, run_id)
        changes = store.history.state_changes(tenant_id, run_id)
        marks = store.history.savepoints(tenant_id, run_id)
        made = [
            a
            for a in store.artifacts.find(tenant_id, run_id=run_id)
            if str(a.status) == "committed"
        ]
        entries = [HistoryEntry(0, None, None, None, None, ())]
        entries += [
            HistoryEntry(s.seq, s.name, str(s.outcome), s.next_step, s.finished_at, ())
            for s in store.steps(tenant_id, run_id)
        ]
        return [
            replace(
                e,
                changes=tuple(c for c in changes if c.step_seq == e.step_seq),
                savepoints=tuple(m.label for m in marks if m.step_seq == e.step_seq),
                artifacts=tuple(a.ref.uri for a in made if (a.step_seq or 0) == e.step_seq),
            )
            for e in entries
        ]

    def state_at(
        self, run_id: str, step: int, *, tenant: Tenant = DEFAULT_TENANT
    ) -> dict[str, JSON]:
        """The run's state at step ``step`` (0: as it started), field by field, with offloaded
        values read back (and checked) from the artifact store."""
        tenant_id = tenant_of(tenant)
        run = self.parts.store.get_run(tenant_id, run_id)
        fields = self._fields_at(run, self._step(run, step))
        full = self.artifacts.resolve_fields(tenant_id, fields)
        return {k: loads(v) for k, v in sorted(full.items())}

    def savepoint(
        self,
        run_id: str,
        label: str,
        *,
        at: int | None = None,
        tenant: Tenant = DEFAULT_TENANT,
        by: str | None = None,
        expires: timedelta | None = None,
    ) -> Savepoint:
        """Mark step ``at`` (default: the last committed step) of a run as savepoint
        ``label``, confirmed by ``by``. Idempotent for the same label and step."""
        tenant_id = tenant_of(tenant)
        checked_id(label, "savepoint label")
        run = self.parts.store.get_run(tenant_id, run_id)
        now = self.parts.clock.now()
        return self.parts.store.history.add_savepoint(
            tenant_id,
            run_id,
            label,
            run.steps_done if at is None else self._step(run, at),
            by=by or self.parts.owner,
            expires_at=None if expires is None else now + expires,
            now=now,
        )

    def savepoints(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> list[Savepoint]:
        """The run's savepoints, by step."""
        return self.parts.store.history.savepoints(tenant_of(tenant), run_id)

    def lineage(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> Lineage | None:
        """Where a forked run came from (None for a run that was not forked)."""
        return self.parts.store.history.lineage(tenant_of(tenant), run_id)

    def fork(
        self,
        run_id: str,
        *,
        at: int | None = None,
        savepoint: str | None = None,
        patch: dict[str, Any] | None = None,
        next_step: str | None = None,
        thread: str | None = None,
        tenant: Tenant = DEFAULT_TENANT,
        by: str | None = None,
    ) -> Run:
        """Create a new PENDING run from run ``run_id``'s state at step ``at`` or at
        ``savepoint`` (exactly one), and return it; a worker runs it like any run.

        The fork starts at the step that followed the fork point (``next_step`` overrides it,
        and is needed after a step that waited for an approval), with the state then, the
        ``patch`` applied (fields to overwrite, validated against the state type), and a new
        thread (``thread``, default: named after the fork) holding the messages the original
        had then. Lineage (source run, step, savepoint, patched fields, ``by``) is recorded
        with the fork. Effects: see the module docstring. The original is not changed.
        """
        tenant_id = tenant_of(tenant)
        store, now = self.parts.store, self.parts.clock.now()
        source = store.get_run(tenant_id, run_id)
        wf = self.parts.workflow(source.workflow)
        step = self._fork_point(source, at, savepoint, now)
        doubt = [e for e in in_doubt(self.parts.effects(source)) if e.step_seq > step]
        if doubt:
            # the fork would make again, under its own keys, an effect that may have happened
            raise InvalidInputError(
                f"run {run_id} has an effect after step {step} whose outcome is unknown "
                f"({doubt[0].key}); a fork from there could make it a second time",
                fix="settle it first: resume the run (its effect is reconciled, or goes to a "
                "person), resolve an ambiguous one (`perdure effects resolve KEY`), then fork",
            )
        resume_at = next_step or self._next_after(source, step, wf.start)
        if resume_at not in wf.steps:
            raise InvalidInputError(
                f"step {resume_at!r} is not declared by workflow {wf.name}",
                fix=f"pick one of {', '.join(wf.steps)} with --next",
            )
        fields = self._fields_at(source, step)
        patched = self._patched(fields, patch, tenant_id, wf)
        stored = self.parts.checked({**fields, **patched})
        fork_id = new_id(now)
        if thread is not None:
            checked_id(thread, "thread")
        messages = tuple(
            Message(m.role, m.content, m.tool_calls, m.tool_call_id, artifact=m.artifact)
            for m in store.history.messages_until(tenant_id, source.thread_id, source.run_id, step)
        )
        refs = {r.digest: r for r in refs_in(stored)}
        refs.update({m.artifact.digest: m.artifact for m in messages if m.artifact})
        who = by or self.parts.owner
        lineage = Lineage(fork_id, source.run_id, step, savepoint, tuple(sorted(patched)), who, now)
        limits = wf.budget
        sealed = seal_state(self.parts.keyring, tenant_id, fork_id, stored, previous=None, steps=0)
        new = NewRun(
            run_id=fork_id,
            tenant_id=tenant_id,
            thread_id=thread or fork_id,
            workflow=wf.name,
            start_step=resume_at,
            release=source.release,
            state=sealed.fields,
            state_seal=sealed.seal,
            messages=messages,
            budget=limits.start() if limits is not None else None,
            lineage=lineage,
            artifacts=tuple(refs.values()),
        )
        run, _ = store.create_run(new, now)
        return run

    # -- helpers ----------------------------------------------------------------------------------

    def _step(self, run: Run, step: int) -> int:
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= run.steps_done:
            raise InvalidInputError(
                f"run {run.run_id} has committed {run.steps_done} steps; step {step!r} is not "
                "one of its points (0 is the start)",
                fix="pick a step number shown by `perdure history RUN`",
            )
        return step

    def _fields_at(self, run: Run, step: int) -> dict[str, bytes]:
        """The opened (unsealed) stored fields at ``step``; offloaded values stay pointers. Each
        value is checked against its own seal; which state write sealed it does not matter
        here (history holds older values by design)."""
        stored = self.parts.store.history.state_at(run.tenant_id, run.run_id, step)
        keyring = self.parts.keyring
        if keyring is None:
            return stored
        return {
            k: data
            for k, (data, _) in open_each(keyring, run.tenant_id, run.run_id, stored).items()
        }

    def _fork_point(self, run: Run, at: int | None, label: str | None, now: datetime) -> int:
        if (at is None) == (label is None):
            raise InvalidInputError(
                "a fork needs exactly one of a step (--at) or a savepoint (--savepoint)"
            )
        if at is not None:
            return self._step(run, at)
        found = {s.label: s for s in self.parts.store.history.savepoints(run.tenant_id, run.run_id)}
        sp = found.get(label or "")
        if sp is None:
            known = ", ".join(sorted(found)) or "none"
            raise InvalidInputError(
                f"run {run.run_id} has no savepoint {label!r} (it has: {known})",
                fix="see `perdure history RUN`",
            )
        if not sp.live(now):
            raise InvalidInputError(
                f"savepoint {label!r} of run {run.run_id} expired at {sp.expires_at}",
                fix="fork from a step instead (--at STEP)",
            )
        return sp.step_seq

    def _next_after(self, run: Run, step: int, start: str) -> str:
        if step == 0:
            return start
        record = self.parts.store.steps(run.tenant_id, run.run_id)[step - 1]
        if record.next_step is None:
            raise InvalidInputError(
                f"step {step} ({record.name}) of run {run.run_id} ended with {record.outcome}: "
                "no step follows it",
                fix="fork from an earlier step, or name the step to continue with (--next)",
            )
        return record.next_step

    def _patched(
        self, fields: dict[str, bytes], patch: dict[str, Any] | None, tenant_id: str, wf: Any
    ) -> dict[str, bytes]:
        """The patch as stored fields, after checking the patched state fits the state type
        (offloaded values are read back to check them; a large patched value is offloaded)."""
        lazy = wf.codec.lazy
        if not patch:
            wf.codec.coerce_fields(self.artifacts.resolve_fields(tenant_id, fields, lazy))
            return {}
        if not isinstance(patch, dict):
            raise InvalidInputError("a state patch must be a JSON object of fields")
        encoded = {k: dumps(v) for k, v in patch.items()}
        full = self.artifacts.resolve_fields(tenant_id, fields, lazy)
        wf.codec.coerce_fields({**full, **encoded})
        out: dict[str, bytes] = {}
        for name, value in encoded.items():
            if len(value) > self.artifacts.offload_bytes or name in lazy:
                out[name] = pointer(self.artifacts.upload(tenant_id, value, "application/json"))
            else:
                out[name] = value
        return out
