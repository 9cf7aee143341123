"""kubesim: REST semantics and exact Status shapes (golden files).

Each case names the Kubernetes behaviour it pins down; goldens live in
tests/data/kubesim/ (uids and timestamps masked).
"""
import json

from ksutil import (KubeSim, Tap, check, check_eq, cm, golden, lease, raw)

ks = KubeSim(args=["--too-new-wait", "0s"])
t = Tap()
NS = "/api/v1/namespaces/default"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def create_sets_system_fields():
    st, o = ks.request("POST", NS + "/configmaps", cm("c1", {"k": "v"}))
    check_eq(st, 201)
    md = o["metadata"]
    check(len(md["uid"]) == 36, "uid")
    check(md["creationTimestamp"].endswith("Z") and len(md["creationTimestamp"]) == 20,
          "creationTimestamp RFC3339 seconds: %s" % md["creationTimestamp"])
    check("generation" not in md, "ConfigMaps have no generation")
    check(int(md["resourceVersion"]) > 0)
    st, l = ks.request("POST", LEASES, lease("l1"))
    check_eq(st, 201)
    check("generation" not in l["metadata"], "Leases have no generation")


def rv_is_one_global_counter():
    _, a = ks.request("POST", NS + "/configmaps", cm("rv-a"))
    _, b = ks.request("POST", LEASES, lease("rv-b"))
    _, c = ks.request("POST", NS + "/secrets", {"metadata": {"name": "rv-c"}})
    rvs = [int(x["metadata"]["resourceVersion"]) for x in (a, b, c)]
    check_eq(rvs, [rvs[0], rvs[0] + 1, rvs[0] + 2])
    _, lst = ks.request("GET", "/api/v1/configmaps")
    check_eq(int(lst["metadata"]["resourceVersion"]), rvs[2], "list RV is the global RV")


def get_and_list():
    st, o = ks.request("GET", NS + "/configmaps/c1")
    check_eq(st, 200)
    check_eq(o["data"], {"k": "v"})
    st, lst = ks.request("GET", NS + "/configmaps")
    check_eq(lst["kind"], "ConfigMapList")
    check_eq(lst["apiVersion"], "v1")
    names = [i["metadata"]["name"] for i in lst["items"]]
    check_eq(names, sorted(names), "items in key order")
    st, empty = ks.request("GET", "/api/v1/namespaces/kube-public/configmaps")
    check_eq(empty["items"], [], "empty list has items: []")
    st, txt = raw(ks, "GET", "/api/v1/namespaces/kube-public/configmaps")
    check('"items":[]' in txt, txt)


def update_conflict_golden():
    _, o = ks.request("GET", NS + "/configmaps/c1")
    stale = json.loads(json.dumps(o))
    o["data"] = {"k": "v2"}
    st, o2 = ks.request("PUT", NS + "/configmaps/c1", o)
    check_eq(st, 200)
    check(int(o2["metadata"]["resourceVersion"]) > int(o["metadata"]["resourceVersion"]))
    stale["data"] = {"k": "stale"}
    st, txt = raw(ks, "PUT", NS + "/configmaps/c1", stale)
    check_eq(st, 409)
    golden("status_409_conflict.json", txt)
    # the same on a Lease (group in kind and details)
    _, l = ks.request("GET", LEASES + "/l1")
    l2 = json.loads(json.dumps(l))
    l["spec"]["holderIdentity"] = "b"
    check_eq(ks.request("PUT", LEASES + "/l1", l)[0], 200)
    st, txt = raw(ks, "PUT", LEASES + "/l1", l2)
    check_eq(st, 409)
    golden("status_409_conflict_lease.json", txt)


def update_without_rv():
    # ConfigMap: unconditional update allowed
    _, o = ks.request("GET", NS + "/configmaps/c1")
    del o["metadata"]["resourceVersion"]
    o["data"] = {"k": "v3"}
    check_eq(ks.request("PUT", NS + "/configmaps/c1", o)[0], 200)
    # Lease: 422 "must be specified for an update"
    _, l = ks.request("GET", LEASES + "/l1")
    del l["metadata"]["resourceVersion"]
    st, txt = raw(ks, "PUT", LEASES + "/l1", l)
    check_eq(st, 422)
    golden("status_422_lease_missing_rv.json", txt)


