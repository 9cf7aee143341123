"""bench/run.sh and bench/report.py on fake benchmarks: run order, a
failing, a hanging and a lying benchmark reported while the others still
run, tables with ratios from the same run, plots drawn by gnuplot, the
README's generated block, malformed plot data refused, earlier results kept.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from tap import Tap, check, check_eq  # noqa: E402

REPORT = os.path.join(TOP, "bench", "report.py")
RUN = os.path.join(TOP, "bench", "run.sh")

GOOD = {
    "benchmark": "translator", "title": "Translator: fake", "notes": "fake numbers",
    "rows": [{"case": "full, 1k VirtualServices", "p50_ms": 10.0, "cpu_ms": 9.0,
              "baseline_p50_ms": 20.0, "baseline_cpu_ms": 5.0},
             {"case": "full, 10k VirtualServices", "p50_ms": 100.0, "baseline_p50_ms": 50.0,
              "baseline_cpu_ms": 40.0, "ratio": 2.0}]}
PLOTTED = {
    "benchmark": "election", "title": "Election: fake failover",
    "rows": [{"case": "crash failover", "p99_ms": 3400.0, "p50_ms": 3200.0,
              "baseline": "python elector", "baseline_p50_ms": 16000.0, "ratio": 0.2}],
    "glance": [{"metric": "crash failover p99", "value": "3.4 s", "baseline": "0.2x python"}],
    "plots": [{"name": "rounds", "title": "Failover per round", "xlabel": "round",
               "ylabel": "ms", "style": "linespoints",
               "series": [{"label": "ours", "points": [[1, 3200], [2, 3300], [3, 3100]]},
                          {"label": "python", "points": [[1, 16000], [2, 17000]]}]},
              {"name": "timeline", "title": "Who led", "style": "intervals",
               "series": [{"label": "a", "points": [[0, 5, 1], [9, 12, 1]]},
                          {"label": "b", "points": [[5.2, 9, 2]]}]}]}


def write(path, obj):
    with open(path, "w") as f:
        f.write(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def report(tmp, files, *extra):
    args = ["/usr/bin/python3", REPORT, "--results", os.path.join(tmp, "results", "2030-01-02.json"),
            "--markdown", os.path.join(tmp, "doc", "benchmarks.md")] + list(extra) + files
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    md = ""
    try:
        with open(os.path.join(tmp, "doc", "benchmarks.md")) as f:
            md = f.read()
    except OSError:
        pass
    return r, md


def section(md, title):
    i = md.index("## " + title)
    j = md.find("\n## ", i + 1)
    return md[i:j if j > 0 else len(md)]


def tables_ratios_plots():
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    try:
        os.makedirs(os.path.join(tmp, "doc"))
        files = [write(os.path.join(tmp, "a.json"), GOOD),
                 write(os.path.join(tmp, "b.json"), PLOTTED)]
        r, md = report(tmp, files)
        check_eq(r.returncode, 0, "report.py: " + r.stderr)
        tr = section(md, "Translator: fake")
        header = [ln for ln in tr.splitlines() if ln.startswith("| case")][0]
        cols = [c.strip() for c in header.strip("|").split("|")]
        check_eq(cols[:2], ["case", "p50_ms"], "columns start with case, p50")
        check(cols.index("ratio") > cols.index("baseline_p50_ms"), cols)
        # the first row gets ratio = 10/20 computed; the second keeps its own
        row1 = [ln for ln in tr.splitlines() if ln.startswith("| full, 1k")][0]
        check("| 0.5 |" in row1, "computed ratio in " + row1)
        # ordered sections: election before translator? ORDER says translator first
        check(md.index("## Translator: fake") < md.index("## Election: fake failover"),
              "run order in the document")
        # plots: the benchmark's own two, and one derived for the translator
        plots = sorted(os.listdir(os.path.join(tmp, "doc", "plots")))
        check_eq(plots, ["election-rounds.svg", "election-timeline.svg",
                         "translator-scaling.svg"])
        for p in plots:
            with open(os.path.join(tmp, "doc", "plots", p)) as f:
                svg = f.read()
            check("<svg" in svg and "</svg>" in svg, p + " is not an SVG")
        check("![Failover per round](plots/election-rounds.svg)" in md, "plot link")
        check("![Translation time against N](plots/translator-scaling.svg)" in md,
              "derived plot link")
        with open(os.path.join(tmp, "doc", "plots", "election-timeline.svg")) as f:
            svg = f.read()
        check(">a<" in svg.replace("</tspan>", "<") or "a</text>" in svg, "interval labels")
        # the glance table uses the benchmark's own entry
        check("| crash failover p99 | 3.4 s | 0.2x python |" in md, "glance entry")
        check("Machine: " in md and " cores, " in md, "machine line")
        with open(os.path.join(tmp, "results", "2030-01-02.json")) as f:
            doc = json.load(f)
        check_eq(sorted(doc["benchmarks"]), ["election", "translator"])
        check("_rendered" not in doc["benchmarks"]["election"], "internal keys leaked")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def malformed_and_failed():
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    try:
        os.makedirs(os.path.join(tmp, "doc"))
        good = [write(os.path.join(tmp, "a.json"), GOOD)]
        r, _ = report(tmp, good)
        check_eq(r.returncode, 0, r.stderr)
        bad_plot = dict(PLOTTED, plots=[{"name": "x", "style": "pie",
                                         "series": [{"label": "s", "points": [[1, 2]]}]}])
        bad_tics = dict(PLOTTED, benchmark="kubesim",
                        plots=[{"name": "z", "xtics": [[1]], "series": [
                            {"label": "s", "points": [[1, 2]]}]}])
        bad_point = dict(PLOTTED, benchmark="xds",
                         plots=[{"name": "y", "series": [{"label": "s", "points": [[1]]}]}])
        failed = {"benchmark": "translator", "failed": "timed out after 5 s",
                  "log_tail": "bench_translator: 10000 VirtualServices...\n"}
        files = [write(os.path.join(tmp, "t.json"), bad_tics),
                 write(os.path.join(tmp, "p.json"), bad_plot),
                 write(os.path.join(tmp, "q.json"), bad_point),
                 write(os.path.join(tmp, "f.json"), failed),
                 write(os.path.join(tmp, "g.json"), "not json")]
        r, md = report(tmp, files)
        check_eq(r.returncode, 1, "malformed inputs must fail the report")
        check("style 'pie' is not one of" in r.stderr, r.stderr)
        check("a point must be 2 numbers" in r.stderr, r.stderr)
        check("g.json" in r.stderr, r.stderr)
        check("xtics entries are [position, \"label\"]" in r.stderr, r.stderr)
        tr = section(md, "Translator: fake")
        check("**Failed in the run of" in tr and "timed out after 5 s" in tr, tr)
        check("The numbers below are from the last good run." in tr, tr)
        check("| full, 10k VirtualServices |" in tr, "last good rows kept")
        check("bench_translator: 10000" in tr, "log tail shown")
        check("Election" not in md, "a malformed benchmark must not be published")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


ELECTION = {"benchmark": "election", "title": "Election rows", "rows": [
    {"case": "graceful handover (SIGTERM -> new leader)", "lock": "leases", "p50_ms": 6.8,
     "p99_ms": 13.5, "baseline_p50_ms": 2807.6, "baseline_p99_ms": 3356.8},
    {"case": "crash failover (kill -9 -> new leader)", "lock": "leases", "p50_ms": 2516.2,
     "p99_ms": 2983.2, "baseline_p50_ms": 2672.3, "baseline_p99_ms": 3120.9},
    {"case": "crash failover (kill -9 -> new leader)", "lock": "configmaps", "p50_ms": 1.0}]}
TAKEOVER = {"benchmark": "takeover", "title": "Takeover rows", "rows": [
    {"case": "warm standby, kill -9", "objects": 10101, "leader_s": 2.71,
     "reconciled_s": 2.95},
    {"case": "cold standby, kill -9", "objects": 10101, "leader_s": 3.05,
     "reconciled_s": 3.35}]}


def derived_plots():
    sys.path.insert(0, os.path.join(TOP, "bench"))
    import report as rep
    el = rep.derived_plots(ELECTION)
    check_eq([p["name"] for p in el], ["failover"])
    pts = {s["label"]: s["points"] for s in el[0]["series"]}
    check_eq(sorted(pts), ["Python client p50", "Python client p99", "coxswain p50",
                           "coxswain p99"])
    check_eq([y for _, y in pts["coxswain p50"]], [6.8, 2516.2], "Lease rows only")
    check_eq(el[0]["xtics"], [[1, "graceful handover"], [2, "crash failover"]])
    tk = rep.derived_plots(TAKEOVER)
    check_eq(tk[0]["ytics"], [[1, "cold standby, kill -9, 10k objects"],
                              [2, "warm standby, kill -9, 10k objects"]])
    check_eq(tk[0]["series"][0]["points"], [[0, 3.05, 1], [0, 2.71, 2]])
    check_eq(tk[0]["series"][1]["points"], [[3.05, 3.35, 1], [2.71, 2.95, 2]])
    # the translator's: CPU time when every full row has it, the rows with
    # cJSON inputs as a series of their own; wall time otherwise
    tr = rep.derived_plots({"benchmark": "translator", "rows": [
        {"case": "full, 1k VirtualServices", "p50_ms": 90.0, "cpu_ms": 9.0,
         "baseline_cpu_ms": 5.0},
        {"case": "full, 10k VirtualServices", "p50_ms": 900.0, "cpu_ms": 90.0,
         "baseline_cpu_ms": 50.0},
        {"case": "cJSON inputs: full, 10k VirtualServices", "p50_ms": 1900.0,
         "cpu_ms": 190.0, "baseline_cpu_ms": 50.0}]})
    trs = {s["label"]: s["points"] for s in tr[0]["series"]}
    check_eq(trs, {"full translation (CPU, median)": [[1000, 9.0], [10000, 90.0]],
                   "full translation from cJSON inputs (CPU, median)": [[10000, 190.0]],
                   "baseline: cJSON_Parse of the inputs": [[1000, 5.0], [10000, 50.0]]})
    wall = rep.derived_plots(GOOD)
    check_eq([s["label"] for s in wall[0]["series"]],
             ["full translation (wall, p50)", "baseline: cJSON_Parse of the inputs"])
    for p in el + tk + tr:
        rep.validate_plot("x", p)
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    try:
        os.makedirs(os.path.join(tmp, "doc"))
        r, _ = report(tmp, [write(os.path.join(tmp, "e.json"), ELECTION),
                            write(os.path.join(tmp, "k.json"), TAKEOVER)])
        check_eq(r.returncode, 0, r.stderr)
        check_eq(sorted(os.listdir(os.path.join(tmp, "doc", "plots"))),
                 ["election-failover.svg", "takeover-timeline.svg"])
        with open(os.path.join(tmp, "doc", "plots", "takeover-timeline.svg")) as f:
            svg = f.read()
        check("warm standby, kill -9, 10k objects" in svg, "row labels in the timeline")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def earlier_results_kept_and_readme():
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    try:
        os.makedirs(os.path.join(tmp, "doc"))
        os.makedirs(os.path.join(tmp, "results"))
        old = {"date": "2030-01-01T00:00:00Z", "machine": {}, "benchmarks": {
            "filters": {"benchmark": "filters", "title": "Filters: old", "measured":
                        "2030-01-01T00:00:00Z", "rows": [{"case": "old", "p50_ms": 1.0}]}}}
        write(os.path.join(tmp, "results", "2030-01-01.json"), old)
        write(os.path.join(tmp, "results", "2030-01-03.json"), {"benchmarks": {
            "future": {"benchmark": "future", "rows": []}}})    # newer: ignored
        readme = write(os.path.join(tmp, "README.md"),
                       "# x\n\nintro\n\n## At a glance\n\n"
                       "<!-- bench:glance:begin (generated by bench/report.py) -->\nstale\n"
                       "<!-- bench:glance:end -->\n\n## Map\nkept\n")
        r, md = report(tmp, [write(os.path.join(tmp, "a.json"), GOOD)], "--readme", readme,
                       "--wall-s", "12.5")
        check_eq(r.returncode, 0, r.stderr)
        check("## Filters: old" in md and "measured 2030-01-01T00:00:00Z" in md,
              "the older result is kept with its date")
        check("future" not in md, "a newer file is not an earlier result")
        check("2 benchmarks ran" not in md and "1 benchmarks ran in 12 s" in md, md[:800])
        with open(readme) as f:
            text = f.read()
        check("stale" not in text, "generated block replaced")
        check(text.startswith("# x\n\nintro\n\n## At a glance\n\n<!-- bench:glance:begin"), text)
        check(text.endswith("<!-- bench:glance:end -->\n\n## Map\nkept\n"), text)
        check("[translator](../doc/benchmarks.md#translator-fake)" in text or
              "(doc/benchmarks.md#translator-fake)" in text, text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


FAKE_OK = r'''#!/usr/bin/env python3
import json, sys, time
sys.stderr.write("progress of %s\n" % sys.argv[0])
print(json.dumps({"benchmark": "NAME", "title": "NAME bench",
                  "rows": [{"case": "c", "p50_ms": 1.5, "baseline_p50_ms": 3.0}]}))
'''


def run_sh():
    tmp = tempfile.mkdtemp(prefix="bench-run-")
    try:
        paths = []
        for name, body in (
                ("translator", FAKE_OK),
                ("kubesim", FAKE_OK),
                ("zeta", FAKE_OK),
                ("filters", "#!/usr/bin/env python3\nimport sys\nsys.exit(3)\n"),
                ("xds", "#!/usr/bin/env python3\nimport time\ntime.sleep(60)\n"),
                ("informer", "#!/usr/bin/env python3\nprint('{\"benchmark\": \"other\"}')\n")):
            p = os.path.join(tmp, "bench_%s.py" % name)
            write(p, body.replace("NAME", name))
            paths.append(p)
        env = dict(os.environ, BENCH_PATHS=" ".join(paths), BENCH_RESULTS=os.path.join(tmp, "r"),
                   BENCH_DOC=os.path.join(tmp, "d", "benchmarks.md"), BENCH_README="",
                   BENCH_TIMEOUT="30", BENCH_TIMEOUT_xds="2", BUILD=os.path.join(tmp, "build"))
        env.pop("BENCH", None)
        r = subprocess.run(["bash", RUN], capture_output=True, text=True, env=env, timeout=120)
        check_eq(r.returncode, 1, "a failing benchmark fails the suite:\n" + r.stderr)
        order = re.findall(r"bench: \[\d+/6\] (\S+)", r.stderr)
        check_eq(order, ["kubesim", "informer", "filters", "translator", "xds", "zeta"])
        check("bench: filters FAILED (exited with status 3)" in r.stderr, r.stderr)
        check("bench: xds FAILED (timed out after 2 s)" in r.stderr, r.stderr)
        check("bench: informer FAILED (printed no valid JSON object named \"informer\"" in
              r.stderr, r.stderr)
        check("3 of 6 benchmarks ok" in r.stderr, r.stderr)
        check("progress of" in r.stderr, "benchmark stderr is shown")
        with open(os.path.join(tmp, "d", "benchmarks.md")) as f:
            md = f.read()
        for name in ("kubesim", "translator", "zeta"):
            check("## %s bench" % name in md, name + " section")
        check("timed out after 2 s" in md and "exited with status 3" in md, md)
        res = os.listdir(os.path.join(tmp, "r"))
        check_eq(len(res), 1, res)
        with open(os.path.join(tmp, "r", res[0])) as f:
            doc = json.load(f)
        check(doc["benchmarks"]["zeta"]["wall_s"] >= 0, "wall time recorded")
        check(doc["suite_wall_s"] >= 2, doc.get("suite_wall_s"))
        check(os.path.exists(os.path.join(tmp, "build", "bench-logs", "zeta.log")), "log kept")
        # BENCH=substring: one benchmark, the others' sections kept
        env["BENCH"] = "zeta"
        r = subprocess.run(["bash", RUN], capture_output=True, text=True, env=env, timeout=60)
        check_eq(r.returncode, 0, r.stderr)
        with open(os.path.join(tmp, "d", "benchmarks.md")) as f:
            md2 = f.read()
        check("## kubesim bench" in md2 and "## zeta bench" in md2, "other sections kept")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def tables_of(md):
    """The markdown tables in |md|: a list of (header, rows), cells split."""
    out, lines = [], md.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            rows = []
            for r in lines[i + 2:]:
                if not r.startswith("|"):
                    break
                rows.append([c.strip() for c in r.strip().strip("|").split(" | ")])
            out.append(([c.strip() for c in ln.strip().strip("|").split(" | ")], rows))
    return out


MIXED = {
    "benchmark": "xds", "title": "xDS: fake mixed rows",
    "rows": [{"case": "push 1", "streams": 1, "p50_ms": 0.5, "p99_ms": 0.7, "pushes": 20},
             {"case": "idle memory", "streams": 10000, "rss_kb": 13.81, "heap_kb": 13.72,
              "nghttp2_kb": 9.37, "target": "<= 8 KB", "met": False},
             {"case": "push 1000", "streams": 1000, "p50_ms": 31.41, "p99_ms": 91.24,
              "pushes": 20, "baseline_p50_ms": 0.5, "target": "p99 <= 500 ms", "met": True},
             {"case": "setup a", "setup_p50_ms": 0.52, "runs": 5, "cpu_us": 280},
             {"case": "setup b", "setup_p50_ms": 0.53, "runs": 5, "cpu_us": 296,
              "baseline_setup_p50_ms": 0.52, "ratio": 1.01}]}


def tables_split_by_row_kind():
    tmp = tempfile.mkdtemp(prefix="bench-report-")
    try:
        os.makedirs(os.path.join(tmp, "doc"))
        r, md = report(tmp, [write(os.path.join(tmp, "x.json"), MIXED)])
        check_eq(r.returncode, 0, "report.py: " + r.stderr)
        tables = tables_of(section(md, "xDS: fake mixed rows"))
        # the pushes share a table (ratio computed for push 1000), the idle
        # memory row has its own, the setups theirs: not one 16-column table
        check_eq([[row[0] for row in rows] for _, rows in tables],
                 [["push 1", "push 1000"], ["idle memory"], ["setup a", "setup b"]])
        cells = set()
        for header, rows in tables:
            for j, col in enumerate(header):
                filled = sum(1 for row in rows if row[j] != "–")
                check(2 * filled >= len(rows), "column %s empty in most rows" % col)
            for row in rows:
                filled = sum(1 for c in row if c != "–")
                check(2 * filled >= len(header), "row %s empty in most columns" % row[0])
                cells |= {(row[0], col, c) for col, c in zip(header, row) if c != "–"}
        # every value is still there, under its own column
        want = {(x["case"], k, ("yes" if v else "no") if isinstance(v, bool) else str(v))
                for x in MIXED["rows"] for k, v in x.items()}
        want.add(("push 1000", "ratio", "62.82"))
        check_eq(cells, want)
        # a report alone (no FILE) redraws the same document and leaves the
        # results file as it was
        res = os.path.join(tmp, "results", "2030-01-02.json")
        with open(res) as f:
            before = f.read()
        r, md2 = report(tmp, [])
        check_eq(r.returncode, 0, "report.py alone: " + r.stderr)
        check_eq(md2, md, "the document redrawn")
        with open(res) as f:
            check_eq(f.read(), before, "the results file")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    t = Tap()
    t.case("report.py: tables, same-run ratios, own and derived plots, glance", tables_ratios_plots)
    t.case("report.py: malformed plot data refused, a failed run keeps the last good numbers",
           malformed_and_failed)
    t.case("report.py: plots derived from the election and takeover rows", derived_plots)
    t.case("report.py: earlier results kept; README block replaced, nothing else",
           earlier_results_kept_and_readme)
    t.case("report.py: a benchmark's rows split into tables by kind, every value kept",
           tables_split_by_row_kind)
    t.case("run.sh: order, timeouts, failures reported, the rest still runs", run_sh)
    t.done()


if __name__ == "__main__":
    main()
