"""``perdure gc`` and ``perdure delete``: data that does not grow forever, and erasure."""

from __future__ import annotations

from datetime import timedelta

import click
import orjson

from perdure.cli.history import duration
from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.errors import InvalidInputError
from perdure.core.history import Retention


def _counts(rows: dict[str, int]) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(rows.items())) or "nothing"


@click.command()
@click.option(
    "--older-than", default="30d", show_default=True, help="Delete runs finished this long ago."
)
@click.option(
    "--keep",
    "keeps",
    multiple=True,
    help="Per workflow: NAME=DURATION, or NAME=forever (repeatable).",
)
@click.option(
    "--orphan-grace", default="1h", show_default=True, help="Spare unreferenced objects younger."
)
@click.option("--batch", default=100, show_default=True, help="Runs deleted per transaction.")
@click.option("--events-older-than", help="Delete events of runs finished this long ago.")
@click.option("--history-older-than", help="Delete state history of runs finished this long ago.")
@click.option("--archive", is_flag=True, help="Archive each run to object storage first.")
@click.option("--no-object-scan", is_flag=True, help="Skip listing the artifact store for orphans.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def gc(
    settings: Settings,
    older_than: str,
    keeps: tuple[str, ...],
    orphan_grace: str,
    batch: int,
    events_older_than: str | None,
    history_older_than: str | None,
    archive: bool,
    no_object_scan: bool,
    as_json: bool,
) -> None:
    """Delete finished runs past their retention (with their steps, state history, events,
    effects, messages and artifacts), orphaned uploads and unreferenced artifact objects.

    Live runs, runs with a live savepoint, and messages a live run's thread still has are
    never touched. Works in small transactions while workers run."""
    workflows: dict[str, timedelta | None] = {}
    for item in keeps:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise InvalidInputError(
                f"--keep {item!r} is not NAME=DURATION", fix="e.g. --keep refund=90d"
            )
        workflows[name] = None if value == "forever" else duration(value, "--keep")
    policy = Retention(
        finished=duration(older_than, "--older-than"),
        workflows=workflows,
        orphan_grace=duration(orphan_grace, "--orphan-grace"),
        batch=batch,
        events=None if events_older_than is None else duration(events_older_than, "--events"),
        history=None if history_older_than is None else duration(history_older_than, "--history"),
    )
    with settings.runtime() as rt:
        report = rt.retention.gc(policy, archive=archive, objects=not no_object_scan)
    if as_json:
        click.echo(orjson.dumps(report.to_json()).decode())
        return
    click.echo(
        f"gc: {report.runs} runs deleted ({_counts(report.rows)}); "
        f"{report.orphan_uploads} orphaned uploads, {report.objects_deleted} objects removed"
    )


@click.command()
@click.option("--thread", help="Erase this thread: all its runs and messages.")
@click.option("--run", "run_id", help="Erase this run only.")
@click.option("--as", "by", help="Who asked (recorded with the erasure).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def delete(
    settings: Settings, thread: str | None, run_id: str | None, by: str | None, as_json: bool
) -> None:
    """Erase a conversation (--thread) or a run (--run) completely: every row and the
    artifact objects nothing else uses. A record that it happened (ids and counts) is kept.
    Refused while a worker holds one of its runs: cancel first."""
    if (thread is None) == (run_id is None):
        raise InvalidInputError("give exactly one of --thread or --run", fix="see --help")
    with settings.runtime() as rt:
        if thread is not None:
            erased = rt.retention.delete_thread(thread, tenant=settings.tenant, by=by)
        else:
            erased = rt.retention.delete_run(run_id or "", tenant=settings.tenant, by=by)
    if as_json:
        click.echo(orjson.dumps(erased.to_json()).decode())
        return
    what = f"thread {thread}" if thread is not None else f"run {run_id}"
    click.echo(f"erased {what}: {_counts(erased.rows)}; {erased.objects_deleted} objects removed")


@click.command()
@click.argument("run_id", required=False)
@click.option("--list", "list_them", is_flag=True, help="List the archived runs.")
@pass_settings
@run_command
def restore(settings: Settings, run_id: str | None, list_them: bool) -> None:
    """Bring a run archived by `perdure gc --archive` back into the database (with its
    artifacts), or list the archived runs."""
    with settings.runtime() as rt:
        if list_them or run_id is None:
            found = rt.archive.list(tenant=settings.tenant)
            click.echo("\n".join(found) if found else "no archived runs")
            return
        run = rt.archive.restore(run_id, tenant=settings.tenant)
    click.echo(f"restored run {run.run_id} ({run.status}, {run.steps_done} steps)")
