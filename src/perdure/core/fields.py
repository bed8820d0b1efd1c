"""State fields that are not stored like the others: *lazy* fields (kept in the artifact store,
read on first access), *cache* fields (lazy fields that are rebuilt when their stored value is
missing or unreadable) and *derived* fields (never stored, rebuilt by a function when the state
is read back). All are declared on dataclass states::

    @dataclass
    class Agent:
        question: str = ""
        notes: Lazy[dict] = lazy()                     # a large value kept out of the core state
        docs: Lazy[list] = cache(rebuild=retrieve)     # stored when set, rebuilt on a miss
        index: dict | None = derived(build_index)      # rebuilt from the other fields on resume

A lazy field's value is always stored as an artifact, whatever its size, and the row keeps a
pointer; when a run continues, the field holds a :class:`Lazy` that reads (and checks) the
bytes only when a step asks for ``state.cache.value``. An unread lazy field costs nothing: not
read on resume, not written at the boundary. A derived field is skipped when the state is
stored and set to ``build(state)`` when it is read back; what a step writes into it is not kept.

A cache field is a lazy field with a ``rebuild(state)`` function. It is written only when a step
calls ``set`` on it (changing its value in place is not stored: call ``set`` again), so a
boundary that did not set it neither encodes nor compares it. Read with ``.value``: when the
stored value is missing from the artifact store, fails its checksum or cannot be decoded, or was
never stored, ``rebuild(state)`` gives the value instead, the miss is recorded as a
``cache_rebuilt`` event of the run (with the field and the reason), and the rebuilt value is
stored again at the step's boundary. A miss is never an error of the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from perdure.core.artifacts import ArtifactError, ArtifactRef, pointer
from perdure.core.errors import DecodeError, InvalidInputError

T = TypeVar("T")

LAZY = "perdure.lazy"
DERIVED = "perdure.derived"
REBUILD = "perdure.rebuild"

Loader = Callable[[ArtifactRef], Any]
"""Reads a lazy value's artifact and returns the decoded JSON value."""
Missed = Callable[[str, str], None]
"""Told ``(field, reason)`` when a cache field was rebuilt (``artifact_missing``,
``artifact_corrupt``, ``decode_error``, ``absent``)."""

_UNSET: Any = object()


class Lazy(Generic[T]):
    """A value read from the artifact store on first access (see the module docstring).

    ``value`` reads it (once) and returns it; ``set(v)`` replaces it. ``loaded`` tells whether
    it was read or set in this process. With ``rebuild`` (a cache field), a value that cannot
    be read is rebuilt instead, and the value is stored only after a ``set`` or a rebuild."""

    __slots__ = (
        "_build",
        "_dirty",
        "_kept",
        "_loader",
        "_missed",
        "_name",
        "_owner",
        "_value",
        "ref",
    )

    def __init__(
        self,
        value: T = _UNSET,
        *,
        ref: ArtifactRef | None = None,
        rebuild: Callable[[Any], Any] | None = None,
    ) -> None:
        self._value: Any = value
        self.ref = ref
        """Where the stored value lives (None for a value set in this process only)."""
        self._loader: Loader | None = None
        self._build = rebuild
        self._kept: bytes | None = None
        """A cache field's encoded form since it was last set (see :meth:`kept`)."""
        self._dirty = False
        """A cache field was set or rebuilt since it was last encoded."""
        self._owner: Any = None
        self._missed: Missed | None = None
        self._name = ""

    @property
    def loaded(self) -> bool:
        """True once the value was read or set here."""
        return self._value is not _UNSET

    @property
    def rebuildable(self) -> bool:
        """True for a cache field (it has a ``rebuild`` function)."""
        return self._build is not None

    @property
    def value(self) -> T:
        """The value, read from the artifact store (checked) the first time; a cache field's
        value is rebuilt when it cannot be read (see the module docstring)."""
        if self._value is _UNSET and self._build is not None:
            self._value = self._read_or_rebuild(self._build)
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

    def _read_or_rebuild(self, build: Callable[[Any], Any]) -> Any:
        if self.ref is not None and self._loader is not None:
            try:
                return self._loader(self.ref)
            except (ArtifactError, DecodeError) as exc:
                reason = exc.code
        elif self.ref is not None:
            raise InvalidInputError(
                "this cache field was not bound to an artifact store",
                fix="read cache fields inside a step (the runtime binds them)",
            )
        else:
            reason = "absent"
        if self._owner is None:
            raise InvalidInputError(
                "this cache field was not bound to its state",
                fix="read cache fields inside a step (the runtime binds them)",
            )
        value = build(self._owner)
        self.ref, self._dirty = None, True  # stored again at the boundary
        if self._missed is not None:
            self._missed(self._name, reason)
        return value

    def set(self, value: T) -> None:
        """Replace the value (stored as an artifact at the step's boundary)."""
        self._value = value
        self._dirty = True

    def bind(
        self, loader: Loader, owner: Any = None, name: str = "", missed: Missed | None = None
    ) -> None:
        """Give the field the reader of its artifact (done by the runtime on resume); a cache
        field also gets the state it is rebuilt from, its name and whom to tell of a miss."""
        self._loader = loader
        self._owner, self._name, self._missed = owner, name, missed

    def kept(self) -> bytes | None:
        """How a cache field is stored when it was not set since it was read or last encoded
        (None: encode its value). Always None for a plain lazy field."""
        if self._build is None or self._dirty:
            return None
        if self._kept is not None:
            return self._kept
        if self.ref is not None:
            return pointer(self.ref)
        return b"null" if self._value is _UNSET else None

    def keep(self, encoded: bytes) -> None:
        """Remember how a cache field was encoded, until it is set again."""
        if self._build is not None:
            self._kept, self._dirty = encoded, False

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


def cache(rebuild: Callable[[Any], Any]) -> Any:
    """Declare a dataclass field as a rebuildable cache: ``docs: Lazy[list] = cache(rebuild=fn)``;
    ``fn(state)`` gives its value when the stored one is missing or unreadable (see the module
    docstring). The field is stored only when a step calls ``set`` on it."""
    if not callable(rebuild):
        raise InvalidInputError("cache(rebuild=...) takes the function that rebuilds the field")
    return dataclasses.field(
        default_factory=lambda: Lazy(rebuild=rebuild),
        metadata={LAZY: True, REBUILD: rebuild},
        compare=False,
    )


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


def rebuilders(state_type: type[Any]) -> dict[str, Callable[[Any], Any]]:
    """The cache fields of a dataclass state type, each with its ``rebuild`` function."""
    if not dataclasses.is_dataclass(state_type):
        return {}
    return {
        f.name: f.metadata[REBUILD] for f in dataclasses.fields(state_type) if REBUILD in f.metadata
    }


def bind_lazy(
    state: Any,
    names: frozenset[str],
    loader: Loader,
    missed: Missed | None = None,
    cache_loader: Loader | None = None,
) -> None:
    """Bind every lazy field of ``state`` to ``loader``, and every cache field to
    ``cache_loader`` (one that raises the artifact's or the decoding's error, which the field
    answers with a rebuild), to ``state`` and to ``missed``, told of each rebuild."""
    for name in names:
        found = getattr(state, name, None)
        if isinstance(found, Lazy):
            if found.rebuildable:
                found.bind(cache_loader or loader, state, name, missed)
            else:
                found.bind(loader)
