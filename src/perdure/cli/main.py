"""The ``perdure`` command line: parses, calls :class:`~perdure.runtime.runtime.Runtime`, prints.

Every error is one line naming the cause and the fix, with a non-zero exit code.
"""

from __future__ import annotations

import sys

import click
import orjson

from perdure.cli import children, render
from perdure.cli.client import Client, server_options
from perdure.cli.lazy import LazyGroup
from perdure.cli.support import (
    EXIT_ERROR,
    Settings,
    app_option,
    exit_for,
    parse_json,
    pass_settings,
    run_command,
)
from perdure.core.budget import Budget
from perdure.core.errors import InvalidInputError
from perdure.core.model import Durability, RunStatus
from perdure.runtime.admin.parts import DEFAULT_TENANT
from perdure.runtime.clock import default_clock
from perdure.store.url import default_url, open_store, safe_url

# Subcommands defined in other modules, imported only when used (see perdure.cli.lazy).
LAZY_COMMANDS = {
    "demo": "perdure.demos.cli:demo",
    "effects": "perdure.cli.effects:effects",
    "chaos": "perdure.cli.effects:chaos",
    "approvals": "perdure.cli.waits:approvals",
    "approve": "perdure.cli.waits:approve",
    "reject": "perdure.cli.waits:reject",
    "signal": "perdure.cli.waits:signal",
    "check": "perdure.cli.versions:check",
    "repair": "perdure.cli.versions:repair",
    "fail": "perdure.cli.versions:fail_run",
    "stream": "perdure.cli.streams:stream",
    "thread": "perdure.cli.streams:thread",
    "drills": "perdure.cli.drills:drills",
    "serve": "perdure.cli.serve:serve",
    "keys": "perdure.cli.serve:keys",
    "audit": "perdure.cli.audit:audit",
    "watch": "perdure.cli.watch:watch",
    "history": "perdure.cli.history:history",
    "fork": "perdure.cli.history:fork",
    "savepoint": "perdure.cli.history:savepoint",
    "gc": "perdure.cli.retention:gc",
    "delete": "perdure.cli.retention:delete",
    "restore": "perdure.cli.retention:restore",
    "memory": "perdure.cli.memory:memory",
    "worker": "perdure.cli.worker:worker",
    "workflows": "perdure.cli.workflows:workflows",
    "graph": "perdure.cli.graphs:graph",
}


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS)
@click.version_option(package_name="perdure", prog_name="perdure")
@click.option(
    "--db",
    default=default_url,
    show_default="PERDURE_DB or sqlite:///.perdure/perdure.db",
    help="Database URL.",
)
@click.option("--tenant", default=DEFAULT_TENANT, show_default=True, help="Tenant to act in.")
@click.pass_context
def main(ctx: click.Context, db: str, tenant: str) -> None:
    """perdure: durable execution for AI agents."""
    ctx.obj = Settings(db, tenant)


@main.command()
@pass_settings
@run_command
def migrate(settings: Settings) -> None:
    """Create or upgrade the database schema."""
    store = open_store(settings.db)
    applied = store.migrate(default_clock().now())
    version = store.schema_version()
    store.close()
    click.echo(f"applied {', '.join(applied)}" if applied else "schema is up to date")
    click.echo(f"schema version {version} at {safe_url(settings.db)}")


