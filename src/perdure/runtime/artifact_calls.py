"""What a step context offers for large outputs and fork points: artifacts (``put_artifact``,
``get_artifact`` and their async twins) and savepoints (``savepoint``). A part of
:class:`~perdure.runtime.context.Context`; ``docs/artifacts.md`` tells the whole."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from perdure.core.ids import checked_id
from perdure.core.model import JSON

if TYPE_CHECKING:
    from perdure.core.artifacts import ArtifactRef
    from perdure.runtime.artifacts import Data
    from perdure.runtime.context import StepHost


class ArtifactCalls:
    """Artifacts and savepoints for a step (mixed into ``Context``)."""

    _host: StepHost

    def put_artifact(
        self,
        data: Data,
        *,
        media_type: str = "application/octet-stream",
        parents: Iterable[ArtifactRef] = (),
    ) -> ArtifactRef:
        """Store large or binary output in the artifact store; return its reference.

        ``data`` is bytes, a ``pathlib.Path`` (streamed, never loaded whole to hash it) or a
        binary file object. The bytes are uploaded *now*, before the step's boundary; the
        reference (SHA-256 digest, size, ``media_type``, this run and step, and the
        ``parents`` it was made from) is committed with the boundary. Keep the returned
        :class:`~perdure.core.artifacts.ArtifactRef` in the state: it is small. If the step
        does not commit (a crash, a retry), the upload is an orphan that ``perdure gc``
        collects; the run never refers to it.
        """
        return self._host.put_artifact(data, media_type, tuple(parents))

    def get_artifact(self, ref: ArtifactRef | dict[str, JSON]) -> bytes:
        """The bytes of an artifact, checked against the reference's digest and size.

        A missing object or bytes that do not match stop the run in NEEDS_ATTENTION with
        reason ``artifact_missing`` or ``artifact_corrupt`` and the evidence (digest, size
        expected and found, where it was read): never a wrong value handed to the step."""
        from perdure.core.artifacts import ArtifactRef

        return self._host.get_artifact(ArtifactRef.from_json(ref))

    async def aput_artifact(
        self,
        data: Data,
        *,
        media_type: str = "application/octet-stream",
        parents: Iterable[ArtifactRef] = (),
    ) -> ArtifactRef:
        """:meth:`put_artifact` for ``async def`` steps: the hashing, the database write and
        the upload run in the run's own execution thread, so the event loop never waits."""
        host, parents = self._host, tuple(parents)
        return await host.bridge.call(lambda: host.put_artifact(data, media_type, parents))

    async def aget_artifact(self, ref: ArtifactRef | dict[str, JSON]) -> bytes:
        """:meth:`get_artifact` for ``async def`` steps (the read and the check run off the
        event loop)."""
        from perdure.core.artifacts import ArtifactRef

        host, checked = self._host, ArtifactRef.from_json(ref)
        return await host.bridge.call(lambda: host.get_artifact(checked))

    def savepoint(self, label: str, *, expires: timedelta | datetime | None = None) -> None:
        """Mark the state this step commits as savepoint ``label``: a confirmed point a
        person can fork the run from (``perdure fork RUN --savepoint LABEL``).

        It is recorded with the step's boundary (a step that does not commit marks nothing).
        ``expires`` (a duration from now, or a time) lets it lapse; until then it also keeps
        the run from being deleted by ``perdure gc``. A label is unique within a run."""
        from perdure.core.history import SavepointMark

        checked_id(label, "savepoint label")
        at = self._host.now() + expires if isinstance(expires, timedelta) else expires
        self._host.mark_savepoint(SavepointMark(label, at))
