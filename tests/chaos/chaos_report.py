"""What a chaos run prints at its end (print_summary) and its record in
bench/run.sh's format (bench_json), both from chaos.py's summary dict.
"""
import json

# The checker's verdicts on leadership (safety); the rest are the driver's.
LEADERSHIP_KINDS = ("write-outside-term", "write-after-expiry", "sent-outside-term",
                    "guard-breach", "premature-takeover", "foreign-lock-write")


def print_summary(s):
    p = lambda *a: print("chaos:", *a, flush=True)  # noqa: E731
    p("---- summary (seed %d, mode %s, %d s of faults, %.1f s wall) ----" % (
        s["seed"], s["mode"], s["seconds"], s["wall_s"]))
    p("faults injected: %d (%s)" % (s["faults_total"], ", ".join(
        "%s %d" % (k, v) for k, v in sorted(s["faults"].items()))))
    ld = s["leadership"]
    p("leadership terms: %d (%d holders); %d failovers without release, slowest %.0f ms from "
      "the old leader's last renewal to the new leader's acquisition; longest time with no "
      "valid lease %.0f ms" % (ld["terms"], len(ld["holders"]), ld["failovers"],
                               ld["max_failover_ms"], ld["max_leaderless_ms"]))
    p("takeovers on proof of death (a killed leader, before its lease ran out): %d%s; "
      "guarded writes in flight at a killwrite: %d" % (
          ld["counts"].get("dead_takeovers", 0), "" if s.get("peer", True) else
          " (peer channel off)", s.get("killwrite_held", 0)))
    w = s["writes"]
    p("writes: %d guarded (%d refused by the server), %d lock writes (%d holders inferred), "
      "%d VirtualService changes (%d failed under faults)" % (
          w["guarded"], w["guarded_failed"], w["lock"], w["lock_inferred"],
          w["virtualservice_changes"], w["virtualservice_failed"]))
    p("max age of a guarded write since its writer's last lock write: %.0f ms (lease %s)" % (
        ld["max_guarded_write_age_ms"], s["timings"]["lease"]))
    p("late deliveries (sent inside the term, landed after it: held by a fault): %d%s, "
      "latest %.0f ms after the term ended%s" % (
          s["late_deliveries"], " (after the term was %s)" % ", ".join(
              "%s %d" % kv for kv in sorted(ld["late_after"].items())) if ld["late_after"] else "",
          ld["max_late_ms"], " -- fatal (CHAOS_STRICT)" if s["strict"] else ""))
    pr = s["processes"]
    p("processes: %d started, %d unexpected exits, %d/%d clean SIGTERM shutdowns; "
      "kubesim restarted %d times" % (pr["started"], pr["unexpected_exits"],
                                     pr["clean_shutdowns"], pr["shutdowns"],
                                     s["kubesim_restarts"]))
    if s["rss"]:
        worst = max(s["rss"].items(), key=lambda kv: kv[1]["max_kb"])
        judged = [k for k, v in s["rss"].items() if "too short" not in v["detail"]]
        p("RSS: max %.1f MB (%s); growth judged for %d processes: %s" % (
            worst[1]["max_kb"] / 1024.0, worst[0], len(judged),
            "ok" if all(v["ok"] for v in s["rss"].values()) else "UNBOUNDED"))
        for k in sorted(s.get("rss_series", {})):
            if k in s["rss"]:
                p("RSS of %s (lived through the run): %s" % (k, s["rss"][k]["detail"]))
    if s["converge_s"] is not None:
        p("converged %.1f s after the faults stopped" % s["converge_s"])
    if s["canary"]:
        p("canary (a rogue write with a standby's identity) caught as %s" %
          s["canary"].split(":")[0])
    elif s.get("canary_note"):
        p("canary: %s" % s["canary_note"])
    p("violations: %d %s" % (s["violations_total"], json.dumps(s["violations"]) if
                             s["violations_total"] else ""))
    for v in s["violation_list"][:10]:
        p("  %s: %s" % (v["kind"], v["detail"].splitlines()[0] if v["detail"] else ""))