@main.command()
@click.argument("workflow")
@app_option
@click.option("--input", "input_json", help="Initial state as a JSON object.")
@click.option("--thread", help="Thread (conversation) id; default: a new thread.")
@click.option("--idempotency-key", help="A repeated key returns the first run.")
@click.option("--durability", type=click.Choice([d.value for d in Durability]), default="sync")
@click.option("--release", "releases", multiple=True, help="Release id, e.g. code=abc123.")
@click.option("--wait", is_flag=True, help="Advance the run here until it ends or waits.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option(
    "--policy",
    type=click.Choice(["enqueue", "interrupt", "reject"]),
    help="When the thread is busy: wait behind its run, interrupt it, or refuse.",
)
@server_options
@pass_settings
@run_command
def start(
    settings: Settings,
    workflow: str,
    app: str | None,
    input_json: str | None,
    thread: str | None,
    idempotency_key: str | None,
    durability: str,
    releases: tuple[str, ...],
    wait: bool,
    as_json: bool,
    policy: str | None,
    server: str | None,
    key: str | None,
) -> None:
    """Start a run of WORKFLOW (a worker or `perdure resume` advances it).

    With --wait the run is advanced in this process until it ends or waits; the exit code is
    then 1 when it ends FAILED, 3 when it needs a person and 4 when it is quarantined.
    """
    bad = [r for r in releases if not r.partition("=")[0] or not r.partition("=")[2]]
    if bad:
        raise InvalidInputError(
            f"--release {bad[0]!r} is not NAME=VALUE", fix="write e.g. --release code=abc123"
        )
    release = dict(r.partition("=")[::2] for r in releases)
    if server:
        if wait:
            raise InvalidInputError(
                "--wait advances the run in this process; through a server workers do",
                fix="leave --wait out and follow it with `perdure watch RUN --server URL`",
            )
        body = {
            "workflow": workflow,
            "input": parse_json(input_json, "--input"),
            "thread": thread,
            "idempotency_key": idempotency_key,
            "durability": durability,
            "release": release,
            "policy": policy,
        }
        found = Client(server, key).call("POST", "/v1/runs", body)
        line = f"run {found['run_id']} {found['status']}{render.next_step_note(found['next_step'])}"
        click.echo(orjson.dumps(found).decode() if as_json else line)
        return
    with settings.runtime(app, with_workflows=True, create=True) as rt:
        run = rt.start(
            workflow,
            parse_json(input_json, "--input"),
            tenant=settings.tenant,
            thread=thread,
            idempotency_key=idempotency_key,
            durability=durability,
            release=release,
            policy=policy,
        )
        if wait and not run.status.terminal:
            run = rt.resume(run.run_id, tenant=settings.tenant)
    if as_json:
        click.echo(orjson.dumps(render.run_json(run)).decode())
    else:
        click.echo(f"run {run.run_id} {run.status}{render.next_step_note(run.next_step)}")
        if wait and run.error is not None:  # FAILED, NEEDS_ATTENTION, QUARANTINED, CANCELLED
            err = run.error
            click.echo(f"  because {err.reason} at step {err.step}: {err.message}".rstrip(": "))
    if wait:
        exit_for(run)


@main.command()
@click.option("--status", "statuses", multiple=True, help="Filter by status (repeatable).")
@click.option("--quarantined", is_flag=True, help="Only QUARANTINED runs (with the reason).")
@click.option("--stuck", is_flag=True, help="RUNNING runs with no progress (all tenants).")
@click.option("--threshold", default=300.0, show_default=True, help="Seconds, for --stuck.")
@click.option("--workflow", help="Filter by workflow name.")
@click.option("--thread", help="Filter by thread id.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--watch", "watching", is_flag=True, help="Refresh every second until Ctrl-C or SIGTERM."
)
@click.option("--parent", "parent", help="Only the child runs of this run (by key).")
@pass_settings
@run_command
def runs(
    settings: Settings,
    statuses: tuple[str, ...],
    quarantined: bool,
    stuck: bool,
    threshold: float,
    workflow: str | None,
    thread: str | None,
    limit: int,
    as_json: bool,
    watching: bool,
    parent: str | None,
) -> None:
    """List runs, newest first (with --parent: a run's children, by key)."""
    if watching:
        from perdure.cli.watch import watch_runs

        watch_runs(settings, statuses, workflow, thread, limit)
        return
    if parent is not None:
        with settings.reader() as rt:
            kids = rt.children(parent, tenant=settings.tenant)[:limit]
            found = [rt.get(k.run_id, tenant=settings.tenant) for k in kids]
        if as_json:
            rows = [
                {**render.run_json(r), "child_key": k.key} for k, r in zip(kids, found, strict=True)
            ]
            click.echo(orjson.dumps(rows).decode())
        else:
            click.echo(render.runs_table(found))
        return
    if stuck:
        with settings.reader() as rt:
            found = rt.activity.stuck(threshold_seconds=threshold, limit=limit)
        click.echo(
            render.runs_table(found)
            if not as_json
            else orjson.dumps([render.run_json(r) for r in found]).decode()
        )
        return
    if quarantined:
        statuses = (*statuses, "QUARANTINED")
    with settings.reader() as rt:
        found = rt.runs(
            tenant=settings.tenant, status=statuses, workflow=workflow, thread=thread, limit=limit
        )
    if as_json:
        click.echo(orjson.dumps([render.run_json(r) for r in found]).decode())
    else:
        click.echo(render.runs_table(found))


