"""The Runtime's verbs that belong to one of its parts (waits, effects, versions, threads,
streams, the operator's keys and counts, history, retention, the archive, artifacts): each
bound once, with the part's own signature and docstring. A part of
:class:`~perdure.runtime.runtime.Runtime`, which builds the parts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from perdure.core.artifacts import ArtifactRef
from perdure.runtime.archive import Archive
from perdure.runtime.artifacts import Artifacts
from perdure.runtime.base import DEFAULT_TENANT, Tenant, tenant_of
from perdure.runtime.effects import EffectAdmin
from perdure.runtime.history import History
from perdure.runtime.operator import Operator
from perdure.runtime.retention import Retainer
from perdure.runtime.stream_reader import Streams
from perdure.runtime.threads import Threads
from perdure.runtime.versions import Versions
from perdure.runtime.waits import Waits

Part = TypeVar("Part")
P = ParamSpec("P")
R = TypeVar("R")


def _part(
    method: Callable[Concatenate[Part, P], R], attribute: str
) -> Callable[Concatenate[PartVerbs, P], R]:
    """A method that calls ``method`` on the part held in ``attribute`` (same
    arguments, same result, same docstring): one definition of each verb."""

    def call(self: PartVerbs, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return method(getattr(self, attribute), *args, **kwargs)

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class PartVerbs:
    """Waits, effects, old runs, threads, streams, keys and counts, history, retention and the
    archive: the parts' methods, with their contracts (mixed into ``Runtime``)."""

    waits: Waits
    effect_admin: EffectAdmin
    versions: Versions
    threads: Threads
    streams: Streams
    operator: Operator
    history_part: History
    retainer: Retainer
    archive: Archive
    artifacts: Artifacts

    approvals = _part(Waits.approvals, "waits")
    approve = _part(Waits.approve, "waits")
    reject = _part(Waits.reject, "waits")
    signal = _part(Waits.signal, "waits")
    effects = _part(EffectAdmin.effects, "effect_admin")
    resolve_effect = _part(EffectAdmin.resolve_effect, "effect_admin")
    check = _part(Versions.check, "versions")
    recover_readable = _part(Versions.recover_readable, "versions")
    fail = _part(Versions.fail, "versions")
    repair = _part(Versions.repair, "versions")
    thread = _part(Threads.thread, "threads")
    set_thread_policy = _part(Threads.set_thread_policy, "threads")
    add_message = _part(Threads.post, "threads")
    stream = _part(Streams.stream, "streams")
    create_key = _part(Operator.create_key, "operator")
    keys = _part(Operator.keys, "operator")
    revoke_key = _part(Operator.revoke_key, "operator")
    authenticate = _part(Operator.authenticate, "operator")
    state = _part(Operator.state, "operator")
    events = _part(Operator.events, "operator")
    feed = _part(Operator.feed, "operator")
    run_counts = _part(Operator.run_counts, "operator")
    effect_counts = _part(Operator.effect_counts, "operator")
    spend_counts = _part(Operator.spend_counts, "operator")
    queue = _part(Operator.queue, "operator")
    moved_since = _part(Operator.moved_since, "operator")
    last_event_seq = _part(Operator.last_event_seq, "operator")
    wait_for_events = _part(Operator.wait_for_events, "operator")
    history = _part(History.history, "history_part")
    state_at = _part(History.state_at, "history_part")
    savepoint = _part(History.savepoint, "history_part")
    savepoints = _part(History.savepoints, "history_part")
    lineage = _part(History.lineage, "history_part")
    fork = _part(History.fork, "history_part")
    gc = _part(Retainer.gc, "retainer")
    delete_thread = _part(Retainer.delete_thread, "retainer")
    delete_run = _part(Retainer.delete_run, "retainer")
    restore = _part(Archive.restore, "archive")
    archived = _part(Archive.archived, "archive")

    def get_artifact(self, ref: ArtifactRef, *, tenant: Tenant = DEFAULT_TENANT) -> bytes:
        """The bytes of an artifact of ``tenant``, checked against the reference (raises
        :class:`~perdure.core.artifacts.ArtifactMissingError` or
        :class:`~perdure.core.artifacts.ArtifactCorruptError`)."""
        return self.artifacts.get(tenant_of(tenant), ArtifactRef.from_json(ref), "get_artifact")
