"""What a step's new state writes at its boundary: the fields that changed, each written whole
(large ones offloaded to the artifact store as pointers), or, for a field kept as a log, only
the items the step appended (see :mod:`perdure.core.logs`).

One :class:`StateWriter` belongs to one execution of one run. It knows the fields as stored
(for the size limits) and which fields are logs with how many tails, and decides per changed
field:

* a log whose new value only appended items: its tail (unless it already holds
  :data:`~perdure.core.logs.COMPACT_EVERY` tails, or :data:`~perdure.core.logs.COMPACT_BYTES`
  bytes of tails with this one: then it is written whole, compacted, and ``compacted`` names
  it);
* a log changed in another way: written whole as the log's new base;
* a field of at least ``append_from`` bytes whose new value only appended items: it becomes a
  log (written whole once, inline, as its base);
* anything else: written whole, offloaded when over the offload threshold.

Logs are not offloaded and do not count toward ``Limits.max_bytes`` (a conversation may grow
past it); every text written is checked for nesting. Runs of a runtime with a keyring keep no
logs: a sealed field is sealed whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from perdure.core.logs import COMPACT_BYTES, COMPACT_EVERY, tail_of
from perdure.core.serde import Limits
from perdure.runtime.artifacts import Artifacts, Writer

APPEND_FROM = 65_536
"""Default size in bytes from which a field that only grows becomes a log."""


@dataclass(slots=True)
class StateWrite:
    """What one boundary writes of the state."""

    changed: dict[str, bytes] = field(default_factory=dict)
    """Every field whose encoded value changed, as encoded (whole)."""
    stored: dict[str, bytes] = field(default_factory=dict)
    """The fields written whole, as stored (offloaded values as pointers)."""
    logs: frozenset[str] = frozenset()
    """The fields of ``stored`` written as the base of a log."""
    appends: dict[str, bytes] = field(default_factory=dict)
    """Logs the step only appended to, each with its tail."""
    compacted: frozenset[str] = frozenset()
    """The logs of ``logs`` written whole because their tails reached the thresholds."""
    offloaded: list[int] = field(default_factory=list)
    """Ids of the artifact references the offloaded values need."""


class StateWriter:
    """Decides, step by step, what a run's state changes write (see the module docstring)."""

    def __init__(
        self,
        artifacts: Artifacts,
        limits: Limits,
        *,
        append_from: int | None,
        lazy: frozenset[str] = frozenset(),
    ) -> None:
        self.artifacts = artifacts
        self.limits = limits
        self.append_from = append_from
        """None: no field becomes a log (a runtime with a keyring)."""
        self.lazy = lazy
        self.stored: dict[str, bytes] = {}
        """The fields as stored, logs left out (for the size limits)."""
        self.logs: dict[str, int] = {}
        """The fields kept as logs, with how many tails each holds."""
        self.tail_bytes: dict[str, int] = {}
        """The bytes of those tails, per log."""

    def loaded(
        self,
        stored: Mapping[str, bytes],
        logs: Mapping[str, int],
        tail_bytes: Mapping[str, int] | None = None,
    ) -> None:
        """Start from the run's fields as loaded (or as rewritten by an upgrade)."""
        self.logs = dict(logs) if self.append_from is not None else {}
        self.tail_bytes = {k: v for k, v in (tail_bytes or {}).items() if k in self.logs}
        self.stored = {k: v for k, v in stored.items() if k not in self.logs}

    def write(
        self,
        who: Writer,
        encoded: Mapping[str, bytes],
        previous: Mapping[str, bytes],
        *,
        every: bool,
    ) -> StateWrite:
        """What the boundary writes for the new ``encoded`` fields, given the ``previous``
        ones (``every``: write every field whole, changed or not). Raises
        :class:`~perdure.core.serde.OversizeError` (nothing is kept of the attempt) or the
        artifact store's error."""
        out = StateWrite()
        out.changed = {k: v for k, v in encoded.items() if every or previous.get(k) != v}
        if not out.changed:
            return out
        plain: dict[str, bytes] = {}
        logs: dict[str, bytes] = {}
        tails = dict(self.logs)
        sizes = dict(self.tail_bytes)
        compacted: set[str] = set()
        for name, new in out.changed.items():
            old = previous.get(name)
            tail = self._tail(name, old, new) if not every else None
            if name in tails and tail is not None:
                held = sizes.get(name, 0) + len(tail)
                if tails[name] < COMPACT_EVERY and held <= COMPACT_BYTES:
                    out.appends[name] = tail
                    tails[name] += 1
                    sizes[name] = held
                    continue
                compacted.add(name)
            if name in tails or (tail is not None and len(new) >= (self.append_from or 0)):
                logs[name] = new
                tails[name] = 0
                sizes[name] = 0
            else:
                plain[name] = new
        stored, out.offloaded = self.artifacts.offload_fields(who, plain, self.lazy)
        kept = {k: v for k, v in self.stored.items() if k not in logs}
        self.limits.check({**kept, **stored}, changed=stored)
        self.limits.check_nesting({**logs, **{k: b"[" + t + b"]" for k, t in out.appends.items()}})
        out.stored = {**stored, **logs}
        out.logs = frozenset(logs)
        out.compacted = frozenset(compacted)
        self.stored = {**kept, **stored}
        self.logs = tails
        self.tail_bytes = sizes
        return out

    def _tail(self, name: str, old: bytes | None, new: bytes) -> bytes | None:
        if self.append_from is None or old is None or name in self.lazy:
            return None
        return tail_of(old, new)
