"""Reading a stored checkpoint under the running code, without writing anything.

:func:`inspect` opens the stored state fields (integrity), checks their size, plans the upgrade
from the versions the run was written with, applies the migrations and decodes the result into
the workflow's state type. It returns what the runtime needs to continue the run, or the typed
reason it must be quarantined. The worker applies it on claim; ``perdure check`` runs it over
every live run before a deploy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perdure.core.artifacts import ArtifactError
from perdure.core.errors import DecodeError
from perdure.core.logs import StoredFields
from perdure.core.model import Run
from perdure.core.seal import IntegrityError, Keyring, ReplayError, StateSeal, open_state
from perdure.core.serde import Limits, OversizeError, dumps, loads
from perdure.core.versions import Quarantine, Upgrade, migrate, plan
from perdure.core.workflow import Workflow


@dataclass(frozen=True, slots=True)
class Readable:
    """A checkpoint this code can run: the decoded state, its fields, and the upgrade applied
    (``upgrade.changes``: the stored run must be rewritten first; ``drop``: fields to delete);
    ``record``: the run row's verified seal record (None without one)."""

    state: Any
    fields: dict[str, bytes]
    upgrade: Upgrade
    drop: tuple[str, ...]
    record: StateSeal | None = None
    stored: dict[str, bytes] | None = None
    """The opened fields as stored (offloaded values as pointers); None after a migration."""


@dataclass(frozen=True, slots=True)
class Attention(Quarantine):
    """The checkpoint is sound but something it points to cannot be read (an artifact is
    missing or corrupt): the run needs a person (NEEDS_ATTENTION), not a quarantine."""


Resolve = Callable[[dict[str, bytes]], dict[str, bytes]]
"""Replaces the pointers of offloaded fields by their bytes (or raises ArtifactError)."""


def inspect(
    run: Run,
    stored: dict[str, bytes],
    workflow: Workflow[Any],
    *,
    keyring: Keyring | None,
    limits: Limits,
    resolve: Resolve | None = None,
) -> Readable | Quarantine:
    """Decide whether (and how) ``workflow`` can continue ``run`` from its ``stored`` fields.
    The limits apply to the fields as stored; offloaded values are then read back through
    ``resolve``."""
    logs = stored.logs if isinstance(stored, StoredFields) else {}
    try:
        fields, record = open_state(
            keyring, run.tenant_id, run.run_id, stored, seal=run.state_seal, steps=run.steps_done
        )
    except ReplayError as exc:
        return Quarantine("state_replayed", exc.message, exc.evidence)
    except IntegrityError as exc:
        return Quarantine("integrity_failed", exc.message, {"fields": sorted(stored)})
    try:  # a field kept as a log may outgrow max_bytes: only its nesting is checked
        limits.check({k: v for k, v in fields.items() if k not in logs})
        limits.check_nesting({k: v for k, v in fields.items() if k in logs})
    except OversizeError as exc:
        return Quarantine("oversize", exc.message, limits.to_json())
    opened = fields
    if resolve is not None:
        try:
            fields = resolve(fields)
        except ArtifactError as exc:
            return Attention(exc.code, exc.message, exc.evidence)
    upgrade = plan(
        workflow.compat,
        workflow_version=run.workflow_version,
        state_schema=run.state_schema,
        next_step=run.next_step,
        release=run.release,
    )
    if isinstance(upgrade, Quarantine):
        return upgrade
    if upgrade.migrations:
        try:
            data = migrate({k: loads(v) for k, v in fields.items()}, upgrade)
            fields = {k: dumps(v) for k, v in data.items()}
            opened = {}  # the execution offloads and checks the migrated fields as it stores them
        except Exception as exc:
            return Quarantine(
                "no_migration",
                f"migrating state schema {upgrade.from_schema} -> {upgrade.to_schema} failed: "
                f"{type(exc).__name__}: {exc}",
                {"run_schema": upgrade.from_schema, "code_schema": upgrade.to_schema},
            )
    try:
        state = workflow.codec.from_fields(fields)
    except DecodeError as exc:
        return Quarantine(
            "decode_error",
            exc.message,
            {"state_schema": upgrade.to_schema, "fields": sorted(fields)},
        )
    encoded = workflow.codec.to_fields(state)
    drop = tuple(sorted(set(stored) - set(encoded)))
    return Readable(state, encoded, upgrade, drop, record=record, stored=opened or None)
