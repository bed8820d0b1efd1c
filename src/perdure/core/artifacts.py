"""Artifacts: large or binary outputs kept in an object store, referenced by checksum.

An artifact is content-addressed: its name is the SHA-256 digest of its bytes, so the same
bytes are stored once per tenant and a reference proves what it points to. State and messages
hold only an :class:`ArtifactRef` (digest, size, media type); reading the bytes back checks
both, and a mismatch is :class:`ArtifactCorruptError`, never a silently wrong value.

A state field or message content above the offload threshold is stored as an artifact and
replaced, in the stored row, by a *pointer*: the canonical JSON object
``{"__perdure_artifact__": {"digest": ..., "media_type": ..., "size": ...}}``. That key is
reserved; the runtime swaps pointers back for the bytes on read, so steps never see one.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from typing import IO

from perdure.core.errors import InvalidInputError, PerdureError
from perdure.core.values import JSON

Data = bytes | bytearray | memoryview | os.PathLike[str] | IO[bytes]
"""What ``ctx.put_artifact`` takes: bytes, a path to a file (``pathlib.Path``), or a binary
file object. Text is refused: encode it, so its bytes are what you mean."""

POINTER_KEY = "__perdure_artifact__"
_POINTER_PREFIX = b'{"' + POINTER_KEY.encode() + b'":'
_HEX = re.compile(r"[0-9a-f]{64}")
_MEDIA = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(;.*)?")


@dataclass(frozen=True, slots=True)
class ArtifactRef:
    """A reference to stored bytes: ``digest`` (SHA-256, 64 lowercase hex characters),
    ``size`` in bytes and ``media_type`` (``application/json``, ``image/png`` ...).

    A reference may be kept in a state dataclass field typed ``ArtifactRef`` (it is stored as
    a small JSON object) and handed back to ``ctx.get_artifact``."""

    digest: str
    size: int
    media_type: str = "application/octet-stream"

    def __post_init__(self) -> None:
        if not isinstance(self.digest, str) or not _HEX.fullmatch(self.digest):
            raise InvalidInputError(
                f"artifact digest {self.digest!r} is not a SHA-256 hex digest",
                fix="pass a reference returned by ctx.put_artifact",
            )
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise InvalidInputError(f"artifact size {self.size!r} is not a byte count")
        check_media_type(self.media_type)

    @property
    def uri(self) -> str:
        """``artifact:sha256:<digest>``, how the CLI and events name it."""
        return f"artifact:sha256:{self.digest}"

    def to_json(self) -> dict[str, JSON]:
        """The reference as a JSON object."""
        return {"digest": self.digest, "size": self.size, "media_type": self.media_type}

    @classmethod
    def from_json(cls, data: object) -> ArtifactRef:
        """A reference from its JSON object (or an ``ArtifactRef``); bad data is invalid input."""
        if isinstance(data, ArtifactRef):
            return data
        if not isinstance(data, dict):
            raise InvalidInputError(
                f"an artifact reference is an object, got {type(data).__name__}",
                fix="pass the ArtifactRef that ctx.put_artifact returned",
            )
        size = data.get("size")
        return cls(
            str(data.get("digest")),
            size if isinstance(size, int) else -1,
            str(data.get("media_type") or "application/octet-stream"),
        )


def check_media_type(media_type: str) -> str:
    """``media_type`` when it looks like ``type/subtype``; else invalid input."""
    if not isinstance(media_type, str) or len(media_type) > 200 or not _MEDIA.fullmatch(media_type):
        raise InvalidInputError(
            f"media type {media_type!r} is not of the form type/subtype",
            fix="pass e.g. media_type='application/pdf'",
        )
    return media_type


def digest_of(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def pointer(ref: ArtifactRef) -> bytes:
    """The canonical JSON stored instead of an offloaded value."""
    import orjson

    return orjson.dumps({POINTER_KEY: ref.to_json()}, option=orjson.OPT_SORT_KEYS)


def pointed(stored: bytes) -> ArtifactRef | None:
    """The reference a stored value points to, or None when it is an ordinary value."""
    if not stored.startswith(_POINTER_PREFIX) or len(stored) > 400:
        return None
    import orjson

    try:
        data = orjson.loads(stored)
        return ArtifactRef.from_json(data[POINTER_KEY])
    except (orjson.JSONDecodeError, InvalidInputError, KeyError, TypeError):
        return None


class ArtifactError(PerdureError):
    """An artifact could not be read as recorded; ``evidence`` says which and what was found."""

    code = "artifact_error"

    def __init__(self, message: str, evidence: dict[str, JSON], *, fix: str | None = None):
        super().__init__(message, fix=fix)
        self.evidence = evidence


class ArtifactMissingError(ArtifactError):
    """The object store has no object for a recorded reference."""

    code = "artifact_missing"
    fix = (
        "restore the object into the artifact store (same digest), then "
        "`perdure resume RUN --app MODULE`; or fork the run from an earlier step"
    )


class ArtifactCorruptError(ArtifactError):
    """The stored bytes do not match the reference's digest or size."""

    code = "artifact_corrupt"
    fix = (
        "restore the original bytes into the artifact store (the digest names them), then "
        "`perdure resume RUN --app MODULE`; or fork the run from an earlier step"
    )


def verify(ref: ArtifactRef, data: bytes, where: str) -> bytes:
    """``data`` when it is what ``ref`` names; else :class:`ArtifactCorruptError`."""
    found = digest_of(data)
    if found != ref.digest or len(data) != ref.size:
        raise ArtifactCorruptError(
            f"artifact {ref.uri} at {where} does not match its checksum",
            {
                "artifact": ref.uri,
                "where": where,
                "expected_sha256": ref.digest,
                "expected_size": ref.size,
                "found_sha256": found,
                "found_size": len(data),
            },
        )
    return data
