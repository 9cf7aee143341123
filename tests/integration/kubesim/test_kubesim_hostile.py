"""kubesim: hostile-response fault actions (huge-body, deep-json, mutate,
respond) for GET, LIST and WATCH, and that kubesim's own memory does not
grow with the size it claims.
"""
import http.client
import json

from ksutil import KubeSim, Tap, check, check_eq, cm

t = Tap()
ks = KubeSim()
CMS = "/api/v1/namespaces/default/configmaps"


def rss_kb():
    with open("/proc/%d/status" % ks.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fetch(path, ua="victim"):
    c = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=30)
    try:
        c.request("GET", path, headers={"User-Agent": ua})
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read()
    finally:
        c.close()


def open_watch(path, ua="victim"):
    c = http.client.HTTPConnection("127.0.0.1", ks.port, timeout=30)
    c.request("GET", path, headers={"User-Agent": ua})
    return c, c.getresponse()


def read_line(resp, limit=1 << 30):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = resp.read1(1 << 20)
        if not chunk:
            break
        buf += chunk
        check(len(buf) <= limit, "line longer than %d" % limit)
    return buf


def setup():
    for n in ("a", "b"):
        st, _ = ks.request("POST", CMS, cm(n, {"k": "v"}))
        check_eq(st, 201)


def huge_body():
    size = 48 << 20
    before = rss_kb()
    ks.add_fault(user="victim", verb="list", resource="configmaps", action="huge-body",
                 bytes=size, count=1)
    st, ctype, body = fetch(CMS)
    check_eq((st, ctype), (200, "application/json"))
    check_eq(len(body), size)
    lst = json.loads(body)
    check_eq(lst["kind"], "ConfigMapList")
    item = lst["items"][0]
    check_eq((item["kind"], item["metadata"]["namespace"]), ("ConfigMap", "default"))
    check(len(item["metadata"]["annotations"]["kubesim.dev/pad"]) > size - 1024)
    grew = rss_kb() - before
    check(grew < 8 * 1024, "kubesim grew %d kB for a %d MiB body" % (grew, size >> 20))
    # count=1: the next list is the real one; other users are untouched
    st, _, body = fetch(CMS)
    check_eq(len(json.loads(body)["items"]), 2)
    # GET: one object of that size
    ks.add_fault(verb="get", resource="configmaps", name="a", action="huge-body",
                 bytes=1 << 20, count=1)
    st, _, body = fetch(CMS + "/a")
    check_eq(len(body), 1 << 20)
    check_eq(json.loads(body)["metadata"]["name"], "a")
    # WATCH: the first event is one line of that size, then the watch goes on
    ks.add_fault(verb="watch", resource="configmaps", action="huge-body", bytes=4 << 20,
                 count=1)
    c, resp = open_watch(CMS + "?watch=1&resourceVersion=0")
    line = read_line(resp)
    check_eq(len(line), 4 << 20)
    ev = json.loads(line)
    check_eq((ev["type"], ev["object"]["kind"]), ("ADDED", "ConfigMap"))
    check_eq(json.loads(read_line(resp))["object"]["metadata"]["name"], "a")
    c.close()
    ks.clear_faults()


def deep_json():
    ks.add_fault(verb="list", resource="configmaps", action="deep-json", depth=200000, count=1)
    st, _, body = fetch(CMS)
    check_eq(st, 200)
    check(b"[" * 200000 + b"]" * 200000 in body)
    try:
        json.loads(body)
        check(False, "200000 levels should exceed Python's recursion limit")
    except RecursionError:
        pass
    # a depth a parser can take still parses as a valid list
    ks.add_fault(verb="list", resource="configmaps", action="deep-json", depth=20, count=1)
    st, _, body = fetch(CMS)
    lst = json.loads(body)
    d, n = lst["items"][0]["kubesimDeep"], 0
    while isinstance(d, list) and d:
        d, n = d[0], n + 1
    check_eq(n, 19)
    ks.add_fault(verb="watch", resource="configmaps", action="deep-json", depth=5000, count=1)
    c, resp = open_watch(CMS + "?watch=1")
    line = read_line(resp)
    check(line.startswith(b'{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap"'),
          line[:80])
    check(b"[" * 5000 in line)
    c.close()
    ks.clear_faults()


