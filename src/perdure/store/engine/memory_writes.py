"""Memory writes inside a boundary's transaction: :func:`write_memory`, which the commit calls (and
the ``memory`` wing's ``put``), and the stored form of a vector (:func:`pack`, :func:`unpack`)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from perdure.core.errors import InvalidInputError
from perdure.core.memory import (
    MemoryWrite,
    namespace_text,
)
from perdure.store.driver import Tx
from perdure.store.rows import Params, Stamp, to_json


def write_memory(
    tx: Tx,
    ids: Params,
    writes: Sequence[MemoryWrite],
    step_seq: int | None,
    at: Any,
    stamp: Stamp,
) -> None:
    """Inside a boundary's transaction (or :meth:`MemoryStore.put`'s): each memory write, in
    order (a put creates the item or bumps its version and replaces its vectors; a delete
    removes it, and its vectors with it), as statements whose results are not read."""
    for w in writes:
        where = {"tenant_id": ids["tenant_id"], "namespace": namespace_text(w.namespace)}
        if w.deleted:
            tx.run("delete_memory", {**where, "key": w.key})
            continue
        put = {
            **where,
            "key": w.key,
            "value": to_json(w.value) or "null",
            "run_id": ids["run_id"],
            "step_seq": step_seq,
            "now": at,
            "expires_at": stamp(w.expires_at),
            "ttl_seconds": w.ttl_seconds,
        }
        tx.run("upsert_memory", put)
        tx.run("delete_memory_vectors", {**where, "key": w.key})
        for v in w.vectors:
            vector = {**where, "key": w.key, "path": v.path, "dims": len(v.vector)}
            tx.run("insert_memory_vector", {**vector, "vector": pack(v.vector)})


def pack(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32 numbers, little-endian; :class:`InvalidInputError` for
    one that is empty or holds what float32 cannot (text, a number beyond 3.4e38)."""
    try:
        if not vector:
            raise struct.error("no numbers")
        return struct.pack(f"<{len(vector)}f", *vector)
    except (struct.error, OverflowError) as exc:
        raise InvalidInputError(
            f"a memory vector cannot be stored as float32 numbers: {exc}",
            fix="embed to finite numbers within float32's range",
        ) from exc


def unpack(stored: bytes | memoryview) -> tuple[float, ...]:
    """The vector :func:`pack` stored."""
    data = bytes(stored)
    return struct.unpack(f"<{len(data) // 4}f", data)
