"""Numeric settings of a runtime, checked once where they are given."""

from __future__ import annotations

from perdure.core.errors import ConfigError


def setting(name: str, value: float, low: float, high: float, unit: str = "seconds") -> float:
    """``value`` when it is a finite number from ``low`` to ``high``; else :class:`ConfigError`
    naming the setting and the allowed range (a negative lease or poll must never start)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(
            f"{name} {value!r} is out of range",
            fix=f"give {name} a number of {unit} from {low:g} to {high:g}",
        )
    return float(value)
