"""State fields that are not stored like the others: *lazy* fields (kept in the artifact store,
read on first access) and *derived* fields (never stored, rebuilt by a function when the state is
read back). Both are declared on dataclass states::

    @dataclass
    class Agent:
        question: str = ""
        cache: Lazy[dict] = lazy()                     # a RAG cache kept out of the core state
        index: dict | None = derived(build_index)      # rebuilt from the other fields on resume

A lazy field's value is always stored as an artifact, whatever its size, and the row keeps a
pointer; when a run continues, the field holds a :class:`Lazy` that reads (and checks) the
bytes only when a step asks for ``state.cache.value``. An unread lazy field costs nothing: not
read on resume, not written at the boundary. A derived field is skipped when the state is
stored and set to ``build(state)`` when it is read back; what a step writes into it is not kept.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from perdure.core.artifacts import ArtifactRef
from perdure.core.errors import InvalidInputError

T = TypeVar("T")

LAZY = "perdure.lazy"
DERIVED = "perdure.derived"

Loader = Callable[[ArtifactRef], Any]
"""Reads a lazy value's artifact and returns the decoded JSON value."""

_UNSET: Any = object()


class Lazy(Generic[T]):
    """A value read from the artifact store on first access (see the module docstring).

    ``value`` reads it (once) and returns it; ``set(v)`` replaces it. ``loaded`` tells whether
    it was read or set in this process."""

    __slots__ = ("_loader", "_value", "ref")

    def __init__(self, value: T = _UNSET, *, ref: ArtifactRef | None = None) -> None:
        self._value: Any = value
        self.ref = ref
        """Where the stored value lives (None for a value set in this process only)."""
        self._loader: Loader | None = None

    @property
    def loaded(self) -> bool:
        """True once the value was read or set here."""
        return self._value is not _UNSET

    @property
    def value(self) -> T:
        """The value, read from the artifact store (checked) the first time."""
        if self._value is _UNSET:
            if self.ref is None:
                return None  # type: ignore[return-value]  # an empty lazy field
            if self._loader is None:
                raise InvalidInputError(
                    "this lazy field was not bound to an artifact store",
                    fix="read lazy fields inside a step (the runtime binds them)",
                )
            self._value = self._loader(self.ref)
        result: T = self._value
        return result

    def set(self, value: T) -> None:
        """Replace the value (stored as an artifact at the step's boundary)."""
        self._value = value

    def bind(self, loader: Loader) -> None:
        """Give the field the reader of its artifact (done by the runtime on resume)."""
        self._loader = loader

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Lazy):
            return NotImplemented
        if self.loaded and other.loaded:
            return bool(self._value == other._value)
        return self.ref is not None and self.ref == other.ref

    def __hash__(self) -> int:
        return hash(self.ref)

    def __repr__(self) -> str:
        shown = repr(self._value) if self.loaded else f"<not read: {self.ref}>"
        return f"Lazy({shown})"


def lazy() -> Any:
    """Declare a dataclass field as lazy: ``cache: Lazy[dict] = lazy()``."""
    return dataclasses.field(default_factory=Lazy, metadata={LAZY: True}, compare=False)


def derived(build: Callable[[Any], Any]) -> Any:
    """Declare a dataclass field as derived: ``index: dict | None = derived(build_index)``;
    ``build(state)`` rebuilds it whenever the state is read back."""
    if not callable(build):
        raise InvalidInputError("derived(...) takes the function that rebuilds the field")
    return dataclasses.field(default=None, metadata={DERIVED: build}, compare=False)


def special_fields(state_type: type[Any]) -> tuple[frozenset[str], dict[str, Callable[[Any], Any]]]:
    """The lazy field names and the derived fields' builders of a dataclass state type."""
    if not dataclasses.is_dataclass(state_type):
        return frozenset(), {}
    fs = dataclasses.fields(state_type)
    lazies = frozenset(f.name for f in fs if f.metadata.get(LAZY))
    built = {f.name: f.metadata[DERIVED] for f in fs if DERIVED in f.metadata}
    return lazies, built


def bind_lazy(state: Any, names: frozenset[str], loader: Loader) -> None:
    """Bind every lazy field of ``state`` to ``loader``."""
    for name in names:
        found = getattr(state, name, None)
        if isinstance(found, Lazy):
            found.bind(loader)
