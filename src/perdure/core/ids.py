"""Identifiers: new ones (unguessable, time-ordered: UUIDv7 layout, 48-bit milliseconds and 74
random bits), and the check every id given to perdure passes (tenants, threads, runs, keys)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime

from perdure.core.errors import InvalidInputError

MAX_ID_LENGTH = 255
"""The longest id perdure stores (in characters)."""


def new_id(now: datetime) -> str:
    """A new UUIDv7 string whose timestamp is ``now``."""
    ms = int(now.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) & 0xFFF) << 64
    value |= (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def checked_id(value: str, what: str) -> str:
    """``value`` when it is usable as an id: text that is valid UTF-8, without NUL characters,
    1 to :data:`MAX_ID_LENGTH` characters long. Otherwise :class:`InvalidInputError` naming
    ``what`` (``tenant``, ``thread``, ``run id``...)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, not {type(value).__name__}")
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidInputError(
            f"{what} must be 1 to {MAX_ID_LENGTH} characters long, not {len(value)}",
            fix=f"pass a shorter {what}",
        )
    if "\x00" in value:
        raise InvalidInputError(
            f"{what} contains a NUL character", fix=f"remove it from the {what}"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{what} {value.encode('utf-8', 'backslashreplace').decode()[:80]!r} is not valid "
            "UTF-8 text",
            fix=f"pass the {what} as UTF-8 text",
        ) from None
    return value
