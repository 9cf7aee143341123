"""A gRPC backend for the xDS and gateway e2e tests: answers every unary
method with its own name (raw bytes, no generated stubs), so a client sees
which backend a call reached. It listens on HOST (default 127.0.0.1) and
PORT (default: any free one), so several backends can share one
EndpointSlice port on 127.0.0.1, 127.0.0.2... A backend started with --fail
answers every call UNAVAILABLE (an endpoint outlier detection should
eject). Prints its port on stdout (or "bind-failed"), exits when stdin
closes.

    /usr/bin/python3 backend.py NAME [HOST [PORT]] [--fail]
"""
import sys
from concurrent import futures

import grpc


class Handler(grpc.GenericRpcHandler):
    def __init__(self, name, fail):
        self.reply = name.encode()
        self.fail = fail

    def call(self, req, ctx):
        if self.fail:
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "failing on purpose")
        return self.reply

    def service(self, details):
        return grpc.unary_unary_rpc_method_handler(self.call)


def main():
    args = [a for a in sys.argv[1:] if a != "--fail"]
    fail = "--fail" in sys.argv[1:]
    name = args[0]
    host = args[1] if len(args) > 1 else "127.0.0.1"
    want = int(args[2]) if len(args) > 2 else 0
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Handler(name, fail),))
    try:
        port = server.add_insecure_port("%s:%d" % (host, want))
    except RuntimeError:
        port = 0
    if not port:
        print("bind-failed", flush=True)
        return
    server.start()
    print(port, flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
