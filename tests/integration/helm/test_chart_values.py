"""values.schema.json rejects malformed values (with Helm's validator,
gojsonschema, and Python's jsonschema agreeing), and the cross-field rules of
templates/_validate.tpl fail rendering with a clear message — exactly at the
boundary, not one step early or late."""
import copy
import json
import os
import sys

import jsonschema
import yaml

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import helmlib as h  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
with open(os.path.join(h.CHART, "values.schema.json")) as f:
    SCHEMA = json.load(f)
with open(os.path.join(h.CHART, "values.yaml")) as f:
    DEFAULTS = yaml.safe_load(f)
PY = jsonschema.Draft7Validator(SCHEMA)


def merged(sets):
    """The values Helm would validate: defaults with the dotted overrides
    (None deletes, as a Helm null does)."""
    v = copy.deepcopy(DEFAULTS)
    for path, val in sets.items():
        keys = path.split(".")
        m = v
        for k in keys[:-1]:
            m = m.setdefault(k, {})
        if val is None:
            m.pop(keys[-1], None)
        else:
            m[keys[-1]] = val
    return v


def case_schema_is_valid_draft7():
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    # every top-level value of values.yaml is described, and vice versa
    # nothing is required that values.yaml lacks
    check_eq(sorted(SCHEMA["properties"]), sorted(DEFAULTS))
    for k in SCHEMA["required"]:
        check(k in DEFAULTS, k)


def case_defaults_and_ha_valid():
    PY.validate(DEFAULTS)
    with open(h.HA_VALUES) as f:
        ha = yaml.safe_load(f)
    # HA values are an overlay; validate the merge
    def deep(a, b):
        for k, v in b.items():
            if isinstance(v, dict) and isinstance(a.get(k), dict):
                deep(a[k], v)
            else:
                a[k] = v
        return a
    PY.validate(deep(copy.deepcopy(DEFAULTS), ha))


# (what is wrong, --set-json overrides, field the error must name)
MALFORMED = [
    ("replicaCount as a string", {"replicaCount": "3"}, "replicaCount"),
    ("replicaCount 0", {"replicaCount": 0}, "replicaCount"),
    ("replicaCount not whole", {"replicaCount": 2.5}, "replicaCount"),
    ("unknown top-level key (typo)", {"replicas": 3}, "replicas"),
    ("unknown leaderElection key", {"leaderElection.leaseDurationSeconds": 15},
     "leaseDurationSeconds"),
    ("leaderElection.enabled as a string", {"leaderElection.enabled": "yes"},
     "leaderElection.enabled"),
    ("lease duration without unit", {"leaderElection.leaseDuration": "15"},
     "leaderElection.leaseDuration"),
    ("lease duration as a number", {"leaderElection.leaseDuration": 15},
     "leaderElection.leaseDuration"),
    ("negative retry period", {"leaderElection.retryPeriod": "-2s"},
     "leaderElection.retryPeriod"),
    ("microsecond unit", {"leaderElection.retryPeriod": "2000000us"},
     "leaderElection.retryPeriod"),
    ("unknown lock kind", {"leaderElection.resourceLock": "endpoints"},
     "leaderElection.resourceLock"),
    ("lock name not a DNS name", {"leaderElection.resourceName": "My_Lock"},
     "leaderElection.resourceName"),
    ("watchNamespaces entry not a DNS label", {"watchNamespaces": ["Team_A"]}, "watchNamespaces"),
    ("watchNamespaces duplicates", {"watchNamespaces": ["a", "a"]}, "watchNamespaces"),
    ("watchNamespaces as a string", {"watchNamespaces": "a,b"}, "watchNamespaces"),
    ("defaultGateway without namespace", {"defaultGateway": "public"}, "defaultGateway"),
    ("debounce without unit", {"debounce": "100"}, "debounce"),
    ("xds.port out of range", {"xds.port": 70000}, "xds.port"),
    ("admin.port 0", {"admin.port": 0}, "admin.port"),
    ("service type unknown", {"xds.service.type": "Headless"}, "xds.service.type"),
    ("regexProgramSize over what is checked", {"translatorLimits.regexProgramSize": 100000},
     "translatorLimits.regexProgramSize"),
    ("routesPerGateway fractional", {"translatorLimits.routesPerGateway": 1.5},
     "translatorLimits.routesPerGateway"),
    ("resourceBytes below 1 KiB", {"translatorLimits.resourceBytes": 100},
     "translatorLimits.resourceBytes"),
    ("statusWriter.qps 0", {"statusWriter.qps": 0}, "statusWriter.qps"),
    ("statusWriter.burst 0", {"statusWriter.burst": 0}, "statusWriter.burst"),
    ("statusWriter.burst fractional", {"statusWriter.burst": 1.5}, "statusWriter.burst"),
    ("log.format unknown", {"log.format": "xml"}, "log.format"),
    ("log.level unknown", {"log.level": "trace"}, "log.level"),
    ("podAntiAffinity unknown", {"podAntiAffinity": "maybe"}, "podAntiAffinity"),
    ("whenUnsatisfiable unknown", {"topologySpread.nodes.whenUnsatisfiable": "Never"},
     "topologySpread.nodes.whenUnsatisfiable"),
    ("PDB percentage over 100", {"podDisruptionBudget.minAvailable": "150%"},
     "podDisruptionBudget.minAvailable"),
    ("PDB negative", {"podDisruptionBudget.minAvailable": -1}, "podDisruptionBudget.minAvailable"),
    ("image pull policy unknown", {"image.pullPolicy": "Sometimes"}, "image.pullPolicy"),
    ("image digest malformed", {"image.digest": "sha256:xyz"}, "image.digest"),
    ("extraArgs not a flag", {"extraArgs": ["-v"]}, "extraArgs"),
    ("termination grace shorter than the 5 s release",
     {"terminationGracePeriodSeconds": 2}, "terminationGracePeriodSeconds"),
    ("probe period 0", {"readinessProbe.periodSeconds": 0}, "readinessProbe.periodSeconds"),
    ("resources quantity as a list", {"resources.requests.cpu": ["100m"]}, "resources.requests.cpu"),
    ("serviceMonitor.enabled missing", {"metrics.serviceMonitor.enabled": None},
     "enabled"),
]


