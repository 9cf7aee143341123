#!/usr/bin/env python3
"""End to end: keys only over SDS, with Python grpcio against `coxswain run`
on kubesim with default flags (authentication required; TokenReview from
kubesim's token file).

- A ServiceAccount of the Gateway's namespace gets its Listener with no key
  and no PEM inline (its TLS context names "secret:team-a/www" through SDS
  over ADS), and the key only in the SDS Secret it asks for.
- A ServiceAccount of another namespace gets no Secret: refused for the
  Gateway, and for its own Gateway it never receives Secrets that Gateway
  does not reference.
- Hostile: names it is not entitled to (another namespace's Secret, a
  Secret no Gateway references, made-up names, thousands of them) bring
  nothing and no crash; a mix brings exactly the entitled one.
- A Gateway with spec.xdsAccess.allowUnauthenticated serves its Listener to
  a client without credentials, never its Secrets.
- Rotation: the kubernetes.io/tls Secret changes in kubesim: the held
  stream gets the SDS Secret with a new version and the new key; no LDS
  push happens, and the Listener's version stays.
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
from sdslib import any_resources as resources  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402
from test_xds_auth import call, sa_token  # noqa: E402

TOKENS = dict(TOKENS)
TOK = {}
for k, args in {"a": ("team-a", "edge"), "b": ("team-b", "edge"),
                "o": ("team-open", "edge")}.items():
    TOK[k], TOKENS[TOK[k]] = sa_token(*args)


def tls_gateway(ns, secret):
    gw = gateway(ns, "gw", mode="envoy")
    gw["spec"]["bindPort"] = 8443
    gw["spec"]["tls"] = {"certificates": [{"secretRef": {"name": secret}}]}
    return gw


def type_of(resp):
    for num, wt, v in pb_fields(resp):
        if num == 4 and wt == 2:
            return v.decode()
    return ""


def make_world():
    w = World(TOKENS, ("coxswain-system", "team-a", "team-b", "team-open"))
    w.secret("team-a", "www", "www.crt", "www.key")
    w.secret("team-a", "unrelated", "shop.crt", "shop.key")  # referenced by no Gateway
    w.secret("team-b", "other", "shop.crt", "shop.key")
    w.secret("team-open", "open", "shop.crt", "shop.key")
    objs = []
    for ns, sec, dom in (("team-a", "www", "www.example.com"),
                         ("team-b", "other", "shop.example.com"),
                         ("team-open", "open", "open.example.com")):
        objs += [tls_gateway(ns, sec),
                 upstream_static(ns, "backend", [("127.0.0.1", 50051)]),
                 virtual_service(ns, "vs", [dom], [route("/", "backend")])]
    objs[6]["spec"]["xdsAccess"] = {"allowUnauthenticated": True}
    w.create(objs)
    w.serve("sds")
    return w


def main():
    t = Tap()
    w = make_world()
    P = w.rep.xds
    www_key = read("www.key")
    state = {}

    def listener(gw, **kw):
        code, details, resps = call(P, [req(LDS, gw)], **kw)
        check_eq(code, "OK", "LDS served (%s)" % details)
        return resps[0] if resps else b""

    def wait_served():
        wait_for(lambda: call(P, [req(LDS, "team-a/gw")], token=TOK["a"])[0] == "OK", 30,
                 what="team-a/gw translated")
        # every Gateway translated (its Secret stored)
        wait_for(lambda: call(P, [req(LDS, "team-open/gw")])[0] == "OK", 30,
                 what="team-open/gw translated")

    def nothing(gw, names, **kw):
        """A stream asking for |names| gets no response (the call's deadline
        ends it) and the server lives on."""
        code, details, resps = call(P, [req(SDS, gw, names)], timeout=2.0, **kw)
        check_eq(resps, [], "nothing served for %s" % (names[:3],))
        check(code in ("DEADLINE_EXCEEDED", "PERMISSION_DENIED", "UNAUTHENTICATED"),
              "ended by the deadline or a refusal: %s %s" % (code, details))
        return code

    def case_own_namespace():
        wait_served()
        l = listener("team-a/gw", token=TOK["a"])
        res = resources(l)
        check_eq([u for u, _ in res], [LDS], "one Listener")
        lb = res[0][1] if res else b""
        check(b"secret:team-a/www" in lb, "the Listener names its SDS Secret")
        check(www_key not in lb and b"PRIVATE KEY" not in lb and b"-----BEGIN" not in lb,
              "no key and no PEM inline in the Listener")
        state["lds_version"] = response_info(l)[0]
        # the key only in the Secret it asks for, on the same ADS stream
        keep = {}
        code, d, resps = call(P, [req(LDS, "team-a/gw")], token=TOK["a"], keep=keep)
        check_eq(code, "OK", d)
        try:
            v, n, _ = response_info(resps[0])
            keep["send"](req(LDS, "team-a/gw", version=v, nonce=n))
            keep["send"](req(SDS, "team-a/gw", ["secret:team-a/www"]))
            s = next(keep["call"])
            check_eq(type_of(s), SDS, "an SDS response")
            check_eq(response_info(s)[2], ["secret:team-a/www"], "exactly the Secret asked for")
            sb = resources(s)[0][1]
            check(www_key in sb, "the private key, in the SDS Secret")
            check(read("www.crt") in sb, "and its certificate chain")
            # held for the rotation case
            sv, sn, _ = response_info(s)
            keep["send"](req(SDS, "team-a/gw", ["secret:team-a/www"], version=sv, nonce=sn))
            state["keep"], state["sds_version"] = keep, sv
        except Exception:
            keep["stop"]()
            raise

    def case_other_namespace():
        before = w.pushes("SDS")
        # refused for team-a's Gateway, whatever type it asks for first
        code, d, resps = call(P, [req(SDS, "team-a/gw", ["secret:team-a/www"])],
                              token=TOK["b"])
        check_eq(code, "PERMISSION_DENIED", d)
        check_eq(resps, [], "no Secret")
        check("team-b/edge" in d, d)
        # its own Gateway serves it, but never team-a's Secret
        check(b"secret:team-b/other" in listener("team-b/gw", token=TOK["b"]), "own Listener")
        nothing("team-b/gw", ["secret:team-a/www"], token=TOK["b"])
        check_eq(w.pushes("SDS"), before, "no SDS push")

    def case_hostile_names():
        before = w.pushes("SDS")
        for names in (["secret:team-b/other"], ["secret:team-a/unrelated"],
                      ["configmap:team-a/x/ca.crt", "", "*", "secret:team-a/www/../../b"],
                      ["secret:team-a/%05d" % i for i in range(3000)]):
            nothing("team-a/gw", names, token=TOK["a"])
        check_eq(w.pushes("SDS"), before, "no SDS push")
        # a mix: exactly the entitled one
        keep = {}
        code, d, resps = call(P, [req(SDS, "team-a/gw", ["secret:team-b/other",
                                                           "secret:team-a/www",
                                                           "secret:team-a/unrelated"])],
                              token=TOK["a"], keep=keep)
        keep.get("stop", lambda: None)()
        check_eq(code, "OK", d)
        check_eq(response_info(resps[0])[2] if resps else None, ["secret:team-a/www"],
                 "only the Secret team-a/gw references")
        # the server is fine
        check(www_key not in listener("team-a/gw", token=TOK["a"]), "still serving")

    def case_unauthenticated_opt_in():
        l = listener("team-open/gw")
        check(b"secret:team-open/open" in l, "the opted-in Gateway's Listener, no credentials")
        nothing("team-open/gw", ["secret:team-open/open"])
        # the Secret exists: its namespace's ServiceAccount gets it
        code, d, resps = call(P, [req(SDS, "team-open/gw", ["secret:team-open/open"])],
                              token=TOK["o"])
        check_eq(code, "OK", d)
        check(resps and read("shop.key") in resps[0], "the key for team-open/edge")

    def case_rotation():
        keep = state.get("keep")
        check(keep is not None, "the held stream")
        if not keep:
            return
        try:
            time.sleep(0.5)  # the ACK of the held SDS response is in
            lds_before, sds_before = w.pushes("LDS"), w.pushes("SDS")
            s = tls_secret("team-a", "www", "www-rotated.crt", "www-rotated.key")
            w.ok(w.req("PUT", "/api/v1/namespaces/team-a/secrets/www", s))
            r = next(keep["call"])
            check_eq(type_of(r), SDS, "the push is an SDS response")
            v, n, names = response_info(r)
            check_eq(names, ["secret:team-a/www"], "the rotated Secret")
            check(v != state["sds_version"], "a new Secret version (%s)" % v)
            b = resources(r)[0][1]
            check(read("www-rotated.key") in b and www_key not in b, "the new key served")
            keep["send"](req(SDS, "team-a/gw", ["secret:team-a/www"], version=v, nonce=n))
            time.sleep(1.0)  # several debounce windows: an LDS push would have come
            check_eq(w.pushes("LDS"), lds_before, "no Listener push: Envoy does not drain")
            check_eq(w.pushes("SDS"), sds_before + 1, "one SDS push")
            check_eq(response_info(listener("team-a/gw", token=TOK["a"]))[0],
                     state["lds_version"], "the Listener's version stays")
        finally:
            keep["stop"]()

    try:
        t.case("ServiceAccount of the Gateway's namespace: Listener without key, key only "
               "in the SDS Secret it asks for", case_own_namespace)
        t.case("ServiceAccount of another namespace: no Secret", case_other_namespace)
        t.case("hostile: names not entitled to bring nothing, no crash", case_hostile_names)
        t.case("allowUnauthenticated: Listener without credentials, never Secrets",
               case_unauthenticated_opt_in)
        t.case("rotation: SDS Secret version and key change, the Listener's version stays",
               case_rotation)
    finally:
        w.close()
    t.done()


if __name__ == "__main__":
    main()
