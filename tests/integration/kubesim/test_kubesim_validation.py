"""Custom resources validated as the apiextensions server does it: each
OpenAPI v3 constraint refuses a bad object at admission (422, the field
error kube-apiserver gives), list-type map/set uniqueness, the composite
keywords, formats; pruning and defaulting happen before the generation
decision, so an update of unknown fields only changes nothing.
"""
from ksutil import KubeSim, Tap, check, check_eq

t = Tap()
GROUP = "val.test"
PATH = "/apis/val.test/v1/namespaces/default/gizmos"
PLAIN = "/apis/val.test/v1/namespaces/default/plains"

SPEC = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "duration": {"type": "string", "pattern": r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"},
        "word": {"type": "string", "pattern": r"^\w+$"},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "exclusiveMaximum": True},
        "step": {"type": "integer", "multipleOf": 5},
        "hosts": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"},
                  "x-kubernetes-list-type": "set"},
        "labels": {"type": "object", "maxProperties": 2, "minProperties": 1,
                   "additionalProperties": {"type": "string"}},
        "when": {"type": "string", "format": "date-time"},
        "addr": {"type": "string", "format": "ipv4"},
        "size": {"type": "integer", "default": 3},
        "target": {
            "type": "object",
            "properties": {"kube": {"type": "string"}, "static": {"type": "string"}},
            "oneOf": [{"required": ["kube"]}, {"required": ["static"]}]},
        "match": {
            "type": "object",
            "properties": {"prefix": {"type": "string"}, "path": {"type": "string"}},
            "oneOf": [{"required": ["prefix"]}, {"required": ["path"]},
                      {"not": {"anyOf": [{"required": ["prefix"]}, {"required": ["path"]}]}}]},
    },
}
STATUS = {
    "type": "object",
    "properties": {"conditions": {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
        "items": {"type": "object", "required": ["type"],
                  "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}},
}


def crd(plural, kind, status):
    v = {"name": "v1", "served": True, "storage": True,
         "schema": {"openAPIV3Schema": {"type": "object",
                                        "properties": {"spec": SPEC, "status": STATUS}}}}
    if status:
        v["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": plural + "." + GROUP},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [v]}}


ks = KubeSim()
for c in (crd("gizmos", "Gizmo", True), crd("plains", "Plain", False)):
    check_eq(ks.create("customresourcedefinitions", c, group="apiextensions.k8s.io")[0], 201)


def gizmo(obj_name, /, **spec):
    return {"apiVersion": GROUP + "/v1", "kind": "Gizmo", "metadata": {"name": obj_name},
            "spec": spec}


def refused(spec, causes):
    """Creating a Gizmo with |spec| is 422 with exactly |causes|
    [(type, field, message)]."""
    st, s = ks.request("POST", PATH, gizmo("bad", **spec))
    check_eq(st, 422, spec)
    got = [(c["reason"], c["field"], c["message"]) for c in s["details"]["causes"]]
    check_eq(got, causes, spec)
    check(s["message"].startswith('Gizmo.val.test "bad" is invalid: '), s["message"])


def strings():
    refused({"name": "abcdef"},
            [("FieldValueTooLong", "spec.name", "Too long: may not be longer than 5")])
    refused({"name": "a"},
            [("FieldValueInvalid", "spec.name",
              'Invalid value: "a": spec.name in body should be at least 2 chars long')])
    refused({"name": "ABC"},
            [("FieldValueInvalid", "spec.name",
              "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'")])
    # lengths count characters, not bytes; RE2 syntax (\w) as Go's regexp
    check_eq(ks.request("POST", PATH, gizmo("ok1", name="ab", duration="1.5µs",
                                            word="a_1"))[0], 201)
    refused({"duration": "5 s"},
            [("FieldValueInvalid", "spec.duration",
              "Invalid value: \"5 s\": spec.duration in body should match "
              "'^(0|([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$'")])
    refused({"word": "a-b"},
            [("FieldValueInvalid", "spec.word",
              "Invalid value: \"a-b\": spec.word in body should match '^\\w+$'")])


def numbers():
    refused({"port": 0},
            [("FieldValueInvalid", "spec.port",
              "Invalid value: 0: spec.port in body should be greater than or equal to 1")])
    refused({"port": 70000},
            [("FieldValueInvalid", "spec.port",
              "Invalid value: 70000: spec.port in body should be less than or equal to 65535")])
    refused({"ratio": 1},
            [("FieldValueInvalid", "spec.ratio",
              "Invalid value: 1: spec.ratio in body should be less than 1")])
    refused({"ratio": -0.5},
            [("FieldValueInvalid", "spec.ratio",
              "Invalid value: -0.5: spec.ratio in body should be greater than or equal to 0")])
    refused({"step": 7},
            [("FieldValueInvalid", "spec.step",
              "Invalid value: 7: spec.step in body should be a multiple of 5")])
    check_eq(ks.request("POST", PATH, gizmo("ok2", port=65535, ratio=0.99, step=10))[0], 201)


def arrays_objects():
    refused({"hosts": []},
            [("FieldValueInvalid", "spec.hosts",
              "Invalid value: 0: spec.hosts in body should have at least 1 items")])
    refused({"hosts": ["a", "b", "c"]},
            [("FieldValueTooMany", "spec.hosts", "Too many: 3: must have at most 2 items")])
    refused({"hosts": ["a", "a"]},
            [("FieldValueDuplicate", "spec.hosts[1]", 'Duplicate value: "a"')])
    refused({"labels": {}},
            [("FieldValueInvalid", "spec.labels",
              "Invalid value: 0: spec.labels in body should have at least 1 properties")])
    refused({"labels": {"a": "1", "b": "2", "c": "3"}},
            [("FieldValueTooMany", "spec.labels", "Too many: 3: must have at most 2 items")])


def formats():
    refused({"when": "yesterday"},
            [("FieldValueTypeInvalid", "spec.when",
              'Invalid value: "yesterday": spec.when in body must be of type date-time: '
              '"yesterday"')])
    refused({"addr": "10.0.0.300"},
            [("FieldValueTypeInvalid", "spec.addr",
              'Invalid value: "10.0.0.300": spec.addr in body must be of type ipv4: '
              '"10.0.0.300"')])
    check_eq(ks.request("POST", PATH, gizmo("ok3", when="2026-01-02T03:04:05.5+01:00",
                                            addr="10.0.0.1"))[0], 201)


def composites():
    refused({"target": {}},
            [("FieldValueInvalid", "spec.target",
              'Invalid value: "": spec.target in body must validate one and only one schema '
              "(oneOf). Found none valid")])
    refused({"target": {"kube": "a", "static": "b"}},
            [("FieldValueInvalid", "spec.target",
              'Invalid value: "": spec.target in body must validate one and only one schema '
              "(oneOf). Found 2 valid alternatives")])
    # the not/anyOf branch: none of them is one valid alternative
    check_eq(ks.request("POST", PATH, gizmo("ok4", target={"kube": "a"}, match={}))[0], 201)
    check_eq(ks.request("POST", PATH, gizmo("ok5", match={"path": "/x"}))[0], 201)
    refused({"match": {"path": "/x", "prefix": "/"}},
            [("FieldValueInvalid", "spec.match",
              'Invalid value: "": spec.match in body must validate one and only one schema '
              "(oneOf). Found 2 valid alternatives")])
    # several errors at once, in the validator's order
    refused({"name": "A", "port": 0},
            [("FieldValueInvalid", "spec.name",
              'Invalid value: "A": spec.name in body should be at least 2 chars long'),
             ("FieldValueInvalid", "spec.name",
              "Invalid value: \"A\": spec.name in body should match '^[a-z]+$'"),
             ("FieldValueInvalid", "spec.port",
              "Invalid value: 0: spec.port in body should be greater than or equal to 1")])


def list_map_status():
    st, g = ks.request("POST", PATH, gizmo("st"))
    check_eq(st, 201)
    g["status"] = {"conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "Accepted", "status": "True"},
                                  {"type": "Ready", "status": "False"}]}
    st, s = ks.request("PUT", PATH + "/st/status", g)
    check_eq(st, 422)
    check_eq([(c["reason"], c["field"], c["message"]) for c in s["details"]["causes"]],
             [("FieldValueDuplicate", "status.conditions[2]",
               'Duplicate value: map[string]interface {}{"type":"Ready"}')])
    g["status"]["conditions"].pop()
    st, g2 = ks.request("PUT", PATH + "/st/status", g)
    check_eq(st, 200)
    check_eq(len(g2["status"]["conditions"]), 2)