def case_malformed(sets, field):
    # Python's validator agrees that the values are invalid ...
    errs = list(PY.iter_errors(merged(sets)))
    check(errs, "python jsonschema accepted %r" % sets)
    # ... and the renderer (gojsonschema, as Helm) refuses to render,
    # naming the field.
    r = h.render(sets=sets)
    check(not r.ok, "rendered despite %r" % sets)
    check("values don't meet the specifications of the schema(s)" in r.err, r.err)
    check(field in r.err, "error does not name %s: %s" % (field, r.err))
    check_eq(r.out, "")


# (what, overrides, message fragment)
RULE_FAILS = [
    ("renewDeadline equal to leaseDuration",
     {"leaderElection.renewDeadline": "15s"},
     "leaderElection.renewDeadline (15s) must be less than leaderElection.leaseDuration (15s)"),
    ("renewDeadline longer than leaseDuration",
     {"leaderElection.renewDeadline": "20s"},
     "leaderElection.renewDeadline (20s) must be less than leaderElection.leaseDuration (15s)"),
    ("renewDeadline exactly 1.2 x retryPeriod",
     {"leaderElection.renewDeadline": "2400ms"},
     "leaderElection.renewDeadline (2400ms) must be greater than 1.2 x "
     "leaderElection.retryPeriod (2s)"),
    ("leaseDuration one ms short of renewDeadline + retryPeriod",
     {"leaderElection.leaseDuration": "16s", "leaderElection.renewDeadline": "14001ms"},
     "leaderElection.leaseDuration (16s) must be at least leaderElection.renewDeadline "
     "(14001ms) + leaderElection.retryPeriod (2s)"),
    ("composite durations compared by value",
     {"leaderElection.leaseDuration": "1m", "leaderElection.renewDeadline": "59s",
      "leaderElection.retryPeriod": "1.5s"},
     "leaderElection.leaseDuration (1m) must be at least"),
    ("retryPeriod zero", {"leaderElection.retryPeriod": "0s"},
     "leaderElection.retryPeriod (0s) must be greater than 0"),
    ("leaseDuration not whole seconds",
     {"leaderElection.leaseDuration": "15500ms"},
     "leaderElection.leaseDuration (15500ms) must be a whole number of seconds"),
    ("several replicas without leader election",
     {"leaderElection.enabled": False},
     "leaderElection.enabled=false with replicaCount 3"),
    ("PDB minAvailable equal to replicas",
     {"podDisruptionBudget.minAvailable": 3},
     "podDisruptionBudget.minAvailable (3) must be less than replicaCount (3)"),
    ("PDB with both minAvailable and maxUnavailable",
     {"podDisruptionBudget.maxUnavailable": 1},
     "set either minAvailable or maxUnavailable, not both"),
    ("PDB with neither", {"podDisruptionBudget.minAvailable": None},
     "needs minAvailable or maxUnavailable"),
    ("xds and admin on one port", {"admin.port": 18000},
     "xds.port and admin.port must differ (both are 18000)"),
    ("client auth without TLS", {"xds.tls.enabled": False, "xds.tls.clientAuth.enabled": True},
     "xds.tls.clientAuth.enabled=true needs xds.tls.enabled=true"),
    ("cert-manager without an issuer",
     {"xds.tls.enabled": True, "xds.tls.certManager.enabled": True},
     "xds.tls.certManager.enabled=true needs xds.tls.certManager.issuerRef.name"),
    ("cert-manager without TLS", {"xds.tls.enabled": False, "xds.tls.certManager.enabled": True},
     "xds.tls.certManager.enabled=true needs xds.tls.enabled=true"),
    ("scrape timeout longer than interval",
     {"metrics.serviceMonitor.enabled": True, "metrics.serviceMonitor.scrapeTimeout": "1m"},
     "metrics.serviceMonitor.scrapeTimeout (1m) must not exceed "
     "metrics.serviceMonitor.interval (30s)"),
]


