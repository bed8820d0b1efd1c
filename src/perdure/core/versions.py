"""Reading old runs under new code: the pure decision of what to do with a stored run.

Given a run (the workflow version and state schema it was written with, its next step and its
release manifest) and the loaded definition, :func:`plan` says either how to bring the run up to
date — the migration functions to apply, the step to continue with, the retired dependencies to
replace — or why it must be quarantined. Nothing here touches the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from perdure.core.model import JSON, Release

Migration = Callable[[dict[str, Any]], dict[str, Any]]

QUARANTINE_REASONS = (
    "decode_error",
    "schema_too_new",
    "no_migration",
    "unknown_step",
    "integrity_failed",
    "state_replayed",
    "oversize",
    "retired_dependency",
)


@dataclass(frozen=True, slots=True)
class Quarantine:
    """The run cannot be run by this code; ``reason`` is one of :data:`QUARANTINE_REASONS`."""

    reason: str
    message: str
    evidence: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Upgrade:
    """How to run the stored run under this code (``migrations`` empty: nothing to migrate)."""

    from_schema: int
    to_schema: int
    migrations: tuple[Migration, ...]
    next_step: str | None
    renamed_from: str | None
    replacements: dict[str, str]

    @property
    def changes(self) -> bool:
        """True when the stored run must be rewritten (migrated state or renamed step)."""
        return bool(self.migrations) or self.renamed_from is not None


@dataclass(frozen=True, slots=True)
class Compatibility:
    """What a workflow definition declares about older (and newer) runs."""

    name: str
    version: int
    state_schema: int
    min_version: int
    steps: frozenset[str]
    migrations: dict[int, Migration]
    renamed: dict[str, str]
    removed: dict[str, str]
    retired: dict[str, dict[str, str | None]]


def plan(
    compat: Compatibility,
    *,
    workflow_version: int,
    state_schema: int,
    next_step: str | None,
    release: Release,
) -> Upgrade | Quarantine:
    """Decide how this code runs a run stored with these versions, or why it cannot."""
    if workflow_version > compat.version or state_schema > compat.state_schema:
        return Quarantine(
            "schema_too_new",
            f"the run was written by {compat.name} v{workflow_version} (state schema "
            f"{state_schema}); this code is v{compat.version} (state schema "
            f"{compat.state_schema}). It runs again when the newer code is back.",
            {
                "run_version": workflow_version,
                "run_schema": state_schema,
                "code_version": compat.version,
                "code_schema": compat.state_schema,
            },
        )
    if workflow_version < compat.min_version:
        return Quarantine(
            "no_migration",
            f"{compat.name} v{compat.version} reads runs from v{compat.min_version} on; this "
            f"run is v{workflow_version}",
            {"run_version": workflow_version, "min_version": compat.min_version},
        )
    chain: list[Migration] = []
    for schema in range(state_schema, compat.state_schema):
        step = compat.migrations.get(schema)
        if step is None:
            return Quarantine(
                "no_migration",
                f"no migration from state schema {schema} to {schema + 1}",
                {"run_schema": state_schema, "code_schema": compat.state_schema, "missing": schema},
            )
        chain.append(step)
    target, renamed_from = next_step, None
    if next_step is not None and next_step not in compat.steps:
        target = compat.renamed.get(next_step) or compat.removed.get(next_step)
        if target is None:
            return Quarantine(
                "unknown_step",
                f"step {next_step!r} is not declared by {compat.name} v{compat.version}, and is "
                "neither renamed nor removed",
                {"step": next_step, "declared": sorted(compat.steps)},
            )
        renamed_from = next_step
    replacements: dict[str, str] = {}
    for kind in ("model", "tools"):
        used = getattr(release, kind)
        retired = compat.retired.get(kind, {})
        if used is not None and used in retired:
            replacement = retired[used]
            if replacement is None:
                return Quarantine(
                    "retired_dependency",
                    f"the run was started with {kind} {used!r}, which is retired without a "
                    "replacement",
                    {"kind": kind, "retired": used},
                )
            replacements[kind] = replacement
    return Upgrade(
        state_schema, compat.state_schema, tuple(chain), target, renamed_from, replacements
    )


def migrate(data: dict[str, Any], upgrade: Upgrade) -> dict[str, Any]:
    """Apply the upgrade's migrations in order; each must return a dict."""
    for schema, fn in enumerate(upgrade.migrations, start=upgrade.from_schema):
        data = fn(dict(data))
        if not isinstance(data, dict):
            raise TypeError(
                f"migration from state schema {schema} returned {type(data).__name__}, not dict"
            )
    return data