def mutate():
    ks.add_fault(resource="configmaps", action="mutate", path="metadata.resourceVersion",
                 value=12345)
    st, _, body = fetch(CMS + "/a")
    check_eq(json.loads(body)["metadata"]["resourceVersion"], 12345)
    st, _, body = fetch(CMS)
    lst = json.loads(body)
    check_eq([i["metadata"]["resourceVersion"] for i in lst["items"]], [12345, 12345])
    check(isinstance(lst["metadata"]["resourceVersion"], str), "the list's own RV is intact")
    c, resp = open_watch(CMS + "?watch=1")
    ev = json.loads(read_line(resp))
    check_eq(ev["object"]["metadata"]["resourceVersion"], 12345)
    ks.request("POST", CMS, cm("c", {"k": "v"}))
    while ev["object"]["metadata"]["name"] != "c":
        ev = json.loads(read_line(resp))
    check_eq((ev["type"], ev["object"]["metadata"]["resourceVersion"]), ("ADDED", 12345))
    c.close()
    ks.clear_faults()
    # wrong types deeper in an otherwise valid object, and a removed field
    ks.add_fault(verb="get", resource="configmaps", action="mutate", path="data",
                 value=["not", "a", "map"], count=1)
    st, _, body = fetch(CMS + "/a")
    check_eq(json.loads(body)["data"], ["not", "a", "map"])
    ks.add_fault(verb="get", resource="configmaps", action="mutate", path="metadata.name",
                 delete=True, count=1)
    st, _, body = fetch(CMS + "/a")
    check("name" not in json.loads(body)["metadata"])
    # the store itself is untouched
    st, o = ks.request("GET", CMS + "/a")
    check_eq((o["metadata"]["name"], o["data"]), ("a", {"k": "v"}))
    st, s = ks.request("POST", "/_sim/faults", {"action": "mutate", "path": "x"})
    check_eq(st, 400)
    ks.clear_faults()


def respond():
    ks.add_fault(verb="list", resource="configmaps", action="respond", code=200,
                 body='{"kind":"ConfigMapList","items":"surprise"}', count=1)
    st, ctype, body = fetch(CMS)
    check_eq((st, ctype, body), (200, "application/json",
                                 b'{"kind":"ConfigMapList","items":"surprise"}'))
    ks.add_fault(verb="get", resource="configmaps", action="respond", code=500,
                 content_type="text/html", body="<html>proxy error</html>", count=1)
    st, ctype, body = fetch(CMS + "/a")
    check_eq((st, ctype, body), (500, "text/html", b"<html>proxy error</html>"))
    # a watch stream that starts with garbage, then is served as usual
    ks.add_fault(verb="watch", resource="configmaps", action="respond",
                 body='{"type":"ADDED","object":7}\n', count=1)
    c, resp = open_watch(CMS + "?watch=1")
    check_eq(read_line(resp), b'{"type":"ADDED","object":7}\n')
    check_eq(json.loads(read_line(resp))["object"]["metadata"]["name"], "a")
    c.close()
    # ... or ends right after it
    ks.add_fault(verb="watch", resource="configmaps", action="respond", body="not json",
                 end=True, count=1)
    c, resp = open_watch(CMS + "?watch=1")
    check_eq(resp.read(), b"not json")
    c.close()
    rules = ks.admin("GET", "/faults")["faults"]
    check_eq([(r["action"], r["hits"], r["end"]) for r in rules],
             [("respond", 1, False)] * 3 + [("respond", 1, True)])


cases = [setup, huge_body, deep_json, mutate, respond]
try:
    for c in cases:
        t.case(c.__name__, c)
    rc = ks.stop()
    t.case("clean shutdown", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
t.done()