def case_rule_fails(sets, msg):
    PY.validate(merged(sets))  # the schema alone lets these through
    r = h.render(sets=sets)
    check(not r.ok, "rendered despite %r" % sets)
    check(msg in r.err, "want %r in:\n%s" % (msg, r.err))
    # Helm's format: the template position, then the message
    check(r.err.startswith("Error: execution error at (coxswain/templates/"), r.err)
    check_eq(r.out, "")


# Boundaries that must render (the rules are not stricter than stated).
RULE_PASSES = [
    ("leaseDuration exactly renewDeadline + retryPeriod",
     {"leaderElection.leaseDuration": "16s", "leaderElection.renewDeadline": "14s"},
     ("16s", "14s", "2s")),
    ("renewDeadline 1 ms over 1.2 x retryPeriod",
     {"leaderElection.renewDeadline": "2401ms", "leaderElection.leaseDuration": "5s"},
     ("5s", "2401ms", "2s")),
    ("composite durations that satisfy every rule",
     {"leaderElection.leaseDuration": "1m", "leaderElection.renewDeadline": "45s",
      "leaderElection.retryPeriod": "1.5s"},
     ("1m", "45s", "1.5s")),
    ("fast failover profile",
     {"leaderElection.leaseDuration": "4s", "leaderElection.renewDeadline": "3s",
      "leaderElection.retryPeriod": "500ms"},
     ("4s", "3s", "500ms")),
]


def case_rule_passes(sets, flags):
    r = h.render(sets=sets)
    check(r.ok, r.err)
    a = r.args()
    check_eq((a["--leader-elect-lease-duration"], a["--leader-elect-renew-deadline"],
              a["--leader-elect-retry-period"]), flags)


def case_single_replica_without_election_renders():
    r = h.render(sets={"leaderElection.enabled": False, "replicaCount": 1,
                       "podDisruptionBudget.enabled": False,
                       # timings are not judged when election is off
                       "leaderElection.renewDeadline": "1h"})
    check(r.ok, r.err)
    check_eq(r.args()["--leader-elect"], "false")


def case_rules_hold_for_set_values():
    # `helm install --set` parses numbers as int64 (values files and
    # --set-json as float64): the rules must hold for both
    for sets, msg in (
            ({"podDisruptionBudget.minAvailable": "3"},
             "podDisruptionBudget.minAvailable (3) must be less than replicaCount (3)"),
            ({"podDisruptionBudget.minAvailable": "5", "replicaCount": "5"},
             "podDisruptionBudget.minAvailable (5) must be less than replicaCount (5)"),
            ({"leaderElection.enabled": "false"}, "leaderElection.enabled=false with replicaCount 3"),
            ({"admin.port": "18000"}, "xds.port and admin.port must differ (both are 18000)")):
        r = h.render(set_strings=sets)
        check(not r.ok, "rendered despite --set %r" % sets)
        check(msg in r.err, "want %r in:\n%s" % (msg, r.err))
    r = h.render(set_strings={"podDisruptionBudget.minAvailable": "2"})
    check(r.ok, r.err)
    check_eq(r.all("PodDisruptionBudget")[0]["spec"]["minAvailable"], 2)


def case_pdb_percent_not_compared_with_replicas():
    r = h.render(sets={"podDisruptionBudget.minAvailable": "100%"})
    check(r.ok, r.err)
    check_eq(r.all("PodDisruptionBudget")[0]["spec"]["minAvailable"], "100%")


t.case("values.schema.json is valid draft-07 and covers values.yaml", case_schema_is_valid_draft7)
t.case("default and HA values satisfy the schema", case_defaults_and_ha_valid)
for what, sets, field in MALFORMED:
    t.case("schema rejects: " + what, case_malformed, sets, field)
for what, sets, msg in RULE_FAILS:
    t.case("rendering fails: " + what, case_rule_fails, sets, msg)
for what, sets, flags in RULE_PASSES:
    t.case("rendering passes: " + what, case_rule_passes, sets, flags)
t.case("one replica without election renders", case_single_replica_without_election_renders)
t.case("PDB percentage is not compared with replicaCount", case_pdb_percent_not_compared_with_replicas)
t.case("the rules hold for --set values (int64), not only files (float64)",
       case_rules_hold_for_set_values)
t.done()
