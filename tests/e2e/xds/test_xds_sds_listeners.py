#!/usr/bin/env python3
"""End to end: a Gateway's listeners with their own certificates
(spec.listeners[].tls, no spec.tls), with Python grpcio against
`coxswain run` on kubesim with default flags (authentication required).

- The daemon keeps the Secrets and the ConfigMap only the listeners name
  (it drops unreferenced ones), so the Gateway is served: a proxy of its
  namespace gets two Listeners, each naming only its own certificate over
  SDS (the internal one its client CA too), and both listeners' Secrets
  and the CA in one SDS response.
- A proxy of another Gateway (another namespace) gets its own Secret, never
  the listeners' ones, even asking for them by name.
- Rotation of the internal listener's Secret in kubesim: the held stream
  gets the new key in that SDS Secret alone (the daemon re-reads a Secret
  only a listener names, and the Gateway is translated again).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "hostile"))
sys.path.insert(0, HERE)

from hostilelib import LDS, pb_fields, response_info  # noqa: E402
from objects import gateway, route, upstream_static, virtual_service  # noqa: E402
from replicas import wait_for  # noqa: E402
from sdslib import SDS, TOKENS, World, read, req, tls_secret  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402
from test_xds_auth import call, sa_token  # noqa: E402

TOKENS = dict(TOKENS)
TOK = {}
for k, args in {"a": ("team-a", "edge"), "b": ("team-b", "edge")}.items():
    TOK[k], TOKENS[TOK[k]] = sa_token(*args)

MINE = ["configmap:team-a/clients/ca.crt", "secret:team-a/internal", "secret:team-a/public"]


def resources(resp):
    """{resource name: value bytes} of a DiscoveryResponse."""
    out = {}
    for num, wt, v in pb_fields(resp):
        if num == 2 and wt == 2:
            f = {n: x for n, _, x in pb_fields(v)}
            val = f.get(2, b"")
            name = next((x.decode() for n, w, x in pb_fields(val) if n == 1 and w == 2), "")
            out[name] = val
    return out


def make_world():
    w = World(TOKENS, ("coxswain-system", "team-a", "team-b"))
    for ns, name, crt, key in (("team-a", "public", "www.crt", "www.key"),
                               ("team-a", "internal", "backend.crt", "backend.key"),
                               ("team-b", "other", "shop.crt", "shop.key")):
        w.secret(ns, name, crt, key)
    w.ok(w.req("POST", "/api/v1/namespaces/team-a/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"namespace": "team-a", "name": "clients"},
                "data": {"ca.crt": read("ca.crt").decode()}}))
    gw_a = gateway("team-a", "gw", mode="envoy")
    gw_a["spec"]["listeners"] = [
        {"name": "public", "port": 8443, "protocol": "HTTPS",
         "tls": {"certificates": [{"secretRef": {"name": "public"}}]}},
        {"name": "internal", "port": 9443, "protocol": "HTTPS",
         "tls": {"certificates": [{"secretRef": {"name": "internal"}}],
                 "clientValidation": {"caConfigMapRef": {"name": "clients"}}}},
    ]
    www = virtual_service("team-a", "www", ["www.example.com"], [route("/", "backend")])
    www["spec"]["listeners"] = ["public"]
    adm = virtual_service("team-a", "admin", ["backend.internal"], [route("/", "backend")])
    adm["spec"]["listeners"] = ["internal"]
    gw_b = gateway("team-b", "gw", mode="envoy")
    gw_b["spec"]["bindPort"] = 8443
    gw_b["spec"]["tls"] = {"certificates": [{"secretRef": {"name": "other"}}]}
    w.create([gw_a, www, adm, upstream_static("team-a", "backend", [("127.0.0.1", 50051)]),
              gw_b, virtual_service("team-b", "vs", ["shop.example.com"],
                                    [route("/", "backend")]),
              upstream_static("team-b", "backend", [("127.0.0.1", 50052)])])
    w.serve("sdsl")
    return w


def main():
    t = Tap()
    w = make_world()
    P = w.rep.xds
    state = {}

    def served(gw, tok, n):
        code, _, resps = call(P, [req(LDS, gw)], token=tok)
        return code == "OK" and resps and len(resources(resps[0])) == n

    def case_listeners_and_their_secrets():
        wait_for(lambda: served("team-a/gw", TOK["a"], 2), 30, what="team-a/gw's two Listeners")
        code, d, resps = call(P, [req(LDS, "team-a/gw")], token=TOK["a"])
        check_eq(code, "OK", d)
        ls = resources(resps[0])
        check_eq(sorted(ls), ["team-a/gw/internal", "team-a/gw/public"])
        pub, inn = ls.get("team-a/gw/public", b""), ls.get("team-a/gw/internal", b"")
        check(b"secret:team-a/public" in pub and b"secret:team-a/internal" not in pub,
              "public names its own certificate alone")
        check(b"configmap:team-a/clients/ca.crt" not in pub, "and no client CA")
        check(b"secret:team-a/internal" in inn and b"secret:team-a/public" not in inn,
              "internal names its own certificate alone")
        check(b"configmap:team-a/clients/ca.crt" in inn, "and its client CA")
        check(b"PRIVATE KEY" not in pub + inn, "no key inline")
        # every Secret of both listeners, on one ADS stream
        keep = {}
        code, d, resps = call(P, [req(LDS, "team-a/gw")], token=TOK["a"], keep=keep)
        check_eq(code, "OK", d)
        try:
            v, n, _ = response_info(resps[0])
            keep["send"](req(LDS, "team-a/gw", version=v, nonce=n))
            keep["send"](req(SDS, "team-a/gw", MINE))
            s = next(keep["call"])
            sv, sn, names = response_info(s)
            check_eq(sorted(names), MINE, "both listeners' Secrets and the CA")
            got = resources(s)
            check(read("www.key") in got.get("secret:team-a/public", b""), "public's key")
            check(read("backend.key") in got.get("secret:team-a/internal", b""),
                  "internal's key")
            check(read("ca.crt") in got.get("configmap:team-a/clients/ca.crt", b""), "the CA")
            keep["send"](req(SDS, "team-a/gw", MINE, version=sv, nonce=sn))
            state["keep"], state["sds_version"] = keep, sv
        except Exception:
            keep["stop"]()
            raise

    def case_other_gateway_gets_neither():
        wait_for(lambda: served("team-b/gw", TOK["b"], 1), 30, what="team-b/gw")
        # refused for team-a's Gateway
        code, d, resps = call(P, [req(SDS, "team-a/gw", MINE)], token=TOK["b"])
        check_eq(code, "PERMISSION_DENIED", d)
        check_eq(resps, [], "no Secret")
        # its own Gateway: its Secret only, never team-a's listeners' ones
        keep = {}
        code, d, resps = call(P, [req(SDS, "team-b/gw", MINE + ["secret:team-b/other"])],
                              token=TOK["b"], keep=keep)
        keep.get("stop", lambda: None)()
        check_eq(code, "OK", d)
        check_eq(response_info(resps[0])[2] if resps else None, ["secret:team-b/other"],
                 "only its own Secret")
        code, d, resps = call(P, [req(SDS, "team-b/gw", MINE)], token=TOK["b"], timeout=2.0)
        check_eq(resps, [], "nothing for the listeners' names")

    def case_rotation_of_a_listener_secret():
        keep = state.get("keep")
        check(keep is not None, "the held stream")
        if not keep:
            return
        try:
            time.sleep(0.5)  # the ACK of the held SDS response is in
            s = tls_secret("team-a", "internal", "www-rotated.crt", "www-rotated.key")
            w.ok(w.req("PUT", "/api/v1/namespaces/team-a/secrets/internal", s))
            deadline = time.time() + 20
            while time.time() < deadline:
                r = next(keep["call"])
                v, n, names = response_info(r)
                got = resources(r)
                if "secret:team-a/internal" in got:
                    break
            check(v != state["sds_version"], "a new SDS version")
            b = got.get("secret:team-a/internal", b"")
            check(read("www-rotated.key") in b and read("backend.key") not in b,
                  "the internal listener's new key")
            check_eq(names, ["secret:team-a/internal"], "that Secret alone is pushed")
        finally:
            keep["stop"]()

    try:
        t.case("a Gateway's listeners with their own certificates: each Listener names its "
               "own, the proxy gets both listeners' Secrets", case_listeners_and_their_secrets)
        t.case("a proxy of another Gateway gets neither", case_other_gateway_gets_neither)
        t.case("rotation of a listener's Secret reaches the held SDS stream",
               case_rotation_of_a_listener_secret)
    finally:
        w.close()
    t.done()


if __name__ == "__main__":
    main()
