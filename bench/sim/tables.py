#!/usr/bin/env python3
"""tables.py -- the miss-ratio tables of bench/sim/README.md, regenerated.

    make sim && python3 bench/sim/tables.py [--sim build/cellar-sim] [--out DIR]

Runs cellar-sim on the README's four workloads (zipf 0.9, zipf 0.6 and
uniform over 1,000,000 objects in object-count mode, and zipf 0.9 with
100-3000 byte objects through the slab allocator; 10,000,000 requests,
seed 1, caches of 0.1%, 1% and 10%), every policy, and prints one
Markdown table per workload with the requests per second of each policy
under it.  CSV and SVG files go to --out (default: a temporary folder).
Takes a few minutes on two cores.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

WORKLOADS = [
    ("zipf09", "zipf:alpha=0.9,objects=1M,requests=10M", []),
    ("zipf06", "zipf:alpha=0.6,objects=1M,requests=10M", []),
    ("uniform", "uniform:objects=1M,requests=10M", []),
    ("zipf09-bytes", "zipf:alpha=0.9,objects=1M,requests=10M,size=100-3000", ["-b", "--no-opt"]),
]


def size_label(row):
    frac = "%.1f%%" % (100 * float(row["fraction"]))
    if row["unit"] == "bytes":
        mb = int(row["capacity"]) / 1e6
        return "%s MB (%s)" % (("%.3g" % mb), frac)
    return frac


def table(rows):
    policies = []
    for r in rows:
        if r["policy"] not in policies:
            policies.append(r["policy"])
    sizes = []
    for r in rows:
        if r["capacity"] not in sizes:
            sizes.append(r["capacity"])
    mr = {(r["policy"], r["capacity"]): float(r["miss_ratio"]) for r in rows}
    label = {r["capacity"]: size_label(r) for r in rows}
    out = ["| cache | " + " | ".join(policies) + " |",
           "|---|" + "---|" * len(policies)]
    for c in sizes:
        out.append("| %s | " % label[c] +
                   " | ".join("%.4f" % mr[(p, c)] for p in policies) + " |")
    speed = {}
    for r in rows:
        if r["policy"] != "OPT":
            speed.setdefault(r["policy"], []).append(float(r["mreq_per_s"]))
    out.append("")
    out.append("Million requests per second per engine (mean over the sizes): " +
               ", ".join("%s %.1f" % (p, sum(v) / len(v)) for p, v in speed.items()))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", default="build/cellar-sim")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    o = ap.parse_args()
    out = o.out or tempfile.mkdtemp(prefix="cellar-tables-")
    os.makedirs(out, exist_ok=True)
    for name, spec, extra in WORKLOADS:
        if o.only and name not in o.only.split(","):
            continue
        path = os.path.join(out, name + ".csv")
        cmd = [o.sim, "-g", spec, "-s", "1", "-c", "0.001,0.01,0.1", "-p", "all", "-q",
               "--csv", path, "--svg", os.path.join(out, name + ".svg")] + extra
        print("`%s`" % " ".join(["cellar-sim"] + cmd[1:]), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        print("### %s\n\n%s\n" % (name, table(rows)))
    print("CSV and SVG files: %s" % out, file=sys.stderr)


if __name__ == "__main__":
    main()
