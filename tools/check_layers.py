#!/usr/bin/env python3
"""tools/check_layers.py -- no #include points up a layer (doc/internals/design.md).

Each folder of src/ is a layer; a file may include headers of its own
layer and of the layers below it, as the design's table says:

    core/                  nothing of ours
    storage/, protocol/    core/
    net/                   protocol/, core/
    client/                protocol/, core/, storage/ (the near-cache)
    server/                net/, storage/, protocol/, core/
    router/                net/, client/, protocol/, core/
    squeal/, tools/        client/, storage/, protocol/, core/

include/cellar.h, libcellar's public header, belongs to client/: only the
layers that may use client/ may include it, and of client/'s own headers
only the route interface (client/route.h, client/route_api.h) and the
ring (client/ring.h): never client_int.h.  A file of src/ that includes
a header naming a layer it may not use fails the check, one line each:

    src/protocol/msg_serve.c: includes "cellar.h" (client/), which protocol/ may not use

Run by `make check-layers` (part of `make check`):

    tools/check_layers.py src

Standard library only.
"""

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

MAY_USE = {
    "core": set(),
    "storage": {"core"},
    "protocol": {"core"},
    "net": {"protocol", "core"},
    "client": {"protocol", "core", "storage"},
    "server": {"net", "storage", "protocol", "core"},
    "router": {"net", "client", "protocol", "core"},
    "squeal": {"client", "storage", "protocol", "core"},
    "tools": {"client", "storage", "protocol", "core"},
}
PUBLIC = {"cellar.h": "client"}         # include/<name> -> the layer it belongs to
# A layer's headers the layers above may include; absent: all of them.  libcellar's
# insides (client_int.h and the rest) stay inside: the router takes the route
# interface, cellar-ring the ring.
OPEN = {"client": {"cellar.h", "client/route.h", "client/route_api.h", "client/ring.h"}}


def layer_of_include(name, here):
    """The layer an #include "name" of a file in layer `here` reaches, or None
    for a header beside the file (no folder in its name, not a public one)."""
    if name in PUBLIC:
        return PUBLIC[name]
    if "/" not in name:
        return here
    top = name.split("/", 1)[0]
    return top if top in MAY_USE else None


def check(src):
    bad = []
    for layer in sorted(MAY_USE):
        root = os.path.join(src, layer)
        for dirpath, _dirs, files in os.walk(root):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for name in INCLUDE.findall(text):
                    to = layer_of_include(name, layer)
                    if to is None or to == layer:
                        continue
                    if to not in MAY_USE[layer]:
                        bad.append('%s: includes "%s" (%s/), which %s/ may not use'
                                   % (path, name, to, layer))
                    elif to in OPEN and name not in OPEN[to]:
                        bad.append('%s: includes "%s", inside %s/ (others take %s)'
                                   % (path, name, to, ", ".join(sorted(OPEN[to]))))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="the source tree's src/ folder")
    a = ap.parse_args()
    missing = [l for l in MAY_USE if not os.path.isdir(os.path.join(a.src, l))]
    if missing:
        print("check_layers: no folder for %s under %s" % (", ".join(missing), a.src))
        return 2
    bad = check(a.src)
    for line in bad:
        print(line)
    print("check_layers: %d layers, %s" % (len(MAY_USE), "%d includes point up" % len(bad)
                                            if bad else "no include points up"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