def already_exists_and_not_found_golden():
    st, txt = raw(ks, "POST", NS + "/configmaps", cm("c1"))
    check_eq(st, 409)
    golden("status_409_already_exists.json", txt)
    st, txt = raw(ks, "GET", NS + "/configmaps/nope")
    check_eq(st, 404)
    golden("status_404_not_found.json", txt)
    st, txt = raw(ks, "GET", LEASES + "/nope")
    golden("status_404_not_found_lease.json", txt)
    st, txt = raw(ks, "GET", "/api/v1/nothing")
    check_eq(st, 404)
    golden("status_404_no_resource.json", txt)
    st, txt = raw(ks, "POST", "/api/v1/namespaces/absent/configmaps", cm("x", ns="absent"))
    check_eq(st, 404)
    golden("status_404_namespace.json", txt)


def noop_update_keeps_rv():
    _, o = ks.request("GET", NS + "/configmaps/c1")
    st, o2 = ks.request("PUT", NS + "/configmaps/c1", o)
    check_eq(st, 200)
    check_eq(o2["metadata"]["resourceVersion"], o["metadata"]["resourceVersion"], "no-op PUT")
    st, o3 = ks.request("PATCH", NS + "/configmaps/c1", {"data": o["data"]},
                        ctype="application/merge-patch+json")
    check_eq(o3["metadata"]["resourceVersion"], o["metadata"]["resourceVersion"], "no-op PATCH")
    _, lst = ks.request("GET", "/api/v1/configmaps")
    before = lst["metadata"]["resourceVersion"]
    ks.request("PUT", NS + "/configmaps/c1", o)
    _, lst = ks.request("GET", "/api/v1/configmaps")
    check_eq(lst["metadata"]["resourceVersion"], before, "global RV unchanged")


