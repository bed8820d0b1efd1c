"""A scripted model: replies decided by your code, streamed word by word, with token usage; for
tests and demos (no network, no keys). It implements :class:`perdure.core.chat.ChatModel`."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from perdure.core.chat import Delta, ModelRequest, ModelResponse, Pricing, TokenUsage
from perdure.core.model import Message, ToolCall
from perdure.core.serde import dumps
from perdure.core.tokens import SimpleCounter

_PIECES = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class Scripted:
    """One scripted reply: its text and the tool calls it asks for."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


Script = Callable[[ModelRequest], Scripted]


class ScriptedModel:
    """A :class:`~perdure.core.chat.ChatModel` whose replies your code decides: no network, no
    keys, for tests and demos.

    ``ScriptedModel(name, script, *, pricing=None, on_delta=None)``:

    - ``name`` is the model id (recorded as each call's operation);
    - ``script`` is either a callable, ``script(request) -> Scripted``, which decides each reply
      from the :class:`~perdure.core.chat.ModelRequest` (the messages, the tools), or a list of
      :class:`Scripted` replies, given in order: the n-th request of this process gets the
      n-th item, but never an item the conversation is already past — a request that holds k
      assistant messages gets item k or a later one (wrapping around at the end). So a run
      resumed in a new process after a crash, whose context holds the replies it recorded,
      gets the script's next reply, not the first one again;
    - ``pricing`` (:class:`~perdure.core.chat.Pricing`) prices the counted tokens;
    - ``on_delta(n)`` is called after the n-th streamed delta (a test or demo may stop the
      process there).

    ``calls`` counts the requests this instance received (in this process).
    """

    def __init__(
        self,
        name: str,
        script: Script | Sequence[Scripted],
        *,
        pricing: Pricing | None = None,
        on_delta: Callable[[int], None] | None = None,
    ) -> None:
        self.name = name
        self.pricing = pricing or Pricing()
        self.on_delta = on_delta
        self.calls = 0
        self._lock = threading.Lock()
        self._script = script
        self._counter = SimpleCounter()

    def _next(self, request: ModelRequest) -> tuple[Scripted, TokenUsage]:
        with self._lock:
            self.calls += 1
            n = self.calls
        script = self._script
        if callable(script):
            reply = script(request)
        else:  # the next item, and never one the conversation has already had a reply for
            replied = sum(1 for m in request.messages if m.role == "assistant")
            reply = script[max(n - 1, replied) % len(script)]
        out = self._counter.count_messages([Message("assistant", reply.text, reply.tool_calls)])
        return reply, TokenUsage(self._counter.count_messages(request.messages), out)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """The scripted reply as one response."""
        reply, usage = self._next(request)
        finish = "tool_calls" if reply.tool_calls else "stop"
        return ModelResponse(Message("assistant", reply.text, reply.tool_calls), usage, finish)

    def stream(self, request: ModelRequest) -> Iterator[Delta]:
        """The scripted reply word by word, then its tool calls, then usage."""
        reply, usage = self._next(request)
        for n, piece in enumerate(_PIECES.findall(reply.text), start=1):
            yield Delta(text=piece)
            if self.on_delta is not None:
                self.on_delta(n)
        for i, call in enumerate(reply.tool_calls):
            args = call.arguments if isinstance(call.arguments, str) else None
            if args is None:
                args = dumps(call.arguments).decode()
            yield Delta(tool_index=i, tool_id=call.id, tool_name=call.name, tool_arguments=args)
        finish = "tool_calls" if reply.tool_calls else "stop"
        yield Delta(usage=usage, finish_reason=finish)
