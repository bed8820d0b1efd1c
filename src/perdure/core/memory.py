"""Long-term memory: items a step writes under a namespace, read by any later run of its tenant.

A namespace is a tuple of ids (``("user", user_id)``, ``("task", "triage", "rules")``); an item
is one JSON value under ``(namespace, key)``. Items are written with a step's boundary, in the
same transaction as its state (a step that does not commit writes no memory), carry a version
that each committed write increases, and may expire (``ttl``): an expired item reads as absent
until ``perdure gc`` removes it.

Namespace parts and keys are ids (:func:`~perdure.core.ids.checked_id`) that also may not hold
``/``: stored, a namespace is its parts joined by ``/`` (:func:`namespace_text`), which is how
the command line names it too (``perdure memory list user/u1``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from perdure.core.errors import InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.values import JSON

SEPARATOR = "/"
"""What joins a namespace's parts in storage and on the command line."""

MAX_NAMESPACE_DEPTH = 16
"""The most parts a namespace may have."""

Namespace = tuple[str, ...]
"""A memory namespace: its parts, outermost first."""


def checked_namespace(namespace: Sequence[str] | str, *, prefix: bool = False) -> Namespace:
    """``namespace`` as a tuple of checked parts, or :class:`InvalidInputError`: each part an
    id without ``/``, 1 to :data:`MAX_NAMESPACE_DEPTH` parts (0 allowed for a ``prefix``, which
    then means every namespace). A string is split on ``/`` (the command line's form)."""
    what = "memory namespace prefix" if prefix else "memory namespace"
    if isinstance(namespace, str):
        parts: tuple[object, ...] = tuple(namespace.split(SEPARATOR)) if namespace else ()
    elif isinstance(namespace, Sequence):
        parts = tuple(namespace)
    else:
        raise InvalidInputError(
            f"{what} must be a tuple of strings, not {type(namespace).__name__}",
            fix='pass a tuple such as ("user", user_id)',
        )
    if (not parts and not prefix) or len(parts) > MAX_NAMESPACE_DEPTH:
        raise InvalidInputError(
            f"{what} must have 1 to {MAX_NAMESPACE_DEPTH} parts, not {len(parts)}",
            fix='pass a tuple such as ("user", user_id)',
        )
    for part in parts:
        if not isinstance(part, str):
            raise InvalidInputError(
                f"a part of the {what} must be text, not {type(part).__name__}",
                fix='pass a tuple of strings such as ("user", user_id)',
            )
        checked_id(part, f"{what} part")
        if SEPARATOR in part:
            raise InvalidInputError(
                f"the {what} part {part!r} contains {SEPARATOR!r}",
                fix=f"use one part per level instead of {SEPARATOR!r} inside a part",
            )
    return tuple(str(p) for p in parts)


def checked_key(key: str) -> str:
    """``key`` when it is usable as a memory key (an id without ``/``)."""
    checked_id(key, "memory key")
    if SEPARATOR in key:
        raise InvalidInputError(
            f"the memory key {key!r} contains {SEPARATOR!r}",
            fix="put the levels in the namespace and keep the key one word",
        )
    return key


def namespace_text(namespace: Namespace) -> str:
    """The stored form of a namespace: its parts joined by ``/`` (``""`` for the empty prefix)."""
    return SEPARATOR.join(namespace)


def namespace_of(text: str) -> Namespace:
    """The namespace a stored text names (inverse of :func:`namespace_text`)."""
    return tuple(text.split(SEPARATOR)) if text else ()


def under(namespace: Namespace, prefix: Namespace) -> bool:
    """True when ``namespace`` is ``prefix`` or lies below it."""
    return namespace[: len(prefix)] == prefix


OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
"""The comparisons a filter field may use instead of a plain value: ``{"age": {"$gte": 18}}``."""


def matches(value: JSON, filter: Mapping[str, JSON] | None) -> bool:
    """True when ``value`` is a JSON object holding every field of ``filter`` with an equal
    value (``True`` is not ``1``); no filter matches everything. A filter value that is an
    object whose keys are all :data:`OPERATORS` compares instead: ``$eq``/``$ne`` (equal or
    not, ``$ne`` also matching a missing field), ``$gt``/``$gte``/``$lt``/``$lte`` (numbers
    with numbers, text with text; any other pair does not match)."""
    if not filter:
        return True
    if not isinstance(value, dict):
        return False
    for name, want in filter.items():
        if isinstance(want, dict) and _is_comparison(want):
            if not all(_compare(value.get(name), name in value, op, w) for op, w in want.items()):
                return False
        elif name not in value or not _same(value[name], want):
            return False
    return True


def _is_comparison(want: dict[str, JSON]) -> bool:
    return bool(want) and all(op in OPERATORS for op in want)


def _compare(have: JSON, present: bool, op: str, want: JSON) -> bool:
    if op == "$eq":
        return present and _same(have, want)
    if op == "$ne":
        return not present or not _same(have, want)
    if not present:
        return False
    if isinstance(have, int | float) and isinstance(want, int | float):
        if isinstance(have, bool) or isinstance(want, bool):
            return False
        return _ordered(float(have), float(want), op)
    if isinstance(have, str) and isinstance(want, str):
        return _ordered(have, want, op)
    return False


def _ordered(a: float | str, b: float | str, op: str) -> bool:
    if op == "$gt":
        return bool(a > b)  # type: ignore[operator]
    if op == "$gte":
        return bool(a >= b)  # type: ignore[operator]
    if op == "$lt":
        return bool(a < b)  # type: ignore[operator]
    return bool(a <= b)  # type: ignore[operator]


def _same(a: JSON, b: JSON) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One stored memory item, as a reader sees it.

    ``version`` starts at 1 and grows by one with each committed write of the item;
    ``run_id`` is the run whose step wrote it last; ``expires_at`` is when it starts to read
    as absent (None: never)."""

    namespace: Namespace
    key: str
    value: JSON
    version: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    run_id: str | None = None
    score: float | None = None
    """How close the item is to a semantic search's query (cosine similarity, -1 to 1; the
    best of its indexed fields), None outside such a search or for an item without vectors."""

    def to_json(self) -> dict[str, JSON]:
        """The item as JSON (``perdure memory show --json``, the HTTP API)."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "version": self.version,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "run_id": self.run_id,
            "score": self.score,
        }


@dataclass(frozen=True, slots=True)
class MemoryVector:
    """The embedding of one indexed text of an item: ``path`` names the field it came from
    (``text``, ``tags.0`` for the first of several, ``$`` for the whole value)."""

    path: str
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """One write to memory, committed with a step's boundary (or by a LangGraph store at
    once): a put of ``value`` (expiring at ``expires_at``, None: never; ``ttl_seconds``, when
    kept, lets a read refresh the expiry) with the embeddings of its indexed fields
    (``vectors``, replacing the item's earlier ones), or a delete when ``deleted``."""

    namespace: Namespace
    key: str
    value: JSON = None
    expires_at: datetime | None = None
    deleted: bool = False
    vectors: tuple[MemoryVector, ...] = ()
    ttl_seconds: float | None = None
