"""``perdure stream``: a message's durable token stream; ``perdure thread``: a thread's policy,
its active and queued runs, and messages from outside a run."""

from __future__ import annotations

import click
import orjson

from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.errors import InvalidInputError
from perdure.core.streams import StreamEntry
from perdure.core.threads import ThreadInfo, ThreadPolicy

POLICIES = click.Choice([p.value for p in ThreadPolicy])


def entry_json(entry: StreamEntry) -> dict[str, object]:
    """One stream entry as printed by ``perdure stream --json`` (one object per line)."""
    return {
        "message_id": entry.message_id,
        "seq": entry.seq,
        "attempt": entry.attempt,
        "kind": str(entry.kind),
        "text": entry.text,
    }


def entry_line(entry: StreamEntry) -> str:
    """One stream entry as a line: ``seq attempt kind text`` (text as a JSON string)."""
    text = orjson.dumps(entry.text).decode()
    return f"{entry.seq}\tattempt {entry.attempt}\t{entry.kind}\t{text}"


@click.command("stream")
@click.argument("message_id")
@click.option("--after", default=0, show_default=True, type=click.IntRange(0, 2**62))
@click.option("--follow", is_flag=True, help="Wait for more until the message is finished.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per entry.")
@pass_settings
@run_command
def stream(settings: Settings, message_id: str, after: int, follow: bool, as_json: bool) -> None:
    """Print MESSAGE_ID's stream entries after sequence number --after (one per line).

    Reconnect with --after set to the last seq printed to see every later entry exactly once.
    A ``superseded`` entry says that a crash cut the attempts before it: drop their text.
    """
    with settings.reader() as rt:
        if rt.store.stream_info(settings.tenant, message_id) is None:
            raise InvalidInputError(
                f"no stream of message {message_id!r} in tenant {settings.tenant!r}",
                fix="give the id of a streamed reply (`perdure show RUN` lists a run's "
                "messages; check --tenant)",
            )
        for entry in rt.threads.stream(
            message_id, tenant=settings.tenant, after=after, follow=follow
        ):
            click.echo(orjson.dumps(entry_json(entry)).decode() if as_json else entry_line(entry))


def thread_text(info: ThreadInfo) -> str:
    queued = ", ".join(info.queued) or "none"
    return (
        f"thread {info.thread_id}: policy {info.policy}, active {info.active or 'none'}, "
        f"queued {queued}, {info.inbox} message(s) in the inbox"
    )


@click.group("thread")
def thread() -> None:
    """A thread's policy, its runs (one at a time) and its inbox."""


@thread.command("show")
@click.argument("thread_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def thread_show(settings: Settings, thread_id: str, as_json: bool) -> None:
    """Show the thread's policy, the run that holds it and the runs queued behind it."""
    with settings.reader() as rt:
        info = rt.threads.get(thread_id, tenant=settings.tenant)
    click.echo(orjson.dumps(info.to_json()).decode() if as_json else thread_text(info))


@thread.command("policy")
@click.argument("thread_id")
@click.argument("policy", type=POLICIES)
@pass_settings
@run_command
def thread_policy(settings: Settings, thread_id: str, policy: str) -> None:
    """Set what a new run or message does while the thread is busy."""
    with settings.runtime() as rt:
        info = rt.threads.set_policy(thread_id, policy, tenant=settings.tenant)
    click.echo(thread_text(info))


@thread.command("say")
@click.argument("thread_id")
@click.argument("content")
@click.option("--role", default="user", show_default=True)
@click.option("--policy", type=POLICIES, help="Override the thread's policy for this message.")
@pass_settings
@run_command
def thread_say(
    settings: Settings, thread_id: str, content: str, role: str, policy: str | None
) -> None:
    """Add a message to the thread (queued until the active run's next boundary)."""
    with settings.runtime() as rt:
        delivery = rt.threads.post(thread_id, role, content, tenant=settings.tenant, policy=policy)
    click.echo(f"message {delivery} on thread {thread_id}")