@main.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--events", default=10, show_default=True, help="How many recent events.")
@click.option("--at", "at_step", type=int, help="Show the state after step N (0: start).")
@pass_settings
@run_command
def show(settings: Settings, run_id: str, as_json: bool, events: int, at_step: int | None) -> None:
    """Show a run: status, next step, completed steps, messages, last events; with --at, its
    state at that step."""
    if at_step is not None:
        from perdure.cli.history import show_state_at

        show_state_at(settings, run_id, at_step, as_json)
        return
    with settings.reader() as rt:
        view = rt.status(run_id, tenant=settings.tenant, events=events)
        kids = rt.children(run_id, tenant=settings.tenant)
    if as_json:
        data = {
            **render.view_json(view),
            "children": [k.to_json() for k in kids],
            "branches": children.branches(view.effects),
        }
        click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    else:
        extra = children.children_text(kids, view.effects)
        click.echo(render.view_text(view) + (f"\n{extra}" if extra else ""))


@main.command()
@click.argument("run_id")
@app_option
@click.option("--at", "at_step", help="Continue at this step (runs that need a person).")
@click.option("--patch-state", help="State fields to overwrite, as a JSON object.")
@click.option("--add-steps", type=int, help="Raise the step budget by N.")
@click.option("--add-cost", type=float, help="Raise the cost budget by X.")
@click.option("--add-tokens", type=int, help="Raise the token budget by N.")
@click.option("--as", "by", help="Who takes over (recorded).")
@click.option("--request-id", help="Repeat-safe id of this request.")
@pass_settings
@run_command
def resume(
    settings: Settings,
    run_id: str,
    app: str | None,
    at_step: str | None,
    patch_state: str | None,
    add_steps: int | None,
    add_cost: float | None,
    add_tokens: int | None,
    by: str | None,
    request_id: str | None,
) -> None:
    """Advance a run inline from its last committed step until it ends or waits.

    A run that needs a person (NEEDS_ATTENTION, QUARANTINED) continues from its checkpoint,
    optionally at another step, with patched state or a larger budget; never from the start.
    Exits 1 when the run ends FAILED, 3 when it needs a person, 4 when it is quarantined.
    """
    more = None
    if add_steps is not None or add_cost is not None or add_tokens is not None:
        more = Budget(steps=add_steps, cost=add_cost, tokens=add_tokens)
    with settings.runtime(app, with_workflows=True) as rt:
        line, run = render.resumed(
            rt,
            run_id,
            settings.tenant,
            at=at_step,
            patch=parse_json(patch_state, "--patch-state"),
            add_budget=more,
            by=by,
            request_id=request_id,
        )
    click.echo(line)
    exit_for(run)


@main.command()
@click.argument("run_id")
@click.option("--reason", default="", help="Why (recorded in the run's events).")
@click.option("--request-id", help="Repeat-safe id of this request.")
@server_options
@pass_settings
@run_command
def cancel(
    settings: Settings,
    run_id: str,
    reason: str,
    request_id: str | None,
    server: str | None,
    key: str | None,
) -> None:
    """Cancel a run at its next step boundary (confirmed effects are compensated)."""
    if server:
        body = {"reason": reason, "request_id": request_id}
        found = Client(server, key).call("POST", f"/v1/runs/{run_id}/cancel", body)
        click.echo(f"run {run_id} {found['status']}")
        return
    with settings.runtime() as rt:
        before = rt.get(run_id, tenant=settings.tenant)
        run = rt.cancel(run_id, tenant=settings.tenant, reason=reason, request_id=request_id)
    if before.status.terminal:
        click.echo(f"run {run_id} already ended {run.status}; nothing to cancel")
    elif run.status is RunStatus.CANCEL_REQUESTED and run.owner:
        click.echo("cancel requested; waiting for the current step to finish")
    elif run.status is RunStatus.CANCEL_REQUESTED:
        click.echo("cancel requested; a worker (or `perdure resume`) compensates and finishes it")
    else:
        click.echo(f"run {run_id} {run.status}")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def workers(settings: Settings, as_json: bool) -> None:
    """List live workers (and those that left in the last hour)."""
    with settings.reader() as rt:
        found = rt.activity.workers()
        now = rt.clock.now()
    if as_json:
        click.echo(orjson.dumps([render.worker_json(w, now) for w in found]).decode())
    else:
        click.echo(render.workers_table(found, now))


def run() -> None:
    """The ``perdure`` console script: :func:`main`, with click's own usage errors (an unknown
    option, a value of the wrong type) printed as one line and exit code 1, like every other
    error."""
    try:
        code = main.main(standalone_mode=False)
    except click.ClickException as exc:
        where = exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx else "perdure"
        error = InvalidInputError(exc.format_message(), fix=f"see `{where} --help`")
        click.echo(error.one_line(), err=True)
        sys.exit(EXIT_ERROR)
    except click.Abort:
        click.echo("error[aborted]: stopped at the user's request", err=True)
        sys.exit(EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
