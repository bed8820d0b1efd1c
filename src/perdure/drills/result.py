"""One row of the drills table: :class:`DrillResult`."""

from __future__ import annotations

from dataclasses import dataclass

from perdure.core.model import JSON


@dataclass(frozen=True, slots=True)
class DrillResult:
    """One row of the drills table: the drill's short name (``crash``) and title, the effect it
    aimed at (its label, e.g. ``act/tool.call_1``; None for a drill of the whole run), what
    happened, and whether it held (None when the drill does not apply)."""

    short: str
    drill: str
    effect: str | None
    happened: str
    held: bool | None

    @property
    def verdict(self) -> str:
        """``yes``, ``NO`` or ``n/a``."""
        return "n/a" if self.held is None else "yes" if self.held else "NO"

    def to_json(self) -> dict[str, JSON]:
        """The row as ``perdure drills --json`` prints it."""
        return {
            "drill": self.short,
            "title": self.drill,
            "effect": self.effect,
            "held": self.held,
            "what_happened": self.happened,
        }
