"""A local server that speaks the OpenAI chat-completions and Anthropic messages wire formats,
with scripted replies: JSON bodies, SSE streams (chunked, so a stream can be cut mid-body),
errors with ``Retry-After``. Point an official SDK at it with ``base_url`` to test an agent
without a network or keys. Standard library only; binds 127.0.0.1.

    with StubServer() as stub:
        stub.script(openai_reply("hello"))
        client = openai.OpenAI(base_url=stub.url + "/v1", api_key="test", max_retries=0)

Every request is kept in :attr:`StubServer.requests` (path and JSON body); a request with no
scripted reply left gets a 500.

Network faults, for testing what a client does when the wire fails: :meth:`StubServer.refuse`
stops listening (a connection is refused, the port stays held) until :meth:`StubServer.accept`;
a scripted :func:`hang_up` sends the headers and half the body, then closes the connection; a
scripted :func:`stall` answers nothing until the client gives up and hangs up (its timeout).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True, slots=True)
class StubReply:
    """One scripted HTTP reply: a JSON ``body``, or SSE ``events`` (``(event name or None,
    data)``; data ``"[DONE]"`` is sent as is), cut after ``drop_after`` events. ``hang_up``:
    the connection is closed halfway through the body; ``stall``: nothing is sent until the
    client hangs up."""

    status: int = 200
    body: Any = None
    events: tuple[tuple[str | None, Any], ...] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    hang_up: bool = False
    stall: bool = False


@dataclass(frozen=True, slots=True)
class StubRequest:
    """A request the stub received."""

    path: str
    body: Any
    headers: dict[str, str]


SHUTDOWN_POLL_SECONDS = 0.02
"""How often the serving thread checks whether it is told to stop."""


class StubServer:
    """See the module docstring. A context manager; :attr:`url` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        self.replies: deque[StubReply] = deque()
        self.requests: list[StubRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._open: set[socket.socket] = set()
        self._held: socket.socket | None = None
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def setup(self) -> None:
                super().setup()
                with stub._lock:
                    stub._open.add(self.connection)

            def finish(self) -> None:
                with stub._lock:
                    stub._open.discard(self.connection)
                super().finish()

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with stub._lock:
                    stub.requests.append(StubRequest(self.path, body, dict(self.headers)))
                    reply = stub.replies.popleft() if stub.replies else None
                if reply is None:
                    reply = StubReply(500, {"error": {"message": "no scripted reply"}})
                stub._send(self, reply)

        self._handler = Handler
        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._address: tuple[str, int] = self._server.server_address[:2]  # type: ignore[assignment]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        # A short poll: close() and refuse() return within it (the default waits half a second).
        self._server.serve_forever(poll_interval=SHUTDOWN_POLL_SECONDS)

    @property
    def url(self) -> str:
        """The server's base URL."""
        host, port = self._address
        return f"http://{host!s}:{port}"

    @property
    def count(self) -> int:
        """How many requests arrived."""
        with self._lock:
            return len(self.requests)

    def script(self, *replies: StubReply) -> None:
        """Queue replies, answered in order."""
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> StubServer:
        """Serve in a background thread."""
        self._thread.start()
        return self

    def refuse(self) -> None:
        """Stop listening and drop the open connections: every connection is refused until
        :meth:`accept` (the port stays held by a socket that does not listen)."""
        if self._held is not None:
            return
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.shutdown()
        self._server.server_close()
        held.bind(self._address)
        self._held = held
        self._drop_connections()

    def accept(self) -> None:
        """Listen again on the same port after :meth:`refuse`."""
        held, self._held = self._held, None
        if held is None:
            return
        self._server = _Server(self._address, self._handler)
        self._server.daemon_threads = True
        held.close()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving."""
        self._closing.set()
        if self._held is not None:
            self._held.close()
            self._held = None
        else:
            self._server.shutdown()
            self._server.server_close()
        self._drop_connections()

    def _drop_connections(self) -> None:
        with self._lock:
            open_now = list(self._open)
        for connection in open_now:
            with contextlib.suppress(OSError):  # already gone
                connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, handler: BaseHTTPRequestHandler, reply: StubReply) -> None:
        if reply.stall:
            self._wait_for_hang_up(handler)
            handler.close_connection = True
            return
        handler.send_response(reply.status)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if reply.events is None:
            data = json.dumps(reply.body).encode()
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            if reply.hang_up:
                handler.wfile.write(data[: len(data) // 2])
                handler.wfile.flush()
                handler.close_connection = True
                return  # fewer bytes than content-length: the reply was cut
            handler.wfile.write(data)
            return
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for n, (event, data) in enumerate(reply.events):
            if reply.drop_after is not None and n >= reply.drop_after:
                handler.wfile.flush()
                handler.close_connection = True
                return  # the body ends without its last chunk: a cut stream
            text = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
            chunk = frame.encode()
            handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def _wait_for_hang_up(self, handler: BaseHTTPRequestHandler) -> None:
        """Send nothing until the client closes the connection (or the stub closes)."""
        connection = handler.connection
        while not self._closing.is_set():
            readable, _, _ = select.select([connection], [], [], 0.05)
            if not readable:
                continue
            try:
                if not connection.recv(1, socket.MSG_PEEK):
                    return  # the client hung up
            except OSError:
                return
            return  # the client sent something else: it gave up on this request too


def hang_up(body: Any = None) -> StubReply:
    """A reply whose connection closes halfway through its (JSON) body."""
    return StubReply(body={"error": "cut"} if body is None else body, hang_up=True)


def stall() -> StubReply:
    """A reply that never comes: the server holds the request until the client hangs up."""
    return StubReply(stall=True)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is no news; anything else is printed as usual."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


# -- OpenAI chat completions ---------------------------------------------------------------------

Call = tuple[str, str, str]
"""A scripted tool call: (id, name, raw argument text)."""


def openai_reply(
    text: str | None = "",
    tool_calls: Sequence[Call] = (),
    usage: tuple[int, int] = (10, 5),
    model: str = "gpt-test",
) -> StubReply:
    """A chat.completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in tool_calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if tool_calls else "stop",
        "logprobs": None,
    }
    return StubReply(
        body={
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [choice],
            "usage": _openai_usage(usage),
        }
    )


