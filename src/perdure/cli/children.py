"""How ``perdure show`` and ``perdure runs --parent`` print a run's children and branches."""

from __future__ import annotations

from perdure.core.children import ChildRecord
from perdure.core.effects import EffectRecord
from perdure.core.model import JSON


def branches(effects: list[EffectRecord]) -> list[dict[str, JSON]]:
    """The parallel branches of a run (effects named ``branch/name``) with their status."""
    out: list[dict[str, JSON]] = []
    for e in effects:
        if "/" not in e.name:
            continue
        branch, name = e.name.split("/", 1)
        out.append(
            {
                "step": e.step,
                "branch": branch,
                "effect": name,
                "status": str(e.status),
                "attempts": e.attempts,
            }
        )
    return out


def children_text(kids: list[ChildRecord], effects: list[EffectRecord]) -> str:
    """The lines ``perdure show`` adds: one per child, one per branch ('' when none)."""
    lines: list[str] = []
    if kids:
        lines.append(f"children ({len(kids)}):")
        for k in kids:
            why = f"  {k.error.reason}" if k.error is not None else ""
            lines.append(f"  {k.key:<16} {k.status:<17} {k.workflow:<16} {k.run_id}{why}")
    found = branches(effects)
    if found:
        lines.append(f"branches ({len(found)}):")
        for b in found:
            lines.append(
                f"  {b['step']}: {b['branch']:<12} {b['effect']:<16} {b['status']}"
                f" (attempts {b['attempts']})"
            )
    return "\n".join(lines)
