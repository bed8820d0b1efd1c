"""A memory search's filter as conditions the ``search_memory`` query checks in the database.

:func:`perdure.core.memory.matches` is the filter's meaning. The part of a filter that SQL
checks with exactly that meaning on both databases goes to the query as ``conditions`` (a JSON
array); the rest stays with :func:`~perdure.core.memory.matches`, in the process. Pushed down:

- a field equal (a plain value or ``$eq``) or not equal (``$ne``) to a text without NUL,
  ``True``, ``False``, ``None`` or an integer of magnitude below 2**53;
- a field compared (``$gt``, ``$gte``, ``$lt``, ``$lte``) with such an integer.

Kept in the process: objects and lists (compared deeply, ``True`` apart from ``1``), floats and
larger integers (each database reads a stored number its own way; below 2**53 an integer and
every double compare exactly), texts compared by order, texts holding NUL (PostgreSQL reads
no JSON holding ``\\u0000``), and fields whose name holds ``"``, ``\\`` or a control character
(a SQLite JSON path cannot name them). On PostgreSQL an item whose value holds ``\\u0000``
anywhere is left undecided by the query and checked in the process.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from perdure.core.memory import OPERATORS
from perdure.core.values import JSON

EXACT = 2**53
"""Integers of smaller magnitude compare exactly with every double on both databases."""

ORDERS = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}


def pushed(filter: Mapping[str, JSON] | None) -> tuple[str | None, bool]:
    """The conditions of ``filter`` the query checks (JSON text, None when there is none) and
    whether they are the whole filter (so the query alone decides, and pages itself)."""
    if not filter:
        return None, True
    conditions: list[dict[str, JSON]] = []
    whole = True
    for name, want in filter.items():
        if not _nameable(name):
            whole = False
            continue
        compares = isinstance(want, dict) and want and all(o in OPERATORS for o in want)
        for op, value in want.items() if compares else [("$eq", want)]:
            condition = _condition(name, op, value)
            if condition is None:
                whole = False
            else:
                conditions.append(condition)
    if not conditions:
        return None, whole
    return orjson.dumps(conditions).decode(), whole


def _nameable(name: str) -> bool:
    return not any(c in '"\\' or c < " " for c in name)


def _condition(name: str, op: str, want: JSON) -> dict[str, JSON] | None:
    kind = _kind(want)
    if kind is None or (op in ORDERS and kind != "number"):
        return None
    return {
        "n": name,
        "p": f'$."{name}"',
        "o": ORDERS.get(op) or op[1:],
        "k": kind,
        "w": want,
    }


def _kind(want: JSON) -> str | None:
    if want is True:
        return "true"
    if want is False:
        return "false"
    if want is None:
        return "null"
    if isinstance(want, str):
        return None if "\x00" in want else "text"
    if type(want) is int and -EXACT < want < EXACT:
        return "number"
    return None