def generation_after_pruning():
    st, g = ks.request("POST", PATH, gizmo("gen", name="ab"))
    check_eq((st, g["metadata"]["generation"], g["spec"]["size"]), (201, 1, 3),
             "created with the default")
    rv = g["metadata"]["resourceVersion"]
    # an unknown field only: pruned, so nothing changed (no new RV either)
    g["spec"]["unknown"] = "x"
    st, g2 = ks.request("PUT", PATH + "/gen", g)
    check_eq(st, 200)
    check_eq((g2["metadata"]["generation"], g2["metadata"]["resourceVersion"]), (1, rv))
    check("unknown" not in g2["spec"])
    # a defaulted field removed: the default comes back, no change either
    del g2["spec"]["size"]
    st, g3 = ks.request("PUT", PATH + "/gen", g2)
    check_eq((st, g3["metadata"]["generation"], g3["spec"]["size"]), (200, 1, 3))
    # a real change
    g3["spec"]["name"] = "abc"
    st, g4 = ks.request("PUT", PATH + "/gen", g3)
    check_eq((st, g4["metadata"]["generation"]), (200, 2))
    # without a status subresource, status is part of what the generation counts
    st, p = ks.request("POST", PLAIN, {"apiVersion": GROUP + "/v1", "kind": "Plain",
                                       "metadata": {"name": "p"}, "spec": {}})
    check_eq((st, p["metadata"]["generation"]), (201, 1))
    p["status"] = {"conditions": [{"type": "Ready"}]}
    st, p2 = ks.request("PUT", PLAIN + "/p", p)
    check_eq((st, p2["metadata"]["generation"], p2["status"]["conditions"][0]["type"]),
             (200, 2, "Ready"))


