"""gRPC C-core's xDS client (Debian python3-grpcio) driven by a line protocol,
for e2e tests of coxswain's xDS server. The channel targets xds:///TARGET and
lives as long as the process, so a test can change the snapshot between
commands and watch the client follow. GRPC_XDS_BOOTSTRAP must be set.

Commands on stdin, one JSON line answered on stdout for each:
  call PATH N              N unary calls: {"ok": {backend: n}, "err": {code: n}, "detail": s}
  wait PATH BACKEND SECS   call until BACKEND answers: {"found": b, "t": mono, "n": calls}
  waitfail PATH SECS       call until a call fails: {"failed": b, "code": s, "detail": s, "t": mono}
  quit
The first line printed is {"ready": true}. Times are CLOCK_MONOTONIC seconds
(time.monotonic), comparable with the test's own clock.

    /usr/bin/python3 grpc_client.py TARGET
"""
import json
import sys
import time

import grpc


def one(stub, timeout=2.0):
    try:
        return stub(b"x", timeout=timeout).decode(), None, None
    except grpc.RpcError as e:
        return None, e.code().name, e.details()


def main():
    target = sys.argv[1]
    channel = grpc.insecure_channel("xds:///" + target)
    stubs = {}
    print(json.dumps({"ready": True}), flush=True)
    first = True
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "quit":
            break
        path = parts[1]
        stub = stubs.setdefault(path, channel.unary_unary(path))
        # The first call may wait for the xDS resources to arrive.
        timeout = 10.0 if first else 2.0
        first = False
        if cmd == "call":
            ok, err, detail = {}, {}, ""
            for _ in range(int(parts[2])):
                who, code, d = one(stub, timeout)
                timeout = 2.0
                if who is not None:
                    ok[who] = ok.get(who, 0) + 1
                else:
                    err[code] = err.get(code, 0) + 1
                    detail = d
            out = {"ok": ok, "err": err, "detail": detail}
        elif cmd == "wait":
            want, deadline = parts[2], time.monotonic() + float(parts[3])
            out = {"found": False, "n": 0}
            while time.monotonic() < deadline:
                who, _, _ = one(stub, min(timeout, 2.0))
                timeout = 2.0
                out["n"] += 1
                if who == want:
                    out = {"found": True, "t": time.monotonic(), "n": out["n"]}
                    break
                time.sleep(0.005)
        elif cmd == "waitfail":
            deadline = time.monotonic() + float(parts[2])
            out = {"failed": False}
            while time.monotonic() < deadline:
                who, code, detail = one(stub, 2.0)
                if who is None:
                    out = {"failed": True, "code": code, "detail": detail, "t": time.monotonic()}
                    break
                time.sleep(0.005)
        else:
            out = {"error": "unknown command " + cmd}
        print(json.dumps(out), flush=True)
    channel.close()


if __name__ == "__main__":
    main()
