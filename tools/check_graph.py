#!/usr/bin/env python3
"""tools/check_graph.py -- no circles between the files of a folder, no file too long.

For each folder given (src/storage, src/server...), two graphs:

    includes:  file -> header, for each #include "folder/x.h" of a file of
               the folder (a .c or a .h) naming another file of the folder
    calls:     a.c -> b.c, when a's object file needs a symbol that b's
               object defines (nm on the build's objects, B/obj/<folder>/)

Either graph with a circle (a strongly connected set of two or more
files) fails the check and is printed, one circle a line, with the
symbols that tie each file to the next.  A file of the folder longer than
--max-lines fails too.  Run by `make check-graph` after a build:

    tools/check_graph.py --build build --max-lines 1000 src/storage src/server

Standard library and binutils' nm only.
"""

import argparse
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sccs(nodes, edges):
    """Tarjan's strongly connected components with two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def include_graph(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith((".c", ".h")))
    prefix = os.path.basename(folder.rstrip("/")) + "/"
    edges = {}
    for f in files:
        with open(os.path.join(folder, f)) as fh:
            for inc in INCLUDE.findall(fh.read()):
                if inc.startswith(prefix) and inc[len(prefix):] in files and inc[len(prefix):] != f:
                    edges.setdefault(f, {})[inc[len(prefix):]] = ["#include"]
    return files, edges


def nm_symbols(obj):
    r = subprocess.run(["nm", "--defined-only", "-g", obj], stdout=subprocess.PIPE, text=True,
                       check=True)
    defined = {l.split()[-1] for l in r.stdout.splitlines() if l.strip()}
    r = subprocess.run(["nm", "-u", obj], stdout=subprocess.PIPE, text=True, check=True)
    undefined = {l.split()[-1] for l in r.stdout.splitlines() if l.strip()}
    return defined, undefined


def call_graph(folder, build):
    objdir = os.path.join(build, "obj", os.path.relpath(folder, "src"))
    sources = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    syms = {}
    for f in sources:
        obj = os.path.join(objdir, f[:-2] + ".o")
        if not os.path.exists(obj):
            sys.exit("check_graph: %s is not built (make B=%s first)" % (obj, build))
        syms[f] = nm_symbols(obj)
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner[s] = f
    edges = {}
    for f, (_, undefined) in syms.items():
        for s in undefined:
            g = owner.get(s)
            if g is not None and g != f:
                edges.setdefault(f, {}).setdefault(g, []).append(s)
    return sources, edges


def report(kind, folder, comps, edges):
    for comp in comps:
        print("check_graph: %s: a circle of %s among %s:" % (folder, kind, ", ".join(comp)))
        for a in comp:
            for b in comp:
                if b in edges.get(a, {}):
                    syms = sorted(edges[a][b])
                    print("    %s -> %s  (%s%s)" % (a, b, ", ".join(syms[:4]),
                                                   ", ..." if len(syms) > 4 else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="the build folder holding obj/")
    ap.add_argument("--max-lines", type=int, default=0, help="0: no limit")
    ap.add_argument("folders", nargs="+")
    o = ap.parse_args()
    bad = 0
    for folder in o.folders:
        before = bad
        files, inc = include_graph(folder)
        comps = sccs(files, inc)
        report("includes", folder, comps, inc)
        bad += len(comps)
        sources, calls = call_graph(folder, o.build)
        comps = sccs(sources, calls)
        report("calls", folder, comps, calls)
        bad += len(comps)
        if o.max_lines:
            for f in files:
                with open(os.path.join(folder, f)) as fh:
                    n = sum(1 for _ in fh)
                if n > o.max_lines:
                    print("check_graph: %s/%s has %d lines (at most %d)" %
                          (folder, f, n, o.max_lines))
                    bad += 1
        ncalls = sum(len(v) for v in calls.values())
        print("check_graph: %s: %d files, %d include and %d call edges between them%s" %
              (folder, len(files), sum(len(v) for v in inc.values()), ncalls,
               "" if bad > before else ", no circle, none too long" if o.max_lines
               else ", no circle"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
