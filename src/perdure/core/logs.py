"""Field logs: a state field that only grows, stored as a base value and the tails appended to it.

A list in the state that a step extends (the messages of a conversation, notes, documents
found) would otherwise be rewritten whole at every boundary, so a step's commit would grow with
the list. Instead, once such a field is large (``Runtime(append_from=...)``, 64 KiB by default)
and a step's new value is the old one with items appended, the field becomes a *log*: its row
holds a base value and each later boundary stores only its *tail*, the JSON text between the
old value's last item and its closing bracket (``,{"role":"user",...}``). Loading joins the
base and the tails; a log is written whole again (compacted: its new base is the joined value
and its tails go) once it holds :data:`COMPACT_EVERY` tails or :data:`COMPACT_BYTES` bytes of
them, whichever comes first, or when a step changes it in any other way. Compaction is the
boundary of the step that passes the threshold, written in that boundary's one transaction, so
a crash before it is durable leaves the log as it was and a crash after leaves the new base;
the steps in between write only their tails.

Nothing here is declared by the workflow author: the change is found by comparing the encoded
texts, which orjson produces canonically, so a value that only grew is recognised as such.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

COMPACT_EVERY = 64
"""Tails a log holds at most before the runtime writes it whole again."""

COMPACT_BYTES = 1 << 20
"""Bytes of tails a log holds at most (1 MiB) before the runtime writes it whole again: a log
whose steps append large items (documents, tool results) is compacted after a few of them
rather than after :data:`COMPACT_EVERY`."""

COMMA = 0x2C


def tail_of(old: bytes, new: bytes) -> bytes | None:
    """What ``new`` appends to the JSON array ``old``: the text before its closing bracket
    (starting with ``,`` unless ``old`` is empty), or None when ``new`` is not ``old`` with
    items appended (or either is not an array)."""
    head = len(old) - 1
    if len(new) <= len(old) or old[:1] != b"[" or old[-1:] != b"]" or new[-1:] != b"]":
        return None
    if head > 1 and new[head] != COMMA:  # the old last item must end where it ended
        return None
    if not new.startswith(old[:head]):  # memcmp (a memoryview compares item by item)
        return None
    return new[head:-1]


def joined(base: bytes, tails: Iterable[bytes]) -> bytes:
    """A log's value: its base with every tail appended, in order. The base is read through a
    view, so the whole value is copied once (into the result), not twice."""
    return b"".join((memoryview(base)[:-1], *tails, b"]"))


class StoredFields(dict[str, bytes]):
    """A run's state fields as the store holds them (encoded JSON, logs joined), and which of
    them are logs: ``logs`` maps each to how many tails it has, ``tail_bytes`` to how many bytes
    those tails hold."""

    logs: dict[str, int]
    tail_bytes: dict[str, int]

    def __init__(
        self,
        fields: Mapping[str, bytes] | None = None,
        logs: Mapping[str, int] | None = None,
        tail_bytes: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(fields or {})
        self.logs = dict(logs or {})
        self.tail_bytes = dict(tail_bytes or {})
