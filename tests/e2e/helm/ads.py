"""A small gRPC ADS client (state of the world) over python3-grpcio, with
hand-written protobuf for the few fields it needs, so a test can hold
streams open, ACK and NACK what a replica pushes.

    s = AdsStream("127.0.0.1:18000", gateway="default/public")
    resp = s.subscribe(LDS)          # {"version_info", "type_url", "nonce", "resources"}
    s.ack(resp) / s.nack(resp, "rejected by the test")
    s.close()
"""
import queue

import grpc

LDS = "type.googleapis.com/envoy.config.listener.v3.Listener"
METHOD = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"


def _varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _ld(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _int(num, v):
    return _varint(num << 3) + _varint(v)


def _node(node_id, gateway):
    # Node{id=1, metadata=3 Struct{fields=1 map<string, Value{string_value=3}>}}
    entry = _ld(1, "coxswain.dev/gateway") + _ld(2, _ld(3, gateway))
    return _ld(1, node_id) + _ld(3, _ld(1, entry))


def request(type_url, node=b"", version="", nonce="", names=(), error=None):
    """DiscoveryRequest{version_info=1, node=2, resource_names=3, type_url=4,
    response_nonce=5, error_detail=6 google.rpc.Status{code=1, message=2}}."""
    b = b""
    if version:
        b += _ld(1, version)
    if node:
        b += _ld(2, node)
    for n in names:
        b += _ld(3, n)
    b += _ld(4, type_url)
    if nonce:
        b += _ld(5, nonce)
    if error:
        b += _ld(6, _int(1, 3) + _ld(2, error))  # INVALID_ARGUMENT
    return b


def parse_response(data):
    """DiscoveryResponse{version_info=1, resources=2, type_url=4, nonce=5}."""
    out = {"version_info": "", "type_url": "", "nonce": "", "resources": 0}
    i = 0
    while i < len(data):
        key = 0
        shift = 0
        while True:
            b = data[i]
            i += 1
            key |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        num, wt = key >> 3, key & 7
        if wt == 0:
            while data[i] & 0x80:
                i += 1
            i += 1
            continue
        if wt != 2:
            raise ValueError("unexpected wire type %d" % wt)
        ln = 0
        shift = 0
        while True:
            b = data[i]
            i += 1
            ln |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        val = data[i:i + ln]
        i += ln
        if num == 1:
            out["version_info"] = val.decode()
        elif num == 2:
            out["resources"] += 1
        elif num == 4:
            out["type_url"] = val.decode()
        elif num == 5:
            out["nonce"] = val.decode()
    return out


class AdsStream:
    """One ADS stream to |target| as node |node_id| of |gateway|."""

    def __init__(self, target, gateway, node_id="e2e", timeout=20):
        self.channel = grpc.insecure_channel(target)
        self.node = _node(node_id, gateway)
        self.timeout = timeout
        self.out = queue.Queue()
        call = self.channel.stream_stream(METHOD, request_serializer=lambda b: b,
                                          response_deserializer=lambda b: b)
        self.responses = call(iter(self.out.get, None))
        self.first = True

    def _send(self, **kw):
        node = self.node if self.first else b""
        self.first = False
        self.out.put(request(node=node, **kw))

    def _next(self):
        return parse_response(next(self.responses))

    def subscribe(self, type_url, names=()):
        self._send(type_url=type_url, names=names)
        return self._next()

    def ack(self, resp):
        self._send(type_url=resp["type_url"], version=resp["version_info"], nonce=resp["nonce"])

    def nack(self, resp, message):
        self._send(type_url=resp["type_url"], nonce=resp["nonce"], error=message)

    def close(self):
        self.out.put(None)
        self.channel.close()
