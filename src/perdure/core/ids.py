"""Identifiers: new ones (unguessable, time-ordered: UUIDv7 layout, 48-bit milliseconds and 74
random bits), the check every id given to perdure passes (tenants, threads, runs, keys), and
the same check for any text a person gives that reaches storage (a reason, a comment, a signal
name, a message): refused the same way from Python, the CLI and the HTTP API, whatever the
database (PostgreSQL cannot store NUL in text; SQLite could, and would let it through)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime

from perdure.core.errors import InvalidInputError

MAX_ID_LENGTH = 255
"""The longest id perdure stores (in characters)."""

MAX_TEXT_LENGTH = 100_000
"""The longest free text a person may give (a reason, a comment), in characters."""

MAX_MESSAGE_LENGTH = 64 * 1024 * 1024
"""The longest message posted to a thread (larger contents go to the artifact store)."""


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
    return checked_text(value, what, max_length=MAX_ID_LENGTH, empty=False)


def checked_text(
    value: str, what: str, *, max_length: int = MAX_TEXT_LENGTH, empty: bool = True
) -> str:
    """``value`` when it is text perdure can store: valid UTF-8, without NUL characters, at most
    ``max_length`` characters (and not empty unless ``empty``). Otherwise
    :class:`InvalidInputError` naming ``what``."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, not {type(value).__name__}")
    if (not value and not empty) or len(value) > max_length:
        low = 0 if empty else 1
        raise InvalidInputError(
            f"{what} must be {low} to {max_length} characters long, not {len(value)}",
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
