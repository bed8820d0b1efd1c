"""``perdure memory``: a tenant's long-term memory from the command line: list a namespace,
show an item, erase a namespace (the right to delete). A namespace is written with ``/``
between its parts (``user/u1``)."""

from __future__ import annotations

import click
import orjson

from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.errors import InvalidInputError
from perdure.core.memory import MemoryItem, namespace_text
from perdure.core.values import JSON


def item_line(item: MemoryItem) -> str:
    """One item as a line: ``namespace key vN value`` (value as compact JSON)."""
    value = orjson.dumps(item.value).decode()
    expires = f"\texpires {item.expires_at.isoformat()}" if item.expires_at else ""
    return f"{namespace_text(item.namespace)}\t{item.key}\tv{item.version}\t{value}{expires}"


def where(pairs: tuple[str, ...]) -> dict[str, JSON] | None:
    """``--where FIELD=VALUE`` options as a filter (VALUE read as JSON, else as text)."""
    found: dict[str, JSON] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise InvalidInputError(
                f"--where {pair!r} is not FIELD=VALUE", fix="e.g. --where kind=fact"
            )
        try:
            found[name] = orjson.loads(raw)
        except orjson.JSONDecodeError:
            found[name] = raw
    return found or None


@click.group("memory")
def memory() -> None:
    """Read and erase the tenant's long-term memory (what steps write with ctx.memory)."""


@memory.command("list")
@click.argument("namespace_prefix", default="")
@click.option("--where", "pairs", multiple=True, help="FIELD=VALUE the value must hold.")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per item.")
@pass_settings
@run_command
def list_memory(
    settings: Settings, namespace_prefix: str, pairs: tuple[str, ...], limit: int, as_json: bool
) -> None:
    """List the items of NAMESPACE_PREFIX (e.g. user/u1) and the namespaces below it, one per
    line: namespace, key, version, value. Without a prefix, every item of the tenant."""
    with settings.reader() as rt:
        items = rt.memory.search(
            namespace_prefix, tenant=settings.tenant, filter=where(pairs), limit=limit
        )
    for item in items:
        click.echo(orjson.dumps(item.to_json()).decode() if as_json else item_line(item))


@memory.command("show")
@click.argument("namespace")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help="Print the item as JSON.")
@pass_settings
@run_command
def show_memory(settings: Settings, namespace: str, key: str, as_json: bool) -> None:
    """Show the item KEY of NAMESPACE (e.g. user/u1 prefs): its value, version, the run that
    wrote it last, and when it expires."""
    with settings.reader() as rt:
        item = rt.memory.get(namespace, key, tenant=settings.tenant)
    if as_json:
        click.echo(orjson.dumps(item.to_json()).decode())
        return
    click.echo(f"{namespace_text(item.namespace)} {item.key}: version {item.version}")
    click.echo(f"  value: {orjson.dumps(item.value).decode()}")
    click.echo(f"  written by run {item.run_id} at {item.updated_at.isoformat()}")
    expires = item.expires_at.isoformat() if item.expires_at else "never"
    click.echo(f"  expires: {expires}")


@memory.command("erase")
@click.argument("namespace_prefix")
@click.option("--as", "by", help="Who asked (recorded with the erasure).")
@pass_settings
@run_command
def erase_memory(settings: Settings, namespace_prefix: str, by: str | None) -> None:
    """Erase every item of NAMESPACE_PREFIX (e.g. user/u1) and the namespaces below it, expired
    or not, at once (the right to delete). Items a step commits later are written again."""
    with settings.runtime() as rt:
        erased = rt.memory.erase(namespace_prefix, tenant=settings.tenant, by=by)
    click.echo(f"erased {erased} memory item(s) under {namespace_prefix}")
