"""`make run`'s stand-in for a Kubernetes Service in front of the replicas'
xDS ports: a TCP forwarder on 127.0.0.1:LISTEN that hands each new
connection to a replica that accepts it, starting from the next one in turn
(round robin, as kube-proxy spreads connections). A replica that was killed
refuses connections and is skipped; a proxy whose replica died sees its
stream end, reconnects here and lands on a live one.

    python3 mk/xds_service.py LISTEN_PORT BACKEND_PORT [BACKEND_PORT...]

Prints the listening port once ready. Stops on SIGTERM or SIGINT.
"""
import asyncio
import signal
import sys

CONNECT_TIMEOUT = 2.0


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


class Service:
    def __init__(self, backends):
        self.backends = backends
        self.next = 0

    async def connect(self):
        """A connection to the first backend, from the next in turn, that
        accepts one; None when none does."""
        n = len(self.backends)
        start = self.next
        self.next = (self.next + 1) % n
        for k in range(n):
            port = self.backends[(start + k) % n]
            try:
                return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port),
                                              CONNECT_TIMEOUT)
            except (OSError, asyncio.TimeoutError):
                continue
        return None

    async def handle(self, creader, cwriter):
        up = await self.connect()
        if up is None:
            cwriter.close()
            return
        ureader, uwriter = up
        await asyncio.gather(pipe(creader, uwriter), pipe(ureader, cwriter))


async def main():
    listen = int(sys.argv[1])
    svc = Service([int(p) for p in sys.argv[2:]])
    server = await asyncio.start_server(svc.handle, "127.0.0.1", listen)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    asyncio.run(main())