def openai_stream(
    pieces: Sequence[str] = (),
    tool_calls: Sequence[Call] = (),
    usage: tuple[int, int] = (10, 5),
    model: str = "gpt-test",
    drop_after: int | None = None,
) -> StubReply:
    """A chat.completion.chunk SSE stream: the text in ``pieces``, each tool call's arguments
    in two fragments, the finish reason, a usage chunk, ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": p})) for p in pieces]
    for index, (call_id, name, args) in enumerate(tool_calls):
        head = {"index": index, "id": call_id, "type": "function"}
        first = {**head, "function": {"name": name, "arguments": args[: len(args) // 2]}}
        events.append((None, chunk({"tool_calls": [first]})))
        rest = {"index": index, "function": {"arguments": args[len(args) // 2 :]}}
        events.append((None, chunk({"tool_calls": [rest]})))
    events.append((None, chunk({}, "tool_calls" if tool_calls else "stop")))
    last = {**chunk({}), "choices": [], "usage": _openai_usage(usage)}
    events += [(None, last), (None, "[DONE]")]
    return StubReply(events=tuple(events), drop_after=drop_after)


def _openai_usage(usage: tuple[int, int]) -> dict[str, int]:
    return {
        "prompt_tokens": usage[0],
        "completion_tokens": usage[1],
        "total_tokens": usage[0] + usage[1],
    }


def openai_error(status: int, message: str = "error", retry_after: str | None = None) -> StubReply:
    """An OpenAI error body with ``status`` (and ``Retry-After``)."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"error": {"message": message, "type": "server_error", "code": None}}
    return StubReply(status, body, headers=headers)


# -- Anthropic messages --------------------------------------------------------------------------


def anthropic_reply(
    text: str = "",
    tool_calls: Sequence[tuple[str, str, Any]] = (),
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-test",
) -> StubReply:
    """A message body; tool calls are (id, name, input object)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tool_calls]
    return StubReply(body=_anthropic_message(content, usage, model, bool(tool_calls)))


def anthropic_stream(
    pieces: Sequence[str] = (),
    tool_calls: Sequence[Call] = (),
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-test",
    drop_after: int | None = None,
) -> StubReply:
    """A messages SSE stream: message_start, a text block in ``pieces``, a tool_use block per
    call with its raw JSON in two ``input_json_delta`` fragments, message_delta, message_stop."""
    start = _anthropic_message([], (usage[0], 1), model, False)
    start["stop_reason"] = None
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    index = 0
    if pieces:
        block = {"type": "text", "text": ""}
        events.append(_block_start(index, block))
        for p in pieces:
            delta = {"type": "text_delta", "text": p}
            events.append(_block_delta(index, delta))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call_id, name, args in tool_calls:
        events.append(
            _block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}})
        )
        for part in (args[: len(args) // 2], args[len(args) // 2 :]):
            events.append(_block_delta(index, {"type": "input_json_delta", "partial_json": part}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    stop = "tool_use" if tool_calls else "end_turn"
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return StubReply(events=tuple(events), drop_after=drop_after)


def _block_start(index: int, block: dict[str, Any]) -> tuple[str, Any]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _block_delta(index: int, delta: dict[str, Any]) -> tuple[str, Any]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _anthropic_message(
    content: list[dict[str, Any]], usage: tuple[int, int], model: str, tools: bool
) -> dict[str, Any]:
    return {
        "id": "msg_stub",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tools else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_error(
    status: int, kind: str = "api_error", retry_after: str | None = None
) -> StubReply:
    """An Anthropic error body with ``status`` (and ``Retry-After``)."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"type": "error", "error": {"type": kind, "message": kind}}
    return StubReply(status, body, headers=headers)
