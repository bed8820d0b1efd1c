"""``perdure worker``: claim and advance runs in this process until stopped."""

from __future__ import annotations

from collections.abc import Callable

import click

from perdure.cli import stops
from perdure.cli.serve import log_options, serve_metrics
from perdure.cli.support import Settings, app_option, load_app, pass_settings, run_command
from perdure.core.history import Retention
from perdure.runtime.grouping import GroupCommit
from perdure.runtime.logs import configure as configure_logs
from perdure.runtime.runtime import Runtime
from perdure.runtime.supervisor import Supervisor
from perdure.runtime.worker import Worker
from perdure.store.url import opener, safe_url


@click.command()
@app_option
@click.option("--concurrency", default=1, show_default=True, help="Runs in flight at once.")
@click.option("--until-idle", is_flag=True, help="Exit when no run is claimable.")
@click.option("--lease", "lease_seconds", default=30.0, show_default=True)
@click.option("--poll", "poll_interval", default=0.2, show_default=True)
@click.option(
    "--metrics-port", type=click.IntRange(0, 65535), help="Serve Prometheus metrics on this port."
)
@click.option("--metrics-host", default="127.0.0.1", show_default=True)
@click.option(
    "--metrics-store",
    is_flag=True,
    help="Also export the store's gauges (runs, effects, queue) of every tenant: on one worker.",
)
@log_options
@click.option("--gc-every", type=float, help="Run gc when idle, at most every N seconds.")
@click.option("--gc-older-than", default="30d", show_default=True, help="Retention for --gc-every.")
@click.option(
    "--group-max",
    default=GroupCommit().max_batch,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Most runs one commit transaction carries (1: every run commits alone).",
)
@click.option(
    "--group-wait-ms",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0, 1000),
    help="How long a commit waits for others to join it (0: never).",
)
@click.option(
    "--group-in-flight",
    default=GroupCommit().in_flight,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Most commit transactions written at once on PostgreSQL (SQLite: always 1).",
)
@click.option(
    "--respawn",
    is_flag=True,
    help="Fork the worker from this warm process, and fork another at once when it dies.",
)
@pass_settings
@run_command
def worker(
    settings: Settings,
    app: str | None,
    concurrency: int,
    until_idle: bool,
    lease_seconds: float,
    poll_interval: float,
    metrics_port: int | None,
    metrics_host: str,
    metrics_store: bool,
    log_format: str,
    log_level: str,
    gc_every: float | None,
    gc_older_than: str,
    group_max: int,
    group_wait_ms: float,
    group_in_flight: int,
    respawn: bool,
) -> None:
    """Claim and advance runs until SIGTERM (finishes the current steps, releases the leases).

    With ``--respawn`` this process imports everything, then forks the worker, and beside it a
    standby (its store open, its app loaded, claiming nothing); the moment the worker dies
    (SIGKILL, out of memory, a crash in native code) the standby takes the dead one's runs over
    at once, without waiting for their leases to run out, and another standby is forked
    (:mod:`perdure.runtime.supervisor`).

    A SIGTERM that comes before the worker serves (while it imports the app, opens or migrates
    the store) ends it with exit 0 and one line: it has claimed nothing yet."""
    stops.hold_sigterm()  # first: a SIGTERM from here on is remembered, not fatal
    from perdure.cli.history import duration

    configure_logs(log_format, log_level.upper())
    grouping = GroupCommit(
        max_batch=group_max, max_wait=group_wait_ms / 1000, in_flight=group_in_flight
    )
    workflows = load_app(app)
    retention = Retention(finished=duration(gc_older_than, "--gc-older-than"))

    def body(ready: Callable[[], bool]) -> int:
        """The worker itself: a runtime on ``settings.db`` serving ``workflows``. ``ready`` is
        called once it is set up, before it claims anything; False means it is not wanted (a
        standby dismissed by the supervisor) and it leaves without working."""
        if stops.sigterm_came():
            return stopped_early()
        rt = Runtime(
            settings.db, workflows=workflows, lease_seconds=lease_seconds, group_commit=grouping
        )
        w = Worker(
            rt,
            concurrency=concurrency,
            poll_interval=poll_interval,
            on_stop=lambda run_id, why: click.echo(f"run {run_id} {why}"),
            on_error=lambda exc: click.echo(exc.one_line(), err=True),
            gc_every=gc_every,
            retention=retention,
            on_gc=click.echo,
        )
        w.install_signal_handlers()  # from here on SIGTERM drains
        if stops.sigterm_came():
            rt.close()
            return stopped_early()
        if not ready():
            rt.close()
            return 0
        w.on_drain = lambda: click.echo(
            "draining: the steps in flight finish, then their leases go"
        )
        if metrics_port is not None:
            serve_metrics(rt, metrics_port, metrics_host, store=metrics_store)
        serving = ", ".join(sorted(rt.workflows))
        click.echo(f"worker {rt.owner} x{concurrency} serving {serving} on {safe_url(settings.db)}")
        try:
            count = w.run(until_idle=until_idle)
        finally:
            rt.close()
        click.echo(f"worker stopped after {count} run executions")
        return 0

    if not respawn:
        body(lambda: True)
        return
    opener(settings.db)  # the store's modules too are imported once, here, before any fork
    if stops.sigterm_came():
        stopped_early()
        return
    code = Supervisor(run_command(body), on_event=click.echo).run()
    if code:
        raise SystemExit(code)


def stopped_early() -> int:
    """Say that a SIGTERM came before the worker served; its exit code (0)."""
    click.echo("worker stopped before it served: SIGTERM came while it was starting")
    return 0