def bench_json(s):
    """The run in bench/run.sh's format, with the leadership timeline as plot
    data (docs/benchmarks.md, section "Chaos")."""
    t0 = s["started_ns"] or 0
    slots = sorted({t["holder"].split("-")[0] for t in s["terms"] if t["holder"]})
    series = []
    for slot in slots:
        pts = []
        for t in s["terms"]:
            if t["holder"].split("-")[0] != slot:
                continue
            end = t["end_ns"] if t["end_ns"] is not None else t["start_ns"]
            pts.append([round((t["start_ns"] - t0) / 1e9, 3), round((end - t0) / 1e9, 3),
                        slots.index(slot) + 1])
        series.append({"label": "%s leads" % slot, "points": pts})
    kinds = sorted({f["kind"] for f in s["fault_timeline"]})
    for k in kinds:
        pts = [[round((f["start_ns"] - t0) / 1e9, 3),
                round(max(f["end_ns"], f["start_ns"] + 2e8) / 1e9 - t0 / 1e9, 3),
                len(slots) + 1 + kinds.index(k) * 0.25]
               for f in s["fault_timeline"]]
        pts = [p for p, f in zip(pts, s["fault_timeline"]) if f["kind"] == k]
        series.append({"label": "fault: " + k, "points": pts})
    plots = [{"name": "timeline", "title": "Leadership terms and faults over time",
              "style": "intervals", "xlabel": "seconds", "ylabel": "", "series": series}]
    if s.get("rss_series"):
        plots.append({"name": "rss", "title": "RSS of the replica that lived through the run",
                      "style": "lines", "xlabel": "seconds", "ylabel": "RSS (KB)",
                      "series": [{"label": k, "points": v}
                                 for k, v in sorted(s["rss_series"].items())]})
    rows = [{"case": "fault episodes: " + k, "count": v} for k, v in sorted(s["faults"].items())]
    ld = s["leadership"]
    safety = sum(v for k, v in s["violations"].items() if k in LEADERSHIP_KINDS)
    other = {k: v for k, v in s["violations"].items() if k not in LEADERSHIP_KINDS}
    rows += [{"case": "leadership terms", "count": ld["terms"]},
             {"case": "longest leaderless gap (ms)", "count": ld["max_leaderless_ms"]},
             {"case": "guarded writes", "count": s["writes"]["guarded"]},
             {"case": "VirtualService changes", "count": s["writes"]["virtualservice_changes"]},
             {"case": "leadership (safety) violations", "count": safety},
             {"case": "other violations%s" % (
                 " (%s)" % ", ".join("%s %d" % kv for kv in sorted(other.items()))
                 if other else ""), "count": sum(other.values())}]
    surv = [v["detail"] for k, v in sorted(s["rss"].items()) if k in s.get("rss_series", {})]
    glance = [{"metric": "safety violations under faults",
               "value": "%d in %d s: %d faults, %d leadership terms, %d guarded writes" % (
                   safety, s["seconds"], s["faults_total"], ld["terms"],
                   s["writes"]["guarded"]),
               "baseline": "checker proven live by a rogue write" if s["canary"] else ""},
              {"metric": "slowest failover (crash, pause, partition)",
               "value": "%.0f ms" % ld["max_failover_ms"],
               "baseline": "lease %s" % s["timings"]["lease"]},
              {"metric": "other invariants (exits, convergence, RSS)",
               "value": ("violated: " + ", ".join("%s %d" % kv for kv in sorted(other.items()))
                         if other else "all held"),
               "baseline": surv[0] if surv else ""}]
    return {"benchmark": "chaos", "glance": glance, "measured": s.get("finished_utc"),
            "title": "Chaos: %d s of faults on %d replicas (%s)" % (
                s["seconds"], s["replicas"], "coxswain " + s["mode"]),
            "notes": "make chaos, seed %d; lease %s, renew deadline %s, retry %s. Invariants "
                     "from kubesim's audit log: no guarded write outside its writer's term or "
                     "after its lease expired; no premature takeover; no unexpected exit; RSS "
                     "bounded; convergence once faults stop. See docs/chaos.md." % (
                         s["seed"], s["timings"]["lease"], s["timings"]["renew"],
                         s["timings"]["retry"]),
            "rows": rows,
            "plots": plots}