def system_fields_preserved():
    _, o = ks.request("GET", NS + "/configmaps/c1")
    o2 = json.loads(json.dumps(o))
    o2["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    o2["data"] = {"k": "changed"}
    del o2["metadata"]["uid"]
    _, o3 = ks.request("PUT", NS + "/configmaps/c1", o2)
    check_eq(o3["metadata"]["creationTimestamp"], o["metadata"]["creationTimestamp"])
    check_eq(o3["metadata"]["uid"], o["metadata"]["uid"])
    o3["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    st, err = ks.request("PUT", NS + "/configmaps/c1", o3)
    check_eq(st, 422)
    check("metadata.uid" in err["message"], err["message"])


def create_with_rv_is_refused():
    o = cm("with-rv")
    o["metadata"]["resourceVersion"] = "5"
    st, txt = raw(ks, "POST", NS + "/configmaps", o)
    check_eq(st, 500)
    golden("status_500_create_with_rv.json", txt)


def lease_validation_golden():
    st, txt = raw(ks, "POST", LEASES, lease("bad", duration=0))
    check_eq(st, 422)
    golden("status_422_lease_duration.json", txt)
    bad = lease("badtime", renewTime="2024-01-01T00:00:00Z")
    st, txt = raw(ks, "POST", LEASES, bad)
    check_eq(st, 400)
    golden("status_400_microtime.json", txt)
    for ts in ("2024-01-01T00:00:00.123Z", "2024-01-01T00:00:00.1234567Z", "2024-01-01 00:00:00.123456"):
        st, _ = ks.request("POST", LEASES, lease("badtime", renewTime=ts))
        check_eq(st, 400, ts)
    ok = lease("goodtime", renewTime="2024-01-01T00:00:00.123456Z",
               acquireTime="2024-01-01T02:00:00.000001+02:00")
    st, o = ks.request("POST", LEASES, ok)
    check_eq(st, 201)
    check_eq(o["spec"]["renewTime"], "2024-01-01T00:00:00.123456Z")
    check_eq(o["spec"]["acquireTime"], "2024-01-01T00:00:00.000001Z", "normalized to UTC")
    st, _ = ks.request("POST", LEASES, lease("negtrans", leaseTransitions=-1))
    check_eq(st, 422)


def name_validation():
    st, txt = raw(ks, "POST", NS + "/configmaps", cm("Bad_Name"))
    check_eq(st, 422)
    golden("status_422_name.json", txt)
    st, err = ks.request("POST", NS + "/configmaps", {"metadata": {}})
    check_eq(st, 422)
    check_eq(err["message"], 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required')
    st, o = ks.request("POST", NS + "/configmaps", {"metadata": {"generateName": "gen-"}})
    check_eq(st, 201)
    check(o["metadata"]["name"].startswith("gen-") and len(o["metadata"]["name"]) == 9)
    st, err = ks.request("POST", NS + "/configmaps", cm("lbl", labels={"bad key!": "x"}))
    check_eq(st, 422)
    check(err["message"].startswith('ConfigMap "lbl" is invalid: metadata.labels: Invalid value: "bad key!": name part must consist of'), err["message"])


def namespace_mismatch_and_name_mismatch():
    st, err = ks.request("POST", NS + "/configmaps", cm("x", ns="other"))
    check_eq(st, 400)
    check_eq(err["message"], "the namespace of the provided object does not match the namespace sent on the request")
    _, o = ks.request("GET", NS + "/configmaps/c1")
    st, err = ks.request("PUT", NS + "/configmaps/other", o)
    check_eq(st, 400)
    check_eq(err["message"], "the name of the object (c1) does not match the name on the URL (other)")


def delete_and_preconditions():
    _, o = ks.request("POST", NS + "/configmaps", cm("del1"))
    uid = o["metadata"]["uid"]
    st, txt = raw(ks, "DELETE", NS + "/configmaps/del1",
                  {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}})
    check_eq(st, 409)
    golden("status_409_precondition_uid.json", txt)
    st, txt = raw(ks, "DELETE", NS + "/configmaps/del1",
                  {"preconditions": {"resourceVersion": "1"}})
    check_eq(st, 409)
    check('Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ' in txt, txt)
    st, txt = raw(ks, "DELETE", NS + "/configmaps/del1", {"preconditions": {"uid": uid}})
    check_eq(st, 200)
    golden("status_200_delete.json", txt)
    check_eq(ks.request("GET", NS + "/configmaps/del1")[0], 404)
    st, txt = raw(ks, "DELETE", LEASES + "/goodtime")
    check_eq(st, 200)
    golden("status_200_delete_lease.json", txt)


def finalizers_delay_deletion():
    o = cm("fin", {"a": "1"})
    o["metadata"]["finalizers"] = ["example.com/hold"]
    ks.request("POST", NS + "/configmaps", o)
    st, d = ks.request("DELETE", NS + "/configmaps/fin")
    check_eq(st, 200)
    check("deletionTimestamp" in d["metadata"], "marked for deletion")
    st, g = ks.request("GET", NS + "/configmaps/fin")
    check_eq(st, 200, "still there while finalizers remain")
    g["metadata"]["finalizers"] = []
    st, _ = ks.request("PUT", NS + "/configmaps/fin", g)
    check_eq(st, 200)
    check_eq(ks.request("GET", NS + "/configmaps/fin")[0], 404, "gone after the last finalizer")


def patches():
    ks.request("POST", NS + "/configmaps", cm("p1", {"a": "1", "b": "2"}, labels={"x": "1"}))
    st, o = ks.request("PATCH", NS + "/configmaps/p1",
                       {"data": {"a": None, "c": "3"}, "metadata": {"labels": {"y": "2"}}},
                       ctype="application/merge-patch+json")
    check_eq(st, 200)
    check_eq(o["data"], {"b": "2", "c": "3"})
    check_eq(o["metadata"]["labels"], {"x": "1", "y": "2"})
    st, o = ks.request("PATCH", NS + "/configmaps/p1",
                       [{"op": "replace", "path": "/data/b", "value": "22"},
                        {"op": "add", "path": "/metadata/annotations", "value": {"n": "1"}},
                        {"op": "remove", "path": "/data/c"}],
                       ctype="application/json-patch+json")
    check_eq(st, 200)
    check_eq(o["data"], {"b": "22"})
    check_eq(o["metadata"]["annotations"], {"n": "1"})
    st, txt = raw(ks, "PATCH", NS + "/configmaps/p1",
                  [{"op": "test", "path": "/data/b", "value": "nope"}], ctype="application/json-patch+json")
    check_eq(st, 422)
    golden("status_422_jsonpatch_test.json", txt)
    st, o = ks.request("PATCH", NS + "/configmaps/p1",
                       {"data": {"z": "26"}, "metadata": {"labels": {"x": None}}},
                       ctype="application/strategic-merge-patch+json")
    check_eq(st, 200)
    check_eq(o["data"], {"b": "22", "z": "26"})
    check_eq(o["metadata"]["labels"], {"y": "2"})
    st, o = ks.request("PATCH", NS + "/configmaps/p1", {"data": {"$patch": "replace", "only": "1"}},
                       ctype="application/strategic-merge-patch+json")
    check_eq(o["data"], {"only": "1"}, "$patch: replace on a map")
    # a resourceVersion in a patch is a precondition
    st, _ = ks.request("PATCH", NS + "/configmaps/p1", {"metadata": {"resourceVersion": "1"}},
                       ctype="application/merge-patch+json")
    check_eq(st, 409)
    st, txt = raw(ks, "PATCH", NS + "/configmaps/p1", {"data": {}}, ctype="text/plain")
    check_eq(st, 415)
    golden("status_415_patch.json", txt)
    st, _ = ks.request("PATCH", NS + "/configmaps/missing", {"data": {}},
                       ctype="application/merge-patch+json")
    check_eq(st, 404)


def service_strategic_ports():
    svc = {"metadata": {"name": "web"}, "spec": {"ports": [{"name": "http", "port": 80},
                                                           {"name": "https", "port": 443}]}}
    st, o = ks.request("POST", NS + "/services", svc)
    check_eq(st, 201)
    check(o["spec"]["clusterIP"].startswith("10.96."), o["spec"])
    check_eq(o["spec"]["ports"][0]["targetPort"], 80)
    check_eq(o["spec"]["ports"][0]["protocol"], "TCP")
    st, o = ks.request("PATCH", NS + "/services/web",
                       {"spec": {"ports": [{"port": 80, "name": "web"}]}},
                       ctype="application/strategic-merge-patch+json")
    check_eq(st, 200)
    check_eq([(p["port"], p["name"]) for p in o["spec"]["ports"]], [(80, "web"), (443, "https")],
             "ports merge by port")


def label_selectors():
    for i, lbl in enumerate([{"app": "a", "tier": "web"}, {"app": "b"}, {"app": "a"}, {}]):
        ks.request("POST", "/api/v1/namespaces/kube-system/configmaps", cm("s%d" % i, labels=lbl, ns="kube-system"))
    def names(sel):
        st, lst = ks.request("GET", "/api/v1/namespaces/kube-system/configmaps?labelSelector=" + sel)
        check_eq(st, 200, sel)
        return [i["metadata"]["name"] for i in lst["items"]]
    check_eq(names("app%3Da"), ["s0", "s2"])
    check_eq(names("app%21%3Da"), ["s1", "s3"], "!= matches objects without the key")
    check_eq(names("app+notin+(a)"), ["s1", "s3"], "notin matches objects without the key")
    check_eq(names("app+in+(a,b),tier"), ["s0"])
    check_eq(names("%21tier"), ["s1", "s2", "s3"])
    check_eq(names("app"), ["s0", "s1", "s2"])
    st, txt = raw(ks, "GET", "/api/v1/configmaps?labelSelector=a%24b")
    check_eq(st, 400)
    golden("status_400_label_selector.json", txt)
    st, err = ks.request("GET", "/api/v1/configmaps?labelSelector=x+in+(a")
    check_eq(st, 400)
    check_eq(err["message"], "unable to parse requirement: found '', expected: ',' or ')'")
    st, err = ks.request("GET", "/api/v1/configmaps?labelSelector=x%3D-bad")
    check_eq(st, 400)
    check(err["message"].startswith('unable to parse requirement: values[0][x]: Invalid value: "-bad": a valid label must be an empty string'), err["message"])


def field_selectors():
    def names(path, sel):
        st, lst = ks.request("GET", path + "?fieldSelector=" + sel)
        check_eq(st, 200, sel)
        return [i["metadata"]["name"] for i in lst["items"]]
    check_eq(names("/api/v1/configmaps", "metadata.name%3Ds1"), ["s1"])
    check_eq(names("/api/v1/configmaps", "metadata.namespace%3Dkube-system,metadata.name%21%3Ds1"), ["s0", "s2", "s3"])
    ks.request("POST", NS + "/secrets", {"metadata": {"name": "tls1"}, "type": "kubernetes.io/tls",
                                          "data": {"tls.crt": "", "tls.key": ""}})
    check_eq(names(NS + "/secrets", "type%3Dkubernetes.io/tls"), ["tls1"])
    st, txt = raw(ks, "GET", "/api/v1/configmaps?fieldSelector=data.k%3Dv")
    check_eq(st, 400)
    golden("status_400_field_selector.json", txt)
    st, err = ks.request("GET", NS + "/secrets?fieldSelector=data.x%3D1")
    check_eq(err["message"], "field label not supported: data.x")
    st, err = ks.request("GET", "/api/v1/configmaps?fieldSelector=metadata.name")
    check_eq(st, 400)
    check_eq(err["message"], "invalid selector: 'metadata.name'; can't understand 'metadata.name'")


def list_options_validation():
    st, txt = raw(ks, "GET", "/api/v1/configmaps?resourceVersionMatch=Exact")
    check_eq(st, 422)
    golden("status_422_listoptions.json", txt)
    st, _ = ks.request("GET", "/api/v1/configmaps?resourceVersionMatch=Bogus&resourceVersion=1")
    check_eq(st, 422)


def too_new_rv():
    st, txt = raw(ks, "GET", "/api/v1/configmaps?resourceVersion=999999")
    check_eq(st, 504)
    check_eq(ks.last_headers.get("Retry-After"), "1")
    golden("status_504_too_new.json", txt.replace(txt[txt.index("current: ") + 9:txt.index('","reason')], "N"))


def discovery():
    st, v = ks.request("GET", "/version")
    check_eq((st, v["major"], v["minor"]), (200, "1", "28"), "the default release, 1.28")
    st, api = ks.request("GET", "/api")
    check_eq(api["kind"], "APIVersions")
    check_eq(api["versions"], ["v1"])
    st, apis = ks.request("GET", "/apis")
    groups = [g["name"] for g in apis["groups"]]
    for g in ("coordination.k8s.io", "discovery.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io"):
        check(g in groups, g)
    st, rl = ks.request("GET", "/api/v1")
    check_eq(rl["kind"], "APIResourceList")
    res = {r["name"]: r for r in rl["resources"]}
    check_eq(res["configmaps"]["shortNames"], ["cm"])
    check_eq(res["configmaps"]["kind"], "ConfigMap")
    check(res["configmaps"]["namespaced"])
    check(not res["namespaces"]["namespaced"])
    check("services/status" in res)
    check_eq(sorted(res["configmaps"]["verbs"]), ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"])
    st, rl = ks.request("GET", "/apis/coordination.k8s.io/v1")
    check_eq([r["name"] for r in rl["resources"]], ["leases"])
    st, g = ks.request("GET", "/apis/discovery.k8s.io")
    check_eq(g["preferredVersion"]["groupVersion"], "discovery.k8s.io/v1")
    # /openapi/v2: an empty protobuf document (kubectl 1.28 asks for one)
    st, v2 = ks.request("GET", "/openapi/v2", raw=True)
    check_eq((st, v2), (200, b"\x0a\x032.0"))
    check_eq(ks.last_headers["Content-Type"],
             "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    check_eq(ks.request("GET", "/apis/nope.example.com/v1")[0], 404)


def secrets_string_data():
    st, o = ks.request("POST", NS + "/secrets", {"metadata": {"name": "sd"}, "stringData": {"u": "admin"}})
    check_eq(st, 201)
    check_eq(o["data"], {"u": "YWRtaW4="})
    check("stringData" not in o)
    check_eq(o["type"], "Opaque")
    st, err = ks.request("POST", NS + "/secrets", {"metadata": {"name": "bad64"}, "data": {"x": "%%%"}})
    check_eq(st, 400)


def namespaces_lifecycle():
    st, n = ks.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    check_eq(st, 201)
    check_eq(n["status"], {"phase": "Active"})
    check_eq(n["metadata"]["labels"], {"kubernetes.io/metadata.name": "team"})
    ks.request("POST", "/api/v1/namespaces/team/configmaps", cm("inside", ns="team"))
    st, d = ks.request("DELETE", "/api/v1/namespaces/team")
    check_eq(st, 200)
    check_eq(d["status"]["phase"], "Terminating")
    check_eq(ks.request("GET", "/api/v1/namespaces/team/configmaps/inside")[0], 404)
    st, err = ks.request("POST", "/api/v1/namespaces", {"metadata": {"name": "Bad.Name"}})
    check_eq(st, 422)


def dry_run():
    st, o = ks.request("POST", NS + "/configmaps?dryRun=All", cm("dry"))
    check_eq(st, 201)
    check_eq(ks.request("GET", NS + "/configmaps/dry")[0], 404)


def configmap_immutable():
    o = cm("imm", {"a": "1"})
    o["immutable"] = True
    ks.request("POST", NS + "/configmaps", o)
    _, g = ks.request("GET", NS + "/configmaps/imm")
    g["data"] = {"a": "2"}
    st, err = ks.request("PUT", NS + "/configmaps/imm", g)
    check_eq(st, 422)
    check_eq(err["message"], 'ConfigMap "imm" is invalid: data: Forbidden: field is immutable when `immutable` is set')


def put_creates_lease_not_configmap():
    st, _ = ks.request("PUT", NS + "/configmaps/ghost", cm("ghost"))
    check_eq(st, 404)
    st, _ = ks.request("PUT", LEASES + "/ghost", lease("ghost"))
    check_eq(st, 201, "Lease allows create on update")



def delete_collection():
    for i in range(3):
        ks.request("POST", "/api/v1/namespaces/kube-node-lease/configmaps",
                   cm("dc-%d" % i, labels={"grp": "x" if i < 2 else "y"}, ns="kube-node-lease"))
    st, lst = ks.request("DELETE", "/api/v1/namespaces/kube-node-lease/configmaps?labelSelector=grp%3Dx")
    check_eq(st, 200)
    check_eq(lst["kind"], "ConfigMapList")
    check_eq(sorted(i["metadata"]["name"] for i in lst["items"]), ["dc-0", "dc-1"])
    st, left = ks.request("GET", "/api/v1/namespaces/kube-node-lease/configmaps")
    check_eq([i["metadata"]["name"] for i in left["items"]], ["dc-2"])


def yaml_body():
    st, o = ks.request("POST", NS + "/configmaps", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  n: \"1\"\n",
                       ctype="application/yaml")
    check_eq(st, 201)
    check_eq(o["data"], {"n": "1"})
    st, err = ks.request("POST", NS + "/configmaps", "x=1", ctype="application/x-www-form-urlencoded")
    check_eq(st, 415)


cases = [delete_collection, yaml_body, create_sets_system_fields, rv_is_one_global_counter, get_and_list, update_conflict_golden,
         update_without_rv, already_exists_and_not_found_golden, noop_update_keeps_rv,
         system_fields_preserved, create_with_rv_is_refused, lease_validation_golden,
         name_validation, namespace_mismatch_and_name_mismatch, delete_and_preconditions,
         finalizers_delay_deletion, patches, service_strategic_ports, label_selectors,
         field_selectors, list_options_validation, too_new_rv, discovery, secrets_string_data,
         namespaces_lifecycle, dry_run, configmap_immutable, put_creates_lease_not_configmap]
try:
    for c in cases:
        t.case(c.__name__, c)
    rc = ks.stop()
    t.case("clean shutdown on SIGTERM", lambda: check_eq(rc, 0, ks.log()))
finally:
    ks.close()
t.done()
