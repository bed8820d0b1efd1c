"""``perdure watch RUN``: follow a run live in the terminal, from the database or a server."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from typing import Any

import click
import orjson

from perdure.cli import render
from perdure.cli.client import Client
from perdure.cli.stops import until_stopped
from perdure.cli.support import Settings, exit_for, pass_settings, run_command
from perdure.core.model import Run, RunStatus
from perdure.core.shapes import event_json
from perdure.runtime.runtime import Runtime

WAITS = {
    RunStatus.WAITING_APPROVAL: "waiting for a decision",
    RunStatus.WAITING_EXTERNAL: "waiting for a signal or a timer",
    RunStatus.NEEDS_ATTENTION: "needs a person",
    RunStatus.QUARANTINED: "quarantined",
}


def event_line(event: dict[str, Any]) -> str:
    """One event as one line: position, time, type, step, what changed."""
    data = event.get("data")
    if event.get("type") == "status" and isinstance(data, dict):
        what = f"{data.get('from')} -> {data.get('to')}"
    else:
        what = "" if data is None else orjson.dumps(data).decode()
    at = str(event.get("at") or "")[11:19]
    step = event.get("step") or ""
    return f"#{event.get('seq'):<6} {at}  {event.get('type'):<16} {step:<14} {what}".rstrip()


def progress(run: Run, now: datetime) -> str:
    """The line shown while a run waits: what for, and for how long."""
    seconds = int((now - run.updated_at).total_seconds())
    waited = (
        f"{seconds // 3600}h{seconds // 60 % 60:02d}m"
        if seconds >= 3600
        else (f"{seconds // 60}m{seconds % 60:02d}s")
    )
    detail = ""
    if run.waiting is not None:
        detail = " " + orjson.dumps(run.waiting.to_json()).decode()
    return f"... {WAITS.get(run.status, str(run.status))} for {waited}{detail}"


@click.command()
@click.argument("run_id")
@click.option("--server", envvar="PERDURE_SERVER", help="Follow through a perdure server.")
@click.option("--key", help="API key for --server (default: PERDURE_KEY).")
@click.option("--after", default=0, type=click.IntRange(0), help="Start after this event.")
@click.option("--poll", default=0.25, show_default=True, help="Seconds between reads (SQLite).")
@pass_settings
@run_command
def watch(
    settings: Settings, run_id: str, server: str | None, key: str | None, after: int, poll: float
) -> None:
    """Follow RUN_ID live: one line per event, a progress line while it waits, until it ends.

    Exits like `perdure resume`: 1 when it ends FAILED (3 needs a person, 4 quarantined do not
    end a watch: it keeps following). SIGTERM or SIGINT (Ctrl-C) stops watching: exit 0.
    """
    with until_stopped():
        follow_run(settings, run_id, server, key, after, poll)


def follow_run(
    settings: Settings, run_id: str, server: str | None, key: str | None, after: int, poll: float
) -> None:
    """What ``perdure watch`` does until the run ends (see :func:`watch`)."""
    if server:
        client = Client(server, key)
        for event in client.events(run_id, after):
            if event is None:
                break
            click.echo(event_line(event))
        final = client.call("GET", f"/v1/runs/{run_id}")
        click.echo(f"run {run_id} ended {final['status']}")
        if final["status"] == "FAILED":
            sys.exit(1)
        return
    with settings.reader() as rt:
        run = follow(rt, settings.tenant, run_id, after, poll)
    click.echo(f"run {run_id} ended {run.status}")
    exit_for(run)


def follow(rt: Runtime, tenant: str, run_id: str, after: int, poll: float) -> Run:
    """Print the run's events from the database until it ends; return it."""
    cursor = after
    tty = sys.stdout.isatty()
    shown = ""
    while True:
        run = rt.get(run_id, tenant=tenant)
        found = rt.activity.events(run_id, tenant=tenant, after=cursor)
        if found and shown and tty:
            click.echo("\r\x1b[2K", nl=False)
            shown = ""
        for event in found:
            click.echo(event_line(event_json(event)))
            cursor = event.seq
        if run.status.terminal and not found:
            return run
        if run.status in WAITS and not found:
            line = progress(run, rt.clock.now())
            if tty:
                click.echo("\r\x1b[2K" + line, nl=False)
                shown = line
            elif not shown:
                click.echo(line)
                shown = line
        if rt.activity.wait_for_events(poll) is None:
            time.sleep(poll)


def watch_runs(
    settings: Settings,
    statuses: tuple[str, ...],
    workflow: str | None,
    thread: str | None,
    limit: int,
    interval: float = 1.0,
) -> None:
    """``perdure runs --watch``: the runs table, redrawn when it changes, until SIGTERM or
    SIGINT (Ctrl-C), which end it with exit 0."""
    shown = ""
    with until_stopped(), settings.reader() as rt:
        while True:
            found = rt.runs(
                tenant=settings.tenant,
                status=statuses,
                workflow=workflow,
                thread=thread,
                limit=limit,
            )
            table = render.runs_table(found)
            if table != shown:
                if sys.stdout.isatty():
                    click.echo("\x1b[H\x1b[2J", nl=False)
                click.echo(table)
                shown = table
            if rt.activity.wait_for_events(interval) is None:
                time.sleep(interval)
