"""The artifact service: upload first, record the reference, verify on read, and offload
large state fields and message contents transparently.

Order of writes for ``ctx.put_artifact`` (and for an offloaded value): the reference is
recorded in the database as ``uploaded`` under the step's fence, then the bytes are uploaded,
then the step's boundary commits the reference with the progress. A crash anywhere in between
leaves either nothing or an ``uploaded`` reference that no commit will claim; ``gc`` deletes
it (and its object, when nothing else points to it). Objects are named by their SHA-256
digest under their tenant (``<tenant>/sha256/<ab>/<digest>``), so the same bytes are stored
once per tenant.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote, unquote

from perdure.core.artifacts import (
    ArtifactCorruptError,
    ArtifactMissingError,
    ArtifactRef,
    Data,
    check_media_type,
    digest_of,
    pointed,
    pointer,
    verify,
)
from perdure.core.clock import Clock
from perdure.core.errors import ConfigError, InvalidInputError, PerdureError
from perdure.core.model import Message
from perdure.runtime.crashpoints import crashpoint
from perdure.store.base import Store
from perdure.store.objects import ObjectStore, open_objects
from perdure.store.objects.base import ObjectUnreadableError

DEFAULT_OFFLOAD_BYTES = 256 * 1024
"""State fields and message contents larger than this go to the artifact store."""


def offload_bytes_from_env(value: int | None) -> int:
    """The offload threshold: ``value``, else ``PERDURE_OFFLOAD_BYTES``, else 256 KiB."""
    if value is None:
        text = os.environ.get("PERDURE_OFFLOAD_BYTES", "").strip()
        try:
            value = int(text) if text else DEFAULT_OFFLOAD_BYTES
        except ValueError:
            raise ConfigError(
                f"PERDURE_OFFLOAD_BYTES={text!r} is not a number of bytes",
                fix="set it to an integer such as 262144",
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or not 64 <= value <= 1 << 40:
        raise ConfigError(
            f"offload threshold {value!r} is out of range", fix="give 64 bytes or more"
        )
    return value


def object_key(tenant_id: str, digest: str) -> str:
    """Where an artifact's bytes live in the object store."""
    return f"{quote(tenant_id, safe='')}/sha256/{digest[:2]}/{digest}"


def parse_key(key: str) -> tuple[str, str] | None:
    """``(tenant_id, digest)`` of a key :func:`object_key` made, or None for anything else."""
    parts = key.split("/")
    if len(parts) != 4 or parts[1] != "sha256" or len(parts[3]) != 64 or parts[2] != parts[3][:2]:
        return None
    return unquote(parts[0]), parts[3]


@dataclass(frozen=True, slots=True)
class Writer:
    """Who writes an artifact: the run, the step (name and position) and the fence."""

    tenant_id: str
    run_id: str
    step: str | None
    step_seq: int | None
    fence: int


