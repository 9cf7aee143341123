"""docs/operations.md says what the chart does: every alert it documents is
the one the chart renders (same expression, same `for`), and every lease
profile it recommends renders, with the failover / write-rate / margin
columns computed from its timings."""
import json
import os
import re
import sys

TOP = os.environ.get("COXSWAIN_TOP", os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
sys.path.insert(0, os.path.join(TOP, "tests", "helm"))

import helmlib as h  # noqa: E402
from tap import Tap, check, check_eq  # noqa: E402

t = Tap()
DOC = open(os.path.join(TOP, "docs", "operations.md")).read()


def table_after(heading_regex):
    m = re.search(heading_regex, DOC, re.M)
    check(m, heading_regex)
    rows = []
    for line in DOC[m.end():].splitlines():
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            rows.append([c.strip().replace("\\|", "|") for c in cells])
        elif rows:
            break
    return rows[2:]  # skip header and separator


def secs(d):
    total = 0.0
    for num, unit in re.findall(r"([0-9.]+)(ms|s|m|h)", d):
        total += float(num) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def case_alerts_documented_as_rendered():
    r = h.render(sets={"metrics.prometheusRule.enabled": True})
    check(r.ok, r.err)
    rendered = {x["alert"]: x for x in r.all("PrometheusRule")[0]["spec"]["groups"][0]["rules"]}
    rows = table_after(r"^Alerts \(selectors")
    documented = {}
    for row in rows:
        name = row[0].split()[0]
        documented[name] = row
    check_eq(sorted(documented), sorted(rendered))
    sel = 'namespace="coxswain-system",job="coxswain-admin"'
    for name, row in documented.items():
        expr = row[1].strip("`").replace("…", sel)
        want = rendered[name]["expr"]
        if name == "CoxswainReplicasMissing":
            expr = expr.replace("replicaCount", "3")
        check_eq(expr, want, name)
        check_eq(row[2].split()[0], rendered[name]["for"], name + " for")
        sev = re.search(r"\((critical|warning)\)", row[0]).group(1)
        check_eq(sev, rendered[name]["labels"]["severity"], name + " severity")


def case_profiles_render_and_add_up():
    rows = table_after(r"^Profiles:")
    check(len(rows) >= 4, rows)
    for row in rows:
        lease, renew, retry = [x.strip() for x in row[1].split("/")]
        r = h.render(sets={"leaderElection.leaseDuration": lease,
                           "leaderElection.renewDeadline": renew,
                           "leaderElection.retryPeriod": retry})
        check(r.ok, "%s: %s" % (row[0], r.err))
        L, D, R = secs(lease), secs(renew), secs(retry)
        check_eq(row[2], "≤ %g s" % L, row[0] + " failover")
        check_eq(float(row[3]), round(1 / R, 2), row[0] + " writes/s")
        check_eq(row[4], "%g s" % (L - D), row[0] + " margin")
        check_eq(row[5], "~%g s" % (D - R), row[0] + " stall")


def case_ha_profile_is_the_ha_values_file():
    rows = {r[0]: r for r in table_after(r"^Profiles:")}
    ha = [r for k, r in rows.items() if "ha-values.yaml" in k][0]
    a = h.render(values=[h.HA_VALUES]).args()
    check_eq(" / ".join((a["--leader-elect-lease-duration"], a["--leader-elect-renew-deadline"],
                         a["--leader-elect-retry-period"])), ha[1])
    d = h.render().args()
    check_eq(" / ".join((d["--leader-elect-lease-duration"], d["--leader-elect-renew-deadline"],
                         d["--leader-elect-retry-period"])), rows["default"][1])


def case_dashboard_panels_documented():
    r = h.render(sets={"metrics.grafanaDashboard.enabled": True})
    check(r.ok, r.err)
    dash = json.loads(r.get("ConfigMap", "coxswain-dashboard", h.NAMESPACE)["data"]["coxswain.json"])
    rows = table_after(r"^### Grafana dashboard")
    check_eq([row[0] for row in rows], [p["title"] for p in dash["panels"]])
    sel = 'namespace="coxswain-system",job="coxswain-admin"'
    for row, p in zip(rows, dash["panels"]):
        exprs = " ".join(t["expr"] for t in p["targets"])
        # every metric the row names is one the panel queries
        for m in re.findall(r"\b((?:coxswain|leader_election)_[a-z_]+)", row[1]):
            check(m in exprs, "%s: %s is not in %s" % (row[0], m, exprs))
        # a full query in the row is the panel's, selector elided
        q = row[1].strip("`")
        if q.startswith("sum by") and "[…]" not in q and "\\|" not in q:
            check(q.replace("…", sel) in [t["expr"] for t in p["targets"]], row[0])


def registered_metrics():
    """Metric names the code registers (string literals passed to the
    registry in the modules the daemon links)."""
    names = set()
    for mod in ("common", "filters", "election", "translator", "controlplane"):
        for d, _, files in os.walk(os.path.join(TOP, mod)):
            for f in files:
                if f.endswith(".c"):
                    with open(os.path.join(d, f), errors="replace") as fh:
                        names |= set(re.findall(r'"((?:coxswain|leader_election)_[a-z_]+)"',
                                                fh.read()))
    return names


def case_metric_names_exist():
    have = registered_metrics()
    check(len(have) > 20, "found only %s" % sorted(have))
    documented = set(re.findall(r"`((?:coxswain|leader_election)_[a-z_]+)", DOC))
    check(len(documented) >= 15, sorted(documented))
    r = h.render(sets={"metrics.prometheusRule.enabled": True})
    exprs = " ".join(x["expr"] for x in r.all("PrometheusRule")[0]["spec"]["groups"][0]["rules"])
    alerted = set(re.findall(r"\b((?:coxswain|leader_election)_[a-z_]+)", exprs))
    check(len(alerted) >= 5, sorted(alerted))
    unknown = (documented | alerted) - have
    check(not unknown, "metrics no module registers: %s" % sorted(unknown))


t.case("every metric in the guide and the alerts is registered by the daemon's code",
       case_metric_names_exist)
t.case("documented alerts = rendered PrometheusRule (expr, for, severity)",
       case_alerts_documented_as_rendered)
t.case("every lease profile renders; its columns follow from its timings",
       case_profiles_render_and_add_up)
t.case("the Grafana dashboard's panels are the guide's table, with their metrics",
       case_dashboard_panels_documented)
t.case("the default and HA rows match values.yaml and ci/ha-values.yaml",
       case_ha_profile_is_the_ha_values_file)
t.done()
