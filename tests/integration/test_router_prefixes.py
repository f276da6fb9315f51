"""Routing prefixes through cellar-router: the paper's two regions of two
front-end clusters each, a regional pool per region and a gutter
(examples/router/regions.json, run as it is written with its addresses
moved to free ports), with cellard behind every pool.  Which backend holds
what is read from the backends themselves."""

import contextlib
import os
import re
import subprocess

import util
from router_util import Router, backend, need, restart

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "router",
                       "regions.json")
ADDR = re.compile(r"127\.0\.0\.1:(2\d{4})")
POOL = re.compile(r'"([\w.]+)":\s*\{\s*"servers":\s*\[([^\]]*)\]')


@contextlib.contextmanager
def regions():
    """The example's config with a cellard on each of its addresses, and
    {pool: [backends]}."""
    text = open(EXAMPLE).read()
    ports = sorted(set(ADDR.findall(text)))
    with contextlib.ExitStack() as stack:
        by_port = {p: stack.enter_context(backend("be" + p)) for p in ports}
        pools = {name: [by_port[p] for p in ADDR.findall(servers)]
                 for name, servers in POOL.findall(text)}
        assert len(pools) == 7, pools
        yield ADDR.sub(lambda m: "%s:%d" % (util.HOST, by_port[m.group(1)].port), text), pools


def holds(servers, key):
    """The value one of servers holds for key, or None."""
    for s in servers:
        with s.conn() as c:
            v = c.get(key)
            if v is not None:
                return v
    return None


def where(pools, key):
    """The pools that hold key, by name."""
    return sorted(name for name, servers in pools.items() if holds(servers, key) is not None)


def test_keys_go_by_their_routing_prefix():
    with regions() as (cfg, pools):
        with Router(cfg, args=["-R", "/east/fe1/"]) as r, r.conn() as c:
            # no prefix: this router's cluster, the key whole
            c.expect(b"set k 1 0 2\r\nv1\r\n", b"STORED\r\n")
            assert where(pools, "k") == ["east.fe1"]
            # its region's regional pool for r: keys
            c.expect(b"set r:k 0 0 2\r\nv2\r\n", b"STORED\r\n")
            assert where(pools, "r:k") == ["east.regional"]
            # another cluster: the key without its prefix, and VALUE echoes the key asked
            c.expect(b"set /west/fe2/k 2 0 2\r\nv3\r\n", b"STORED\r\n")
            assert holds(pools["west.fe2"], "k") == b"v3"
            assert where(pools, "/west/fe2/k") == []
            c.expect(b"get /west/fe2/k k\r\n",
                     b"VALUE /west/fe2/k 2 2\r\nv3\r\nVALUE k 1 2\r\nv1\r\nEND\r\n")
            c.expect(b"get /west/fe1/r:k\r\n", b"END\r\n")      # the west regional pool
            c.expect(b"set /west/fe1/r:k 0 0 2\r\nv4\r\n", b"STORED\r\n")
            assert holds(pools["west.regional"], "r:k") == b"v4"
            # a meta client too; a base64 key's '/'s are no prefix
            c.expect(b"mg /west/fe2/k v\r\n", b"VA 2\r\nv3\r\n")
            c.expect(b"ms /x/y/zzz 2 b\r\nv6\r\n", b"HD\r\n")
            c.expect(b"mg /x/y/zzz b v\r\n", b"VA 2\r\nv6\r\n")
            # a region's clusters
            c.expect(b"set /west/*/w 0 0 2\r\nv5\r\n", b"STORED\r\n")
            util.wait_for(lambda: where(pools, "w") == ["west.fe1", "west.fe2"], 5,
                          what="both west clusters to hold w")
            # every cluster; a regional pool shared by two clusters gets it once
            c.expect(b"delete /*/*/k\r\n", b"DELETED\r\n")
            util.wait_for(lambda: where(pools, "k") == [], 5, what="k deleted everywhere")
            before = int(pools["east.regional"][0].stats()["cmd_touch"])
            c.expect(b"touch /*/*/r:k 100\r\n", b"TOUCHED\r\n")
            util.wait_for(lambda: int(pools["west.regional"][0].stats()["cmd_touch"]) == 1, 5,
                          what="the west regional pool's touch")
            assert int(pools["east.regional"][0].stats()["cmd_touch"]) == before + 1
            # a prefix no alias names, as mcrouter answers it; nothing is sent
            c.expect(b"get /north/fe1/k\r\n", b"SERVER_ERROR RootRoute: No rh found\r\n")
            c.expect(b"set /north/fe1/k 0 0 1\r\nx\r\n",
                     b"SERVER_ERROR RootRoute: No rh found\r\n")
            c.expect(b"get /east/*x/k\r\n", b"SERVER_ERROR RootRoute: No rh found\r\n")
            # slashes that make no prefix: the key whole, to this cluster
            c.expect(b"set /a/b 0 0 1\r\nx\r\n", b"STORED\r\n")
            assert where(pools, "/a/b") == ["east.fe1"]
            routes = r.stats("routes")
            assert "route_%d:RootRoute(default=/east/fe1/)" % (len(routes) - 1) in routes, routes


def test_send_invalid_route_to_default_and_the_gutter():
    with regions() as (cfg, pools):
        with Router(cfg, args=["-R", "/west/fe2/", "--send-invalid-route-to-default"]) as r, \
                r.conn() as c:
            c.expect(b"set /north/fe1/q 0 0 1\r\nq\r\n", b"STORED\r\n")
            assert where(pools, "q") == ["west.fe2"]
            # a cluster's server down: its keys to the gutter, as without prefixes
            for s in pools["east.fe1"]:
                s.proc.kill()
                s.proc.wait()
            c.expect(b"set /east/fe1/g 0 0 1\r\ng\r\n", b"STORED\r\n")
            assert holds(pools["gutter"], "g") == b"g"
            c.expect(b"get /east/fe1/g\r\n", b"VALUE /east/fe1/g 0 1\r\ng\r\nEND\r\n")
            for s in pools["east.fe1"]:
                restart(s)          # so that they are stopped as they were started


def test_a_default_route_the_routes_lack_is_refused():
    with regions() as (cfg, _pools):
        r = Router(cfg, args=["-R", "/east/fe9/"])
        try:
            with r:
                raise AssertionError("cellar-router started without its default route")
        except AssertionError as e:
            assert "invalid default route" in str(e), e
        # without -R the default is mcrouter's /././, which these routes lack too
        argv = [need(os.environ.get("CELLAR_ROUTER"), "CELLAR_ROUTER"), "--config", r.config,
                "-p", "0"]
        with open(r.config, "w") as f:
            f.write(cfg)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        finally:
            os.unlink(r.config)
        assert p.returncode == 1, p
        assert 'invalid default route: no routes entry has the alias "/././"' in p.stderr, p