class Artifacts:
    """Artifacts of one runtime: its store (references), object store (bytes), clock and
    offload threshold. The object store is opened on first use."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        location: str | ObjectStore | None = None,
        offload_bytes: int | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.offload_bytes = offload_bytes_from_env(offload_bytes)
        self._location = location
        self._objects: ObjectStore | None = None

    @property
    def objects(self) -> ObjectStore:
        """The object store (``PERDURE_ARTIFACTS``, else a directory beside the database)."""
        if self._objects is None:
            loc = self._location
            self._objects = loc if loc is not None and not isinstance(loc, str) else None
            if self._objects is None:
                self._objects = open_objects(loc if isinstance(loc, str) else None, self.store.url)
        return self._objects

    # -- writing ----------------------------------------------------------------------------------

    def put(
        self, who: Writer, data: Data, media_type: str, parents: Sequence[ArtifactRef] = ()
    ) -> tuple[ArtifactRef, int]:
        """Record, then upload; return the reference and the id of its ``uploaded`` row."""
        check_media_type(media_type)
        body, ref = _read(data, media_type)
        ref_id = self.store.artifacts.record(
            who.tenant_id,
            who.run_id,
            step=who.step,
            step_seq=who.step_seq,
            fence=who.fence,
            ref=ref,
            parents=[ArtifactRef.from_json(p).digest for p in parents],
            now=self.clock.now(),
        )
        self.objects.put(object_key(who.tenant_id, ref.digest), body)
        crashpoint("after_upload", who.step)
        return ref, ref_id

    def upload(self, tenant_id: str, data: bytes, media_type: str) -> ArtifactRef:
        """Upload bytes no row references yet (a fork's patched field: the new run's row is
        written with the run). Until then gc sees an orphan object, after its grace period."""
        ref = ArtifactRef(digest_of(data), len(data), media_type)
        self.objects.put(object_key(tenant_id, ref.digest), data)
        return ref

    def offload_new(
        self, tenant_id: str, fields: dict[str, bytes], force: frozenset[str] = frozenset()
    ) -> tuple[dict[str, bytes], tuple[ArtifactRef, ...]]:
        """Fields of a run about to be created (a start, a fork): large values (and those of
        the ``force`` fields: lazy ones) uploaded and replaced by pointers; the references go
        into the new run's own transaction."""
        stored: dict[str, bytes] = {}
        refs: list[ArtifactRef] = []
        for name, value in fields.items():
            if self._offloads(name, value, force):
                ref = self.upload(tenant_id, value, "application/json")
                stored[name] = pointer(ref)
                refs.append(ref)
            else:
                stored[name] = value
        return stored, tuple(refs)

    def _offloads(self, name: str, value: bytes, force: frozenset[str]) -> bool:
        if pointed(value) is not None:
            return False
        return len(value) > self.offload_bytes or (name in force and value != b"null")

    def offload_fields(
        self, who: Writer, fields: dict[str, bytes], force: frozenset[str] = frozenset()
    ) -> tuple[dict[str, bytes], list[int]]:
        """Fields as stored: each value over the threshold (or of a ``force`` field: a lazy
        one) uploaded and replaced by a pointer. Returns the stored fields and the ids of the
        references to commit."""
        stored: dict[str, bytes] = {}
        ids: list[int] = []
        for name, value in fields.items():
            if self._offloads(name, value, force):
                ref, ref_id = self.put(who, value, "application/json")
                stored[name] = pointer(ref)
                ids.append(ref_id)
            else:
                stored[name] = value
        return stored, ids

    def offload_messages(
        self, who: Writer, messages: Sequence[Message]
    ) -> tuple[tuple[Message, ...], list[int]]:
        """Messages as stored: a content over the threshold is uploaded and replaced by an
        empty content with the reference."""
        out: list[Message] = []
        ids: list[int] = []
        for m in messages:
            body = m.content.encode()
            if len(body) > self.offload_bytes and m.artifact is None:
                ref, ref_id = self.put(who, body, "text/plain; charset=utf-8")
                out.append(replace(m, content="", artifact=ref))
                ids.append(ref_id)
            else:
                out.append(m)
        return tuple(out), ids

    # -- reading ----------------------------------------------------------------------------------

    def get(self, tenant_id: str, ref: ArtifactRef, where: str) -> bytes:
        """The bytes ``ref`` names, checked against its digest and size; else
        :class:`ArtifactMissingError` or :class:`ArtifactCorruptError` with the evidence."""
        key = object_key(tenant_id, ref.digest)
        try:
            data = self.objects.get(key)
        except ObjectUnreadableError as exc:
            raise ArtifactCorruptError(
                f"artifact {ref.uri} ({where}) cannot be read from {self.objects.url}",
                {
                    "artifact": ref.uri,
                    "where": where,
                    "key": key,
                    "store": self.objects.url,
                    "found": exc.message,
                },
            ) from exc
        if data is None:
            raise ArtifactMissingError(
                f"artifact {ref.uri} ({where}) is missing from {self.objects.url}",
                {"artifact": ref.uri, "where": where, "key": key, "store": self.objects.url},
            )
        return verify(ref, data, where)

    def resolve_fields(
        self, tenant_id: str, fields: dict[str, bytes], skip: frozenset[str] = frozenset()
    ) -> dict[str, bytes]:
        """Stored fields with every pointer replaced by the bytes it points to (except in the
        ``skip`` fields: lazy ones, read when a step asks)."""
        out: dict[str, bytes] = {}
        for name, value in fields.items():
            ref = None if name in skip else pointed(value)
            out[name] = value if ref is None else self.get(tenant_id, ref, f"state field {name}")
        return out

    def resolve_message(self, tenant_id: str, m: Message) -> Message:
        """The message with its offloaded content read back (unchanged when inline)."""
        if m.artifact is None:
            return m
        data = self.get(tenant_id, m.artifact, f"message {m.seq}")
        try:
            return replace(m, content=data.decode())
        except UnicodeDecodeError:
            raise InvalidInputError(f"message {m.seq}: offloaded content is not UTF-8") from None

    def readable(self, tenant_id: str, m: Message) -> Message:
        """A message with its offloaded content read back; left empty (with its reference)
        when the artifact cannot be read, so showing a run never fails on it."""
        try:
            return self.resolve_message(tenant_id, m)
        except PerdureError:
            return m


def refs_in(fields: dict[str, bytes]) -> list[ArtifactRef]:
    """The references the pointers among ``fields`` hold."""
    return [ref for v in fields.values() if (ref := pointed(v)) is not None]


def _read(data: Data, media_type: str) -> tuple[bytes | Path, ArtifactRef]:
    """The body to upload and its reference; a path is hashed as a stream, never loaded."""
    if isinstance(data, str):
        raise InvalidInputError(
            "put_artifact takes bytes, a path or a binary file, not text",
            fix="pass text.encode() for content, or pathlib.Path(name) for a file",
        )
    if isinstance(data, os.PathLike):
        path = Path(data)
        h = hashlib.sha256()
        size = 0
        try:
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
                    size += len(chunk)
        except OSError as exc:
            raise InvalidInputError(
                f"cannot read {path} for an artifact: {exc.strerror or exc}",
                fix="pass bytes, a readable file path or a binary file object",
            ) from exc
        return path, ArtifactRef(h.hexdigest(), size, media_type)
    if isinstance(data, bytes | bytearray | memoryview):
        body = bytes(data)
    elif isinstance(data, io.IOBase) or hasattr(data, "read"):
        body = data.read()
        if not isinstance(body, bytes):
            raise InvalidInputError(
                "the file object given to put_artifact is not binary", fix="open it with 'rb'"
            )
    else:
        raise InvalidInputError(
            f"put_artifact takes bytes, a path or a binary file, not {type(data).__name__}"
        )
    return body, ArtifactRef(digest_of(body), len(body), media_type)
