"""kubesim: the forms a response can take (handlers/response.go of
kube-apiserver): PartialObjectMetadata and PartialObjectMetadataList on GET,
LIST and WATCH, Accept negotiation (negotiation/negotiate.go), Tables with a
CRD's printer columns, read by the real kubectl and the official Python
client.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from ksutil import KubeSim, Tap, check, check_eq, cm, kubectl_binary

t = Tap()
ks = KubeSim(args=["--bookmark-interval", "300ms"])
CMS = "/api/v1/namespaces/default/configmaps"
POML = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
POM = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
TABLE = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
         "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
KUBECTL = kubectl_binary()  # kubesim emulates 1.28
tmp = tempfile.mkdtemp(prefix="kubesim-forms-")
kenv = dict(os.environ, KUBECONFIG=ks.kubeconfig, HOME=tmp)

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.forms.test"},
    "spec": {"group": "forms.test", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "shortNames": ["wd"]},
             "versions": [{
                 "name": "v1", "served": True, "storage": True,
                 "subresources": {"status": {}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                     {"name": "Hosts", "type": "string", "jsonPath": ".spec.hosts[*]",
                      "description": "the hosts"},
                     {"name": "Ready", "type": "string",
                      "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                     {"name": "Weight", "type": "number", "jsonPath": ".spec.weight",
                      "priority": 1},
                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                 "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
PLAIN_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "plains.forms.test"},
    "spec": {"group": "forms.test", "scope": "Cluster",
             "names": {"plural": "plains", "singular": "plain", "kind": "Plain"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object",
                               "x-kubernetes-preserve-unknown-fields": True}}}]}}
WIDGETS = "/apis/forms.test/v1/namespaces/default/widgets"


def get(path, accept=None, query=""):
    hdrs = {"Accept": accept} if accept else {}
    return ks.request("GET", path + query, headers=hdrs)


def kubectl(*args, check_rc=True):
    p = subprocess.run([KUBECTL] + list(args), env=kenv, capture_output=True, text=True,
                       timeout=30)
    if check_rc and p.returncode != 0:
        raise AssertionError("kubectl %s failed (%d):\n%s%s" % (" ".join(args), p.returncode,
                                                               p.stdout, p.stderr))
    return p


def setup():
    for i in range(3):
        st, _ = ks.request("POST", CMS, cm("m%d" % i, {"k": "v" * 100}, labels={"i": str(i)}))
        check_eq(st, 201)
    for crd in (CRD, PLAIN_CRD):
        st, _ = ks.create("customresourcedefinitions", crd, group="apiextensions.k8s.io")
        check_eq(st, 201)
    w = {"apiVersion": "forms.test/v1", "kind": "Widget",
         "metadata": {"name": "w1", "labels": {"tier": "gold"}},
         "spec": {"size": 3, "weight": 1.5, "hosts": ["a.example", "b.example"]}}
    st, _ = ks.request("POST", WIDGETS, w)
    check_eq(st, 201)
    st, o = ks.request("PUT", WIDGETS + "/w1/status", dict(
        w, metadata={"name": "w1", "resourceVersion": ks.request("GET", WIDGETS + "/w1")[1][
            "metadata"]["resourceVersion"]},
        status={"conditions": [{"type": "Other", "status": "False"},
                               {"type": "Ready", "status": "True"}]}))
    check_eq(st, 200, o)


def partial_list():
    st, full = get(CMS)
    st, lst = get(CMS, POML)
    check_eq(st, 200)
    check_eq((lst["kind"], lst["apiVersion"]), ("PartialObjectMetadataList", "meta.k8s.io/v1"))
    check_eq(lst["metadata"]["resourceVersion"], full["metadata"]["resourceVersion"])
    check_eq(len(lst["items"]), 3)
    for p, f in zip(lst["items"], full["items"]):
        check_eq(sorted(p), ["apiVersion", "kind", "metadata"], "no data in a partial object")
        check_eq((p["kind"], p["apiVersion"]), ("PartialObjectMetadata", "meta.k8s.io/v1"))
        check_eq(p["metadata"], f["metadata"])
    # paging keeps its metadata
    st, page = get(CMS, POML, "?limit=2")
    check_eq(len(page["items"]), 2)
    check("continue" in page["metadata"], page["metadata"])
    check_eq(page["metadata"]["remainingItemCount"], 1)
    st, rest = get(CMS, POML, "?limit=2&continue=" + page["metadata"]["continue"])
    check_eq([i["metadata"]["name"] for i in rest["items"]], ["m2"])
    # an empty PartialObjectMetadataList is built afresh: items is null
    st, raw = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps",
                         headers={"Accept": POML}, raw=True)
    check('"items":null' in raw.decode(), raw)
    # v1beta1 as well
    st, lst = get(CMS, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1")
    check_eq((lst["kind"], lst["apiVersion"]), ("PartialObjectMetadataList", "meta.k8s.io/v1beta1"))
    check_eq(lst["items"][0]["apiVersion"], "meta.k8s.io/v1beta1")
    # custom resources too
    st, lst = get(WIDGETS, POML)
    check_eq(lst["items"][0]["metadata"]["labels"], {"tier": "gold"})
    check("spec" not in lst["items"][0])


def partial_single_and_not_acceptable():
    st, full = get(CMS + "/m1")
    st, p = get(CMS + "/m1", POM)
    check_eq(st, 200)
    check_eq(p, {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                 "metadata": full["metadata"]})
    st, s = get(CMS, POM)
    check_eq(st, 406)
    check_eq((s["reason"], s["code"]), ("NotAcceptable", 406))
    check_eq(s["message"], "you requested PartialObjectMetadata, but the requested object is a "
             "list (*core.ConfigMapList)")
    st, s = get(CMS + "/m1", POML)
    check_eq(st, 406)
    check_eq(s["message"], "you requested PartialObjectMetadataList, but the requested object is "
             "not a list (*core.ConfigMap)")
    st, s = get(WIDGETS + "/w1", POML)
    check_eq(s["message"], "you requested PartialObjectMetadataList, but the requested object is "
             "not a list (*unstructured.Unstructured)")
    # errors come first: a missing object is 404, untransformed
    st, s = get(CMS + "/nope", POM)
    check_eq((st, s["reason"]), (404, "NotFound"))
    # a write answers in the negotiated form too
    st, p = ks.request("POST", CMS, cm("m9", {"x": "y"}), headers={"Accept": POM})
    check_eq((st, p["kind"]), (201, "PartialObjectMetadata"))
    check("data" not in p)
    st, _ = ks.request("DELETE", CMS + "/m9")
    check_eq(st, 200)


def negotiation():
    # protobuf first (kubesim answers JSON), then the JSON clause: the
    # metadata client's header
    st, lst = get(CMS, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;"
                  "g=meta.k8s.io;v=v1," + POML + ",application/json")
    check_eq(lst["kind"], "PartialObjectMetadataList")
    # an unknown conversion is skipped, then plain JSON
    st, lst = get(CMS, "application/json;as=Foo;g=meta.k8s.io;v=v1,application/json")
    check_eq(lst["kind"], "ConfigMapList")
    # a conversion without group/version is not allowed: plain
    st, lst = get(CMS, "application/json;as=PartialObjectMetadataList")
    check_eq(lst["kind"], "ConfigMapList")
    # nothing acceptable at all: the first media type, untransformed (no 406)
    st, lst = get(CMS, "text/html")
    check_eq((st, lst["kind"]), (200, "ConfigMapList"))
    # q orders clauses
    st, lst = get(CMS, "application/json;q=0.5," + POML)
    check_eq(lst["kind"], "PartialObjectMetadataList")
    # wildcards take the conversion too
    st, lst = get(CMS, "*/*;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
    check_eq(lst["kind"], "PartialObjectMetadataList")
    # Table is only for json/yaml; for built-in kinds kubesim serves none
    st, lst = get(CMS, TABLE)
    check_eq(lst["kind"], "ConfigMapList")


def partial_watch():
    st, lst = get(CMS)
    rv = lst["metadata"]["resourceVersion"]
    w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv,
                 headers={"Accept": POM})
    check_eq(w.status, 200)
    ks.request("POST", CMS, cm("wx", {"big": "z" * 1000}))
    ev = w.next()
    check_eq((ev["type"], ev["object"]["kind"]), ("ADDED", "PartialObjectMetadata"))
    check_eq(ev["object"]["metadata"]["name"], "wx")
    check("data" not in ev["object"])
    ks.request("DELETE", CMS + "/wx")
    ev = w.next()
    check_eq((ev["type"], ev["object"]["kind"]), ("DELETED", "PartialObjectMetadata"))
    while True:
        ev = w.next()
        if ev["type"] == "BOOKMARK":
            break
    check_eq(ev["object"]["kind"], "PartialObjectMetadata")
    check_eq(ev["object"]["metadata"]["creationTimestamp"], None)
    w.close()
    # streaming list: initial events and the annotated bookmark, partial
    w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&sendInitialEvents=true"
                 "&resourceVersionMatch=NotOlderThan", headers={"Accept": POM})
    names = []
    while True:
        ev = w.next()
        if ev["type"] == "BOOKMARK":
            break
        check_eq(ev["object"]["kind"], "PartialObjectMetadata")
        names.append(ev["object"]["metadata"]["name"])
    check_eq(names, ["m0", "m1", "m2"])
    check_eq(ev["object"]["metadata"]["annotations"], {"k8s.io/initial-events-end": "true"})
    w.close()
    # a watch that asks the list form gets objects untransformed
    w = ks.watch(CMS + "?watch=1", headers={"Accept": POML})
    ev = w.next()
    check_eq(ev["object"]["kind"], "ConfigMap")
    w.close()
    # built-in bookmarks carry the Go zero creationTimestamp; CR ones do not
    w = ks.watch(CMS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv)
    ev = w.next()
    while ev["type"] != "BOOKMARK":
        ev = w.next()
    check_eq(ev["object"]["metadata"], {"resourceVersion": ev["object"]["metadata"][
        "resourceVersion"], "creationTimestamp": None})
    w.close()
    st, wl = get(WIDGETS)
    w = ks.watch(WIDGETS + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                 wl["metadata"]["resourceVersion"])
    ev = w.next()
    check_eq(ev["type"], "BOOKMARK")
    check_eq(sorted(ev["object"]["metadata"]), ["resourceVersion"])
    w.close()


def table_list():
    st, tb = get(WIDGETS, TABLE)
    check_eq(st, 200)
    check_eq((tb["kind"], tb["apiVersion"]), ("Table", "meta.k8s.io/v1"))
    cols = tb["columnDefinitions"]
    check_eq([c["name"] for c in cols], ["Name", "Size", "Hosts", "Ready", "Weight", "Age"])
    check_eq(cols[0]["format"], "name")
    check(cols[0]["description"].startswith("Name must be unique"), cols[0])
    check_eq(cols[2]["description"], "the hosts")
    check_eq(cols[1]["description"],
             "Custom resource definition column (in JSONPath format): .spec.size")
    check_eq([c["priority"] for c in cols], [0, 0, 0, 0, 1, 0])
    row = tb["rows"][0]
    # [*] prints only the first match, as the CR table convertor does
    check_eq(row["cells"][:5], ["w1", 3, "a.example", "True", 1.5])
    check(row["cells"][5].endswith("s"), row["cells"])
    check_eq(row["object"]["kind"], "PartialObjectMetadata")
    check_eq(row["object"]["metadata"]["labels"], {"tier": "gold"})
    check_eq(tb["metadata"]["resourceVersion"], get(WIDGETS)[1]["metadata"]["resourceVersion"])
    st, tb = get(WIDGETS, TABLE, "?includeObject=Object")
    check_eq(tb["rows"][0]["object"]["spec"]["size"], 3)
    st, tb = get(WIDGETS, TABLE, "?includeObject=None")
    check_eq(tb["rows"][0]["object"], None)
    st, s = get(WIDGETS, TABLE, "?includeObject=All")
    check_eq(st, 400)
    check_eq(s["message"], "Unable to convert to Table as requested: includeObject: Unsupported "
             "value: \"All\": supported values: \"Metadata\", \"None\", \"Object\"")
    # one object
    st, tb = get(WIDGETS + "/w1", TABLE)
    check_eq(len(tb["rows"]), 1)
    # no printer columns: Age
    st, _ = ks.request("POST", "/apis/forms.test/v1/plains",
                       {"apiVersion": "forms.test/v1", "kind": "Plain", "metadata": {"name": "p"}})
    st, tb = get("/apis/forms.test/v1/plains", TABLE)
    check_eq([c["name"] for c in tb["columnDefinitions"]], ["Name", "Age"])
    check_eq(tb["columnDefinitions"][1]["type"], "date")
    # CRDs print Name and Created At (RFC 3339)
    st, tb = get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", TABLE)
    check_eq([c["name"] for c in tb["columnDefinitions"]], ["Name", "Created At"])
    check(tb["rows"][0]["cells"][1].endswith("Z"), tb["rows"][0])
    # an empty list of custom resources has rows [], not null
    st, raw = ks.request("GET", "/apis/forms.test/v1/namespaces/kube-system/widgets",
                         headers={"Accept": TABLE}, raw=True)
    check('"rows":[]' in raw.decode(), raw)


def table_watch():
    st, wl = get(WIDGETS)
    w = ks.watch(WIDGETS + "?watch=1&resourceVersion=" + wl["metadata"]["resourceVersion"],
                 headers={"Accept": TABLE})
    for i in (2, 3):
        st, _ = ks.request("POST", WIDGETS, {"apiVersion": "forms.test/v1", "kind": "Widget",
                                             "metadata": {"name": "w%d" % i},
                                             "spec": {"size": i}})
        check_eq(st, 201)
    ev = w.next()
    check_eq((ev["type"], ev["object"]["kind"]), ("ADDED", "Table"))
    check_eq(ev["object"]["columnDefinitions"][1]["name"], "Size")
    check_eq(ev["object"]["rows"][0]["cells"][:2], ["w2", 2])
    ev = w.next()
    check_eq(ev["object"]["columnDefinitions"], None, "headers only once")
    check_eq(ev["object"]["rows"][0]["cells"][:2], ["w3", 3])
    w.close()


def with_kubectl():
    out = kubectl("get", "widgets").stdout.splitlines()
    check_eq(out[0].split(), ["NAME", "SIZE", "HOSTS", "READY", "AGE"])
    check_eq(out[1].split()[:4], ["w1", "3", "a.example", "True"])
    out = kubectl("get", "wd", "-o", "wide").stdout.splitlines()
    check_eq(out[0].split(), ["NAME", "SIZE", "HOSTS", "READY", "WEIGHT", "AGE"])
    check_eq(out[1].split()[4], "1.5")
    # --show-labels reads the rows' PartialObjectMetadata
    out = kubectl("get", "widgets", "--show-labels").stdout.splitlines()
    check_eq(out[1].split()[-1], "tier=gold")
    out = kubectl("get", "widgets", "-L", "tier").stdout.splitlines()
    check_eq(out[0].split()[-1], "TIER")
    check_eq(out[1].split()[-1], "gold")
    # --sort-by asks includeObject=Object
    out = kubectl("get", "widgets", "--sort-by=.spec.size").stdout.splitlines()
    check_eq([l.split()[0] for l in out[1:]], ["w2", "w1", "w3"])
    out = kubectl("get", "crd").stdout.splitlines()
    check_eq(out[0].split(), ["NAME", "CREATED", "AT"])
    # kubectl get -w: the Table watch
    p = subprocess.Popen([KUBECTL, "get", "widgets", "-w", "--request-timeout=4s"], env=kenv,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    ks.request("POST", WIDGETS, {"apiVersion": "forms.test/v1", "kind": "Widget",
                                 "metadata": {"name": "w4"}, "spec": {"size": 44}})
    try:
        out, _ = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    rows = [l.split() for l in out.splitlines()]
    check(["w4", "44"] in [r[:2] for r in rows], out)


def with_python_client():
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=ks.kubeconfig)
    resp = api.call_api("/api/v1/namespaces/{namespace}/configmaps", "GET",
                        path_params={"namespace": "default"},
                        header_params={"Accept": POML}, _preload_content=False,
                        auth_settings=["BearerToken"])
    body = json.loads(resp[0].data)
    check_eq(body["kind"], "PartialObjectMetadataList")
    check_eq(sorted(i["metadata"]["name"] for i in body["items"]),
             ["m0", "m1", "m2"])
    # the typed client still reads plain JSON
    v1 = client.CoreV1Api(api)
    check_eq(len(v1.list_namespaced_config_map("default").items), 3)


cases = [setup, partial_list, partial_single_and_not_acceptable, negotiation, partial_watch,
         table_list, table_watch, with_kubectl, with_python_client]
try:
    for c in cases:
        t.case(c.__name__, c)
    rc = ks.stop()
    t.case("clean shutdown", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
    shutil.rmtree(tmp, ignore_errors=True)
t.done()
