"""The command line as a client of a perdure server (``--server URL --key KEY``, or
``PERDURE_SERVER`` and ``PERDURE_KEY``): the server authenticates the key, so what a person
does is recorded as the key's principal, not as a name they typed."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click
import orjson

from perdure.core.errors import ConfigError, PerdureError, StoreUnavailableError


class RemoteError(PerdureError):
    """An error the server answered with; keeps the server's code."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message, fix=fix or None)
        self.code = code


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise ConfigError(
            "talking to a server needs httpx", fix="pip install 'perdure[server]'"
        ) from None
    return httpx


class Client:
    """A perdure server at ``url``, as the principal of ``key``."""

    def __init__(self, url: str, key: str | None) -> None:
        key = key or os.environ.get("PERDURE_KEY")
        if not key:
            raise ConfigError("no API key for the server", fix="pass --key or set PERDURE_KEY")
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {key}"}
        self.httpx = _httpx()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One JSON request; a refused one raises the server's error (same code)."""
        try:
            response = self.httpx.request(
                method, self.url + path, json=body, headers=self.headers, timeout=30
            )
        except self.httpx.HTTPError as exc:
            raise StoreUnavailableError(
                f"cannot reach the server at {self.url}: {exc}",
                fix="check --server and that `perdure serve` runs",
            ) from None
        found = orjson.loads(response.content) if response.content else None
        if response.status_code >= 400:
            error = (found or {}).get("error", {}) if isinstance(found, dict) else {}
            raise RemoteError(
                error.get("code", "server_error"),
                error.get("message", f"HTTP {response.status_code}"),
                error.get("fix", ""),
            )
        return found

    def events(self, run_id: str, after: int = 0) -> Iterator[dict[str, Any] | None]:
        """The run's events from the server's stream, reconnecting with Last-Event-ID when
        the connection drops; ``None`` marks the end of the run."""
        cursor = after
        failures = 0
        while True:
            headers = {**self.headers, "Last-Event-ID": str(cursor)}
            try:
                with self.httpx.stream(
                    "GET", f"{self.url}/v1/runs/{run_id}/events", headers=headers, timeout=None
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                        error = orjson.loads(response.content).get("error", {})
                        raise RemoteError(
                            error.get("code", "server_error"),
                            error.get("message", ""),
                            error.get("fix", ""),
                        )
                    kind = "message"
                    for line in response.iter_lines():
                        failures = 0
                        if line.startswith("event:"):
                            kind = line[6:].strip()
                        elif line.startswith("data:") and kind == "end":
                            yield None
                            return
                        elif line.startswith("data:"):
                            event = orjson.loads(line[5:])
                            cursor = int(event["seq"])
                            yield event
                        elif not line:
                            kind = "message"
            except self.httpx.HTTPError as exc:
                failures += 1
                if failures > 5:
                    raise StoreUnavailableError(
                        f"lost the server at {self.url}: {exc}", fix="check the server"
                    ) from None


F = TypeVar("F", bound=Callable[..., Any])


def server_options(fn: F) -> F:
    """``--server URL`` (or ``PERDURE_SERVER``) and ``--key KEY`` (or ``PERDURE_KEY``): do the
    command through a perdure server, as the key's principal, instead of on the database."""
    fn = click.option("--key", help="API key for --server (default: PERDURE_KEY).")(fn)
    return click.option(
        "--server", envvar="PERDURE_SERVER", help="Act through a perdure server at this URL."
    )(fn)
