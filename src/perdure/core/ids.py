"""Unguessable, time-ordered identifiers (UUIDv7 layout: 48-bit milliseconds, 74 random bits)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime


def new_id(now: datetime) -> str:
    """A new UUIDv7 string whose timestamp is ``now``."""
    ms = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) & 0xFFF) << 64
    value |= (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))
