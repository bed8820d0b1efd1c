"""The type of plain JSON values, shared by every record module."""

from __future__ import annotations

from typing import Any

JSON = Any
"""A value that orjson can encode: dict, list, str, int, float, bool or None. User data (a
run's result, a step's request, a signal's payload) has this type; perdure's own records are
typed dataclasses."""