def crd_refused(schema, causes):
    """A CRD whose only version has |schema| is 422 with exactly |causes|."""
    c = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": {"name": "bads." + GROUP},
         "spec": {"group": GROUP, "scope": "Namespaced",
                  "names": {"plural": "bads", "singular": "bad", "kind": "Bad"},
                  "versions": [{"name": "v1", "served": True, "storage": True}]}}
    if schema is not None:
        c["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": schema}
    st, s = ks.create("customresourcedefinitions", c, group="apiextensions.k8s.io")
    check_eq(st, 422, schema)
    check_eq([(x["reason"], x["field"], x["message"]) for x in s["details"]["causes"]],
             causes, schema)


def structural_crds():
    root = "spec.versions[0].schema.openAPIV3Schema"
    crd_refused(None, [("FieldValueRequired", root, "Required value: schemas are required")])
    crd_refused({"type": "string"},
                [("FieldValueInvalid", root + ".type",
                  'Invalid value: "string": must be object at the root')])
    crd_refused({"type": "object", "properties": {"spec": {"properties": {
        "a": {"type": "array"}, "b": {"type": "string", "pattern": "(a"}}}}},
                [("FieldValueRequired", root + ".properties[spec].type",
                  "Required value: must not be empty for specified object fields"),
                 ("FieldValueRequired", root + ".properties[spec].properties[a].items",
                  "Required value: must be specified"),
                 ("FieldValueInvalid", root + ".properties[spec].properties[b].pattern",
                  "Invalid value: \"(a\": must be a valid regular expression, but isn't: "
                  "error parsing regexp: missing ): (a")])
    crd_refused({"type": "object", "properties": {"spec": {
        "type": "object", "properties": {"x": {"type": "string"}},
        "additionalProperties": {"type": "string"},
        "oneOf": [{"type": "object", "required": ["x"]}]}}},
                [("FieldValueForbidden", root + ".properties[spec].additionalProperties",
                  "Forbidden: additionalProperties and properties are mutual exclusive"),
                 ("FieldValueForbidden", root + ".properties[spec].oneOf[0].type",
                  "Forbidden: must be empty to be structural")])
    crd_refused({"type": "object", "properties": {"l": {
        "type": "array", "uniqueItems": True, "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "object", "properties": {"v": {"type": "string"}}}}}},
                [("FieldValueForbidden", root + ".properties[l].uniqueItems",
                  "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
                  "becomes quadratic"),
                 ("FieldValueRequired", root + ".properties[l].items.properties",
                  "Required value: entries for all x-kubernetes-list-map-keys are required")])
    # int-or-string and preserve-unknown-fields need no type
    c = crd("fines", "Fine", False)
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "any"] = {"x-kubernetes-int-or-string": True}
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "free"] = {"x-kubernetes-preserve-unknown-fields": True}
    check_eq(ks.create("customresourcedefinitions", c, group="apiextensions.k8s.io")[0], 201)


cases = [strings, numbers, arrays_objects, formats, composites, list_map_status,
         generation_after_pruning, structural_crds]
try:
    for c in cases:
        t.case(c.__name__, c)
finally:
    ks.close()
t.done()
