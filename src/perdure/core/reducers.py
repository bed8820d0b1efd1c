"""Reducers: how updates from parallel branches or child runs to one state field combine.

Branches and children finish in any order; their updates are applied in a fixed order (by
branch id or child key), each field through its declared reducer, so the state that comes out
never depends on which finished first. Two updates of one field with no reducer declared are a
:class:`~perdure.core.errors.ConflictingUpdatesError` (never last-writer-wins)::

    Workflow("supervisor", state=S, steps=[...], reducers={"findings": append, "cost": total})

A reducer is ``(current, update) -> new`` and must not mutate ``current``. Built in:
:data:`append` (lists: extend with the update, or append one item), :data:`merge` (dicts:
update's keys win, key by key, in order), :data:`maximum`, :data:`minimum` and :data:`total`.
Any named function of two arguments may be given instead. Pure: no I/O.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from perdure.core.errors import ConflictingUpdatesError, DefinitionError

Reducer = Callable[[Any, Any], Any]
"""``(current, update) -> new``: combines one update into a field's value."""


def append(current: Any, update: Any) -> Any:
    """Lists: ``current + update`` (a non-list update is appended as one item)."""
    base = list(current or [])
    return base + list(update) if isinstance(update, list | tuple) else [*base, update]


def merge(current: Any, update: Any) -> Any:
    """Dicts: ``{**current, **update}``."""
    if not isinstance(update, Mapping):
        raise ConflictingUpdatesError(f"merge needs a dict update, not {type(update).__name__}")
    return {**dict(current or {}), **dict(update)}


def maximum(current: Any, update: Any) -> Any:
    """The larger of the two (``None`` counts as absent)."""
    return update if current is None else max(current, update)


def minimum(current: Any, update: Any) -> Any:
    """The smaller of the two (``None`` counts as absent)."""
    return update if current is None else min(current, update)


def total(current: Any, update: Any) -> Any:
    """The sum (``None`` counts as zero)."""
    return update if current is None else current + update


BUILTIN: dict[str, Reducer] = {
    "append": append,
    "merge": merge,
    "max": maximum,
    "min": minimum,
    "sum": total,
}
"""The built-in reducers by the names a declaration may use instead of the function."""


def declared(reducers: Mapping[str, Reducer | str], state: type) -> dict[str, Reducer]:
    """The reducers of a workflow, checked when it is declared: each names a field of the state
    (when the state's fields are known) and is a function of two arguments or a built-in name."""
    known = getattr(state, "__dataclass_fields__", None) or getattr(state, "model_fields", None)
    fields = None if known is None else set(known)
    out: dict[str, Reducer] = {}
    for name, given in reducers.items():
        if fields is not None and name not in fields:
            raise DefinitionError(f"reducer for {name!r}: the state has no such field")
        fn = given
        if isinstance(given, str):
            if given not in BUILTIN:
                known = ", ".join(sorted(BUILTIN))
                raise DefinitionError(f"reducer {given!r} for {name!r} is unknown (known: {known})")
            fn = BUILTIN[given]
        if not callable(fn):
            raise DefinitionError(f"reducer for {name!r} is not callable")
        out[name] = fn
    return out


def combine(
    state: Any, updates: Mapping[str, Mapping[str, Any]], reducers: Mapping[str, Reducer]
) -> Any:
    """Apply ``updates`` (``{branch id or child key: {field: value}}``) to ``state`` in branch
    order and return the new state (a copy: ``state`` is left as it was).

    A field one update writes and no reducer declares is replaced; a field two or more updates
    write goes through its reducer, in branch order, starting from the state's value. Two
    writes without a reducer raise :class:`ConflictingUpdatesError` naming the branches.
    """
    writers: dict[str, list[str]] = {}
    for branch in sorted(updates):
        for name in updates[branch]:
            writers.setdefault(name, []).append(branch)
    conflicts = {f: b for f, b in writers.items() if len(b) > 1 and f not in reducers}
    if conflicts:
        field = sorted(conflicts)[0]
        raise ConflictingUpdatesError(
            f"field {field!r} is written by branches {conflicts[field]} and has no reducer"
        )
    values: dict[str, Any] = {}
    for name, branches in sorted(writers.items()):
        current = _get(state, name)
        for branch in branches:
            update = updates[branch][name]
            current = reducers[name](current, update) if name in reducers else update
        values[name] = current
    return _with(state, values)


def _get(state: Any, name: str) -> Any:
    if isinstance(state, Mapping):
        return copy.deepcopy(state.get(name))
    if not hasattr(state, name):
        raise ConflictingUpdatesError(f"the state has no field {name!r} to update")
    return copy.deepcopy(getattr(state, name))


def _with(state: Any, values: dict[str, Any]) -> Any:
    if isinstance(state, Mapping):
        return {**state, **values}
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return dataclasses.replace(state, **values)
    if hasattr(state, "model_copy"):  # pydantic
        return state.model_copy(update=values)
    fresh = copy.copy(state)
    for name, value in values.items():
        setattr(fresh, name, value)
    return fresh
