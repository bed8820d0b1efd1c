"""The names the :class:`~perdure.runtime.runtime.Runtime` had before its verbs were grouped
by noun, and where each one went: kept for one release as deprecated aliases.

``rt.erase_memory(...)`` still works (it warns with a :class:`DeprecationWarning` and calls
``rt.memory.erase(...)``); the aliases are resolved on use, so they are not among the
Runtime's names (``dir(rt)``) nor in its documentation. docs/api.md has the same table.
"""

from __future__ import annotations

RENAMED: dict[str, str] = {
    # the activity part: feeds, audit, counts, queue, stuck runs, workers
    "events": "activity.events",
    "feed": "activity.feed",
    "audit": "activity.audit",
    "run_counts": "activity.run_counts",
    "runs_by_period": "activity.runs_by_period",
    "step_latencies": "activity.step_latencies",
    "effect_counts": "activity.effect_counts",
    "spend_counts": "activity.spend_counts",
    "queue": "activity.queue",
    "moved_since": "activity.moved_since",
    "last_event_seq": "activity.last_event_seq",
    "wait_for_events": "activity.wait_for_events",
    "stuck": "activity.stuck",
    "workers": "activity.workers",
    # the keys part (``rt.keys()`` itself is ``rt.keys.list()``, see Keys.__call__)
    "create_key": "keys.create",
    "revoke_key": "keys.revoke",
    "authenticate": "keys.authenticate",
    # the server's access: sessions and stream tokens (perdure.runtime.admin.credentials)
    "stream_token": "credentials.stream_token",
    "stream_access": "credentials.stream_access",
    "open_session": "credentials.open_session",
    "session_principal": "credentials.session_principal",
    "end_session": "credentials.end_session",
    "sessions": "credentials.sessions",
    # the effects part (``rt.effects(...)`` is ``rt.effects.list(...)``)
    "resolve_effect": "effects.resolve",
    # the versions part
    "check": "versions.check",
    "recover_readable": "versions.recover_readable",
    "fail": "versions.fail",
    "repair": "versions.repair",
    # the threads part
    "thread": "threads.get",
    "set_thread_policy": "threads.set_policy",
    "add_message": "threads.post",
    "stream": "threads.stream",
    # the history part (``rt.history(...)`` is ``rt.history.entries(...)``)
    "state_at": "history.state_at",
    "savepoint": "history.savepoint",
    "savepoints": "history.savepoints",
    "lineage": "history.lineage",
    "fork": "history.fork",
    "get_artifact": "history.artifact",
    # the retention and archive parts
    "gc": "retention.gc",
    "delete_thread": "retention.delete_thread",
    "delete_run": "retention.delete_run",
    "restore": "archive.restore",
    "archived": "archive.list",
    # the memory part (``rt.memory(...)`` is ``rt.memory.search(...)``)
    "memory_item": "memory.get",
    "erase_memory": "memory.erase",
    # parts under their old attribute names
    "timeline": "history",
    "retainer": "retention",
    "effect_admin": "effects",
    "memory_admin": "memory",
    # the wiring, now in one place
    "owner": "parts.owner",
    "workflows": "parts.workflows",
    "heartbeat": "services.heartbeat",
    "shutdown": "services.shutdown",
    "loop": "services.loop",
    "artifacts": "services.artifacts",
    "telemetry": "services.telemetry",
    "lease_seconds": "services.heartbeat.lease",
    "fleet": "activity.workers()",
    "advance_one": "run_until_idle(max_runs=1)",
}
"""Old name -> its path from the Runtime now (``credentials.*``: a
:class:`~perdure.runtime.admin.credentials.Credentials` of the runtime's parts, which the
server holds)."""

KEPT: dict[str, str] = {
    "lease_seconds": "_lease_seconds",
    "fleet": "_fleet",
    "advance_one": "_advance_one",
}
"""Old names whose replacement is not the same object (a timedelta for seconds, a verb for
an object, a count for a stop): they resolve to what the Runtime keeps for itself."""

CALLED: dict[str, str] = {
    "memory": "memory.search",
    "keys": "keys.list",
    "effects": "effects.list",
    "history": "history.entries",
}
"""Old verbs whose name is now a part's: calling the part does the old verb (and warns)."""
