"""A memory search's filter as conditions the ``search_memory`` query checks in the database.

:func:`perdure.core.memory.matches` is the filter's meaning. The part of a filter that SQL
checks with exactly that meaning on both databases goes to the query as ``conditions`` (a JSON
array); the rest stays with :func:`~perdure.core.memory.matches`, in the process. Pushed down:

- a field equal (a plain value or ``$eq``) or not equal (``$ne``) to a text without NUL,
  ``True``, ``False``, ``None`` or an integer of magnitude below 2**53;
- a field compared (``$gt``, ``$gte``, ``$lt``, ``$lte``) with such an integer.

Checked in the process, after the query has kept only the items inside a range wider by far
than the error of either database's reading of a number: a field equal to or compared with a
float or a larger integer. Checked in the process alone: ``$ne`` with those, objects and lists
(compared deeply, ``True`` apart from ``1``), texts compared by order, texts holding NUL
(PostgreSQL reads no JSON holding ``\\u0000``), and fields whose name holds ``"``, ``\\`` or a
control character (a SQLite JSON path cannot name them). On PostgreSQL an item whose value
holds ``\\u0000`` anywhere is left undecided by the query and checked in the process.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from perdure.core.memory import OPERATORS
from perdure.core.values import JSON

EXACT = 2**53
"""Integers of smaller magnitude compare exactly with every double on both databases."""

ORDERS = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}

LOOSE = 2.0**-40
"""How much wider, relative to the number, the range checked for a float is."""

TINY = 2.0**-1000
"""And how much wider at least (near zero)."""


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
            exact = _condition(name, op, value)
            if exact is not None:
                conditions.append(exact)
                continue
            whole = False
            conditions.extend(_loose(name, op, value))
    if not conditions:
        return None, whole
    return orjson.dumps(conditions).decode(), whole


def _nameable(name: str) -> bool:
    return not any(c in '"\\' or c < " " for c in name)


def _condition(name: str, op: str, want: JSON) -> dict[str, JSON] | None:
    kind = _kind(want)
    if kind is None or (op in ORDERS and kind != "number"):
        return None
    return {"n": name, "p": f'$."{name}"', "o": ORDERS.get(op) or op[1:], "k": kind, "w": want}


def _loose(name: str, op: str, want: JSON) -> list[dict[str, JSON]]:
    """For a float or a large integer, a wider range the query checks (each database reads a
    stored number to within a unit in the last place; the range is wider by far more), so that
    only the rows near or inside the exact one come to the process; none for anything else."""
    if isinstance(want, bool) or not isinstance(want, int | float) or op == "$ne":
        return []
    try:
        at = float(want)
    except OverflowError:
        return []
    slack = abs(at) * LOOSE + TINY
    low = {"n": name, "p": f'$."{name}"', "o": "gte", "k": "number", "w": at - slack}
    high = {**low, "o": "lte", "w": at + slack}
    if op in ("$gt", "$gte"):
        return [low]
    if op in ("$lt", "$lte"):
        return [high]
    return [low, high]  # $eq


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
