"""How the commands that run until they are stopped stop: on SIGTERM and SIGINT, with exit 0.

``perdure watch`` and ``perdure runs --watch`` run inside :func:`until_stopped`: either signal
ends them at once and quietly. That holds in a background job too, which a shell starts with
SIGINT ignored (so Python never installs its Ctrl-C handler and a plain ``KeyboardInterrupt``
never comes), and under a supervisor, a container runtime or a CI system, which stop with
SIGTERM.

``perdure worker`` calls :func:`hold_sigterm` first (``python -m perdure`` and the ``perdure``
script do so even before the command line's modules are imported, see :func:`early`): a SIGTERM
that comes while the worker still imports its app, opens or migrates the store is remembered,
and the worker's start asks :func:`sigterm_came` and exits 0 with one line instead of dying with
-15 (it has claimed nothing yet, so there is nothing to drain). Once the worker serves, its own
handlers drain it (:meth:`perdure.runtime.worker.Worker.install_signal_handlers`).

Standard library only: this module is imported before anything heavy.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from types import FrameType

STOPPING = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a command that runs until stopped."""

GROUP_OPTIONS = ("--db", "--tenant")
"""Options of ``perdure`` itself that take a value (see :func:`command_of`)."""

_came: list[int] = []


class SignalledStop(BaseException):
    """SIGTERM or SIGINT came while :func:`until_stopped` ran (a ``BaseException``, like
    ``KeyboardInterrupt``, so that no ``except Exception`` on the way swallows it)."""


@contextlib.contextmanager
def until_stopped() -> Iterator[None]:
    """Run the block until SIGTERM or SIGINT ends it (even a SIGINT the process was started
    ignoring); the block is left quietly, and the handlers are put back."""

    def stop(signum: int, frame: FrameType | None) -> None:
        for s in STOPPING:  # a second signal while the block unwinds changes nothing
            signal.signal(s, signal.SIG_IGN)
        raise SignalledStop(signum)

    previous = {s: signal.signal(s, stop) for s in STOPPING}
    try:
        yield
    except SignalledStop:
        pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def hold_sigterm() -> None:
    """From now on a SIGTERM is only remembered (see :func:`sigterm_came`), until the worker
    installs its own handlers."""

    def remember(signum: int, frame: FrameType | None) -> None:
        _came.append(signum)

    signal.signal(signal.SIGTERM, remember)


def sigterm_came() -> bool:
    """True if a SIGTERM came since :func:`hold_sigterm`."""
    return bool(_came)


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand of a ``perdure`` command line (``--db URL worker ...`` -> ``worker``)."""
    args = iter(argv)
    for arg in args:
        if arg in GROUP_OPTIONS:
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return None


def early(argv: Sequence[str]) -> None:
    """Before the command line is imported: a worker holds SIGTERM from here on."""
    if command_of(argv) == "worker":
        hold_sigterm()
