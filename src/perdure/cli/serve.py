"""``perdure serve`` (the HTTP server) and ``perdure keys`` (its API keys)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, TypeVar

import click
import orjson

from perdure.cli.support import Settings, app_option, load_app, pass_settings, run_command
from perdure.core.errors import ConfigError
from perdure.core.keys import ApiKey
from perdure.core.shapes import iso
from perdure.runtime.runtime import Runtime

F = TypeVar("F", bound=Callable[..., Any])


def log_options(fn: F) -> F:
    """``--log-format text|json`` and ``--log-level``: how the process logs to stderr (JSON:
    one object per line with run_id, step, attempt, fence...; ``info`` logs every step)."""
    fn = click.option(
        "--log-level",
        type=click.Choice(["debug", "info", "warning", "error"]),
        default="warning",
        show_default=True,
        help="Lowest level logged (info: every claim and step).",
    )(fn)
    return click.option(
        "--log-format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="How the process logs (JSON: one object per line with run_id, step, fence...).",
    )(fn)


@click.command()
@app_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--secure-cookies",
    is_flag=True,
    help="Mark the dashboard's cookies Secure (behind a proxy that ends TLS; over HTTPS they "
    "are anyway).",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Let pages of this origin (https://app.example.com) call the API from a browser; "
    "repeat for more. No cookies cross origins: the API takes bearer keys and stream tokens.",
)
@log_options
@pass_settings
@run_command
def serve(
    settings: Settings,
    app: str | None,
    host: str,
    port: int,
    secure_cookies: bool,
    cors_origins: tuple[str, ...],
    log_format: str,
    log_level: str,
) -> None:
    """Serve the HTTP API, live event streams, the dashboard and /metrics.

    Requests authenticate with API keys (`perdure keys create`); the dashboard logs a person
    in with a key and keeps a server-side session. The server starts runs and records
    decisions; workers (`perdure worker`) advance the runs. The API's reference is at /docs,
    its OpenAPI document at /openapi.json.
    """
    try:
        import uvicorn

        from perdure.server import create_app
    except ImportError as exc:
        raise ConfigError(
            f"the server needs the server extra ({exc.name} is missing)",
            fix="pip install 'perdure[server]'",
        ) from None
    from perdure.runtime.logs import configure
    from perdure.server.cors import checked_origins

    checked_origins(cors_origins)  # a bad origin is refused before anything starts
    configure(log_format, log_level.upper())
    sock = listening(host, port)
    rt = Runtime(settings.db, workflows=load_app(app))
    try:
        # open event streams end 5 s after SIGTERM; clients reconnect with Last-Event-ID
        served = create_app(rt, secure_cookies=secure_cookies, cors_origins=cors_origins)
        config = uvicorn.Config(served, log_level="warning", timeout_graceful_shutdown=5)
        # the socket listens already: a client that read this line can connect at once
        click.echo(f"serving on http://{host}:{port}/ (dashboard at /, API at /v1)")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        rt.close()


def listening(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; an address this process cannot listen on is
    refused at once, in one line."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            fix="pick a free --port (or another --host)",
        ) from None
    return sock


def serve_metrics(rt: Runtime, port: int, host: str, *, store: bool = False) -> None:
    """Serve the runtime's metrics on ``host:port`` (``perdure worker --metrics-port``), with
    the store's gauges when ``store`` (``--metrics-store``)."""
    try:
        from perdure.server.metrics import serve as serve_on
    except ImportError as exc:
        raise ConfigError(
            f"metrics need the server extra ({exc.name} is missing)",
            fix="pip install 'perdure[server]'",
        ) from None
    try:
        serve_on(rt, port, host, store=store)
    except OSError as exc:
        raise ConfigError(
            f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}",
            fix="pick a free --metrics-port (or --metrics-host)",
        ) from None
    click.echo(f"metrics on http://{host}:{port}/metrics")


@click.group()
def keys() -> None:
    """Make, list and revoke API keys (each speaks for a tenant, a name and roles)."""


def key_line(key: ApiKey) -> str:
    """One key as one line."""
    roles = ",".join(sorted(key.roles)) or "-"
    revoked = f"  revoked {iso(key.revoked_at)}" if key.revoked_at else ""
    return f"{key.key_id}  {key.name}  roles={roles}  created {iso(key.created_at)}{revoked}"


@keys.command("create")
@click.argument("name")
@click.option("--role", "roles", multiple=True, help="A role the key holds (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def create_key(settings: Settings, name: str, roles: tuple[str, ...], as_json: bool) -> None:
    """Make a key named NAME in --tenant; its secret is printed once, never stored."""
    with Runtime(settings.db) as rt:
        made = rt.keys.create(name, tenant=settings.tenant, roles=roles)
    if as_json:
        body = {"key_id": made.key.key_id, "name": name, "roles": sorted(made.key.roles)}
        click.echo(orjson.dumps({**body, "token": made.token}).decode())
        return
    click.echo(made.token)
    click.echo(
        f"key {made.key.key_id} for {name} in tenant {settings.tenant}: store it now, "
        "it is not shown again",
        err=True,
    )


@keys.command("list")
@click.option("--all", "show_all", is_flag=True, help="Revoked keys too.")
@pass_settings
@run_command
def list_keys(settings: Settings, show_all: bool) -> None:
    """List the tenant's keys (never their secrets)."""
    with settings.reader() as rt:
        found = rt.keys.list(tenant=settings.tenant, revoked=show_all)
    if not found:
        click.echo("no keys")
    for key in found:
        click.echo(key_line(key))


@keys.command("revoke")
@click.argument("key_id")
@pass_settings
@run_command
def revoke_key(settings: Settings, key_id: str) -> None:
    """Revoke KEY_ID at once (requests with it are refused from now on)."""
    with settings.runtime() as rt:
        key = rt.keys.revoke(key_id, tenant=settings.tenant)
    click.echo(f"revoked {key_line(key)}")
