"""A TCP relay that holds every chunk for a fixed time each way: a database "farther away".

On one machine a round trip to PostgreSQL costs about 0.05 ms, so removing round trips barely
shows. A managed database in another zone is 0.5-2 ms away. Run this relay in front of the
local server and point a benchmark at it to see what the round trips cost there:

    python benchmarks/slow_link.py --to 127.0.0.1:5432 --listen 127.0.0.1:6543 --delay-ms 0.5 &
    python benchmarks/round_trips.py --dsn postgresql://postgres@127.0.0.1:6543/test

Each chunk read from one side is written to the other ``--delay-ms`` after it arrived, in
order. The relay's event loop waits in whole milliseconds (epoll), so the delay it really
adds is printed at start: the median of ``SELECT 1`` round trips through it, against direct.
The relay uses CPU of its own, which the figures measured through it include.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from contextlib import suppress


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it was read."""
    loop = asyncio.get_running_loop()
    held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def forward() -> None:
        while True:
            due, chunk = await held.get()
            if not chunk:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(forward())
    with suppress(ConnectionError):
        while chunk := await reader.read(65536):
            held.put_nowait((loop.time() + delay, chunk))
    held.put_nowait((loop.time(), b""))
    with suppress(ConnectionError):
        await sender


async def serve(listen: tuple[str, int], to: tuple[str, int], delay: float) -> None:
    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*to)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pump(client_r, server_w, delay), pump(server_r, client_w, delay))

    server = await asyncio.start_server(relay, *listen)
    async with server:
        await server.serve_forever()


def select_one_ms(dsn: str, samples: int = 200) -> float:
    """Median ms of ``SELECT 1`` on one connection to ``dsn``."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        times = []
        for _ in range(samples):
            began = time.perf_counter()
            conn.execute("SELECT 1").fetchone()
            times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e3


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--to", default="127.0.0.1:5432", help="the server, host:port")
    parser.add_argument("--listen", default="127.0.0.1:6543", help="where to listen")
    parser.add_argument("--delay-ms", type=float, default=0.5, help="held this long each way")
    parser.add_argument("--check", help="a DSN of the server itself, to print the added delay")
    args = parser.parse_args()
    listen, to = address(args.listen), address(args.to)
    if args.check:
        import threading

        threading.Thread(
            target=lambda: asyncio.run(serve(listen, to, args.delay_ms / 1e3)), daemon=True
        ).start()
        time.sleep(0.5)  # the relay starts listening (a benchmark helper, not a test)
        direct = select_one_ms(args.check)
        host, port = listen
        relayed = select_one_ms(args.check.replace(f":{to[1]}/", f":{port}/"))
        print(f"SELECT 1: direct {direct:.3f} ms, through the relay {relayed:.3f} ms", flush=True)
        threading.Event().wait()
    asyncio.run(serve(listen, to, args.delay_ms / 1e3))


if __name__ == "__main__":
    main()
