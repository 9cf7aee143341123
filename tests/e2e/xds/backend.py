"""A gRPC backend for xDS e2e tests: answers every unary method with its own
name (raw bytes, no generated stubs), so a client sees which backend a call
reached. Prints its port on stdout, exits when stdin closes.

    /usr/bin/python3 backend.py NAME
"""
import sys
from concurrent import futures

import grpc


class Handler(grpc.GenericRpcHandler):
    def __init__(self, name):
        self.reply = name.encode()

    def service(self, details):
        return grpc.unary_unary_rpc_method_handler(lambda req, ctx: self.reply)


def main():
    name = sys.argv[1]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((Handler(name),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
