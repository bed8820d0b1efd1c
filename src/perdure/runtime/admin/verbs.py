"""How a part of the :class:`~perdure.runtime.runtime.Runtime` names its verbs.

A part (``rt.memory``, ``rt.keys``, ``rt.history`` ...) is a plain object whose verbs are
methods marked with :func:`verb` (or :func:`reader` for a verb that returns an iterator the
caller reads). The mark is the only list of verbs there is: the
:class:`~perdure.runtime.asyncrt.AsyncRuntime` derives its coroutines from it, and a test
checks that every public method of a part carries it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

Kind = Literal["call", "reader"]

MARK = "__perdure_verb__"


def verb(method: F) -> F:
    """Mark ``method`` as a verb of its part: called, it returns its result."""
    setattr(method, MARK, "call")
    return method


def reader(method: F) -> F:
    """Mark ``method`` as a verb that returns an iterator (read entry by entry, then closed)."""
    setattr(method, MARK, "reader")
    return method


def kind_of(member: object) -> Kind | None:
    """``"call"`` or ``"reader"`` for a marked verb, else None."""
    found = getattr(member, MARK, None)
    return found if found in ("call", "reader") else None


def verbs_of(cls: type) -> dict[str, Kind]:
    """The verbs of a part's class (or of the Runtime): public name -> kind, in name order."""
    found: dict[str, Kind] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        kind = kind_of(getattr(cls, name, None))
        if kind is not None:
            found[name] = kind
    return found


def is_part(value: object) -> bool:
    """True for an object whose class has verbs (a part of the Runtime)."""
    return not isinstance(value, type) and bool(verbs_of(type(value)))


P = ParamSpec("P")
R = TypeVar("R")


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Say once per call site that ``old`` is now ``new`` (a :class:`DeprecationWarning`; the
    old name goes in the next release)."""
    warnings.warn(
        f"{old} is deprecated: use {new} (the old name goes in the next release)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed(method: Callable[P, R], old: str, new: str) -> Callable[P, R]:
    """``method`` under its old name: the same call, after a :func:`warn_renamed`."""

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        warn_renamed(old, new)
        return method(*args, **kwargs)

    call.__name__ = old.rsplit(".", 1)[-1]
    call.__doc__ = f"Deprecated: use ``{new}``."
    return call
