"""What recording a model call costs, against the OpenAI SDK talking to a local stub server.

1. Overhead of ``ctx.model_call`` (intent, outcome, request hash, recorded reply) over a bare
   ``client.chat.completions.create`` on the same stub: ``--calls`` calls in one step, on a fresh
   SQLite file (and the PostgreSQL database ``PERDURE_BENCH_PG`` names, when set).
2. Streaming ``--tokens`` tokens through ``ctx.model_call(stream=True)`` against iterating the
   same SSE stream with the bare SDK: added latency per token, durable stream writes included
   (the reply's deltas go to its message stream in batches, ``Context._stream_sink``).

Run: ``python benchmarks/model_calls.py [--calls 200] [--tokens 10000]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import openai

from perdure import Context, Message, Runtime, Workflow, done, step
from perdure.providers.openai import OpenAIModel
from perdure.providers.stub import StubServer, openai_reply, openai_stream


@dataclass
class Empty:
    pass


def client(stub: StubServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=stub.url + "/v1", api_key="bench", max_retries=0)


def bare_calls(stub: StubServer, n: int) -> float:
    stub.script(*(openai_reply("ok") for _ in range(n)))
    c = client(stub)
    began = time.perf_counter()
    for i in range(n):
        c.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": f"question {i}"}]
        )
    return time.perf_counter() - began


def recorded_calls(stub: StubServer, n: int, db: str) -> float:
    stub.script(*(openai_reply("ok") for _ in range(n)))
    llm = OpenAIModel("gpt-test", client(stub))
    spent: list[float] = []

    @step
    def ask(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        for i in range(n):
            ctx.model_call(llm, [Message("user", f"question {i}")])
        spent.append(time.perf_counter() - began)
        return done(None)

    wf = Workflow("bench_calls", state=Empty, steps=[ask])
    with Runtime(db, workflows=[wf]) as rt:
        rt.start(wf)
        rt.run_until_idle()
    return spent[0]


def plain_effects(n: int, db: str) -> float:
    """The same number of plain ``ctx.effect`` calls with a no-op execute: the effect
    protocol's own cost (intent, executing, outcome: three durable writes)."""
    spent: list[float] = []

    @step
    def act(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        for i in range(n):
            ctx.effect(f"e{i}", target="t", operation="o", request=i, execute=lambda r, k: r)
        spent.append(time.perf_counter() - began)
        return done(None)

    wf = Workflow("bench_effects", state=Empty, steps=[act])
    with Runtime(db, workflows=[wf]) as rt:
        rt.start(wf)
        rt.run_until_idle()
    return spent[0]


def bare_stream(stub: StubServer, tokens: int) -> float:
    stub.script(openai_stream([f"t{i} " for i in range(tokens)]))
    began = time.perf_counter()
    stream = client(stub).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "go"}], stream=True
    )
    for _chunk in stream:
        pass
    return time.perf_counter() - began


def recorded_stream(stub: StubServer, tokens: int, db: str) -> float:
    stub.script(openai_stream([f"t{i} " for i in range(tokens)]))
    llm = OpenAIModel("gpt-test", client(stub))
    spent: list[float] = []

    @step
    def ask(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        count = sum(1 for d in ctx.model_call(llm, [Message("user", "go")], stream=True) if d.text)
        spent.append(time.perf_counter() - began)
        assert count == tokens
        return done(None)

    wf = Workflow("bench_stream", state=Empty, steps=[ask])
    with Runtime(db, workflows=[wf]) as rt:
        rt.start(wf)
        rt.run_until_idle()
    return spent[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=10_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="perdure-bench-"))
    dbs = {"sqlite": f"sqlite:///{folder / 'calls.db'}"}
    if os.environ.get("PERDURE_BENCH_PG"):  # a database of its own: it is migrated
        dbs["postgres"] = os.environ["PERDURE_BENCH_PG"]
    with StubServer() as stub:
        bare_calls(stub, 20)  # warm up the client and the server
        bare = bare_calls(stub, args.calls) / args.calls
        print(f"model calls ({args.calls}, one step, stub on 127.0.0.1)")
        print(f"  bare SDK call                 {bare * 1e6:9.0f} us")
        for name, db in dbs.items():
            rec = recorded_calls(stub, args.calls, db) / args.calls
            print(
                f"  ctx.model_call on {name:<10} {rec * 1e6:9.0f} us  "
                f"(+{(rec - bare) * 1e6:.0f} us, x{rec / bare:.2f})"
            )
            eff = plain_effects(args.calls, db.replace("calls.db", "effects.db")) / args.calls
            print(f"  no-op ctx.effect on {name:<8} {eff * 1e6:9.0f} us  (the protocol alone)")
        b = bare_stream(stub, args.tokens)
        print(f"stream of {args.tokens} tokens (durable stream, batches of 32)")
        print(f"  bare SDK iteration            {b * 1e6 / args.tokens:9.1f} us/token ({b:.2f} s)")
        for name, db in dbs.items():
            s = recorded_stream(stub, args.tokens, db.replace("calls.db", "stream.db"))
            print(
                f"  model_call(stream=True) {name:<6} {s * 1e6 / args.tokens:7.1f} us/token "
                f"({s:.2f} s, +{(s - b) * 1e6 / args.tokens:.1f} us/token)"
            )


if __name__ == "__main__":
    main()
