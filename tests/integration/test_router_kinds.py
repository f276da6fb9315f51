"""mcrouter's simpler route kinds through cellar-router, with cellard behind
every pool: ErrorRoute, DevNullRoute (and `stats all`'s dev_null_requests),
ModifyExptimeRoute, AllFastestRoute and AllMajorityRoute.  What reached a
backend is read from the backend itself."""

import contextlib
import json
import os
import select
import socket
import subprocess
import tempfile
import threading
import time
import zlib

import util
from router_util import Router, backend, need, restart

ROUTER = os.environ.get("CELLAR_ROUTER")


def held(server, key):
    """What server holds for key, or None."""
    with server.conn() as c:
        return c.get(key)


def run_router(cfg_text, *args):
    """cellar-router on cfg_text with args, as a process that exits (refusing
    the configuration or a flag, or --validate-config): its result."""
    with tempfile.NamedTemporaryFile("w", prefix="cellar-rk-", suffix=".json") as f:
        f.write(cfg_text)
        f.flush()
        return subprocess.run([need(ROUTER, "CELLAR_ROUTER"), "--config", f.name, "-p", "0"]
                              + list(args), capture_output=True, text=True, timeout=10)


@contextlib.contextmanager
def servers(n):
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(backend("be%d" % i)) for i in range(n)]


def pool(s):
    return {"servers": ["%s:%d" % (util.HOST, s.port)]}


def dead_pool():
    return {"servers": ["%s:%d" % (util.HOST, util.free_port())], "server_timeout": 200}


def config(bes):
    return json.dumps({
        "pools": {"a": pool(bes[0]), "b": pool(bes[1]), "c": pool(bes[2]),
                  "dead": dead_pool()},
        "route": {
            "type": "PrefixSelectorRoute",
            "policies": {
                "err:": "ErrorRoute|reject",
                "busy:": {"type": "ErrorRoute", "result": "mc_res_busy"},
                "null:": "DevNullRoute",
                "exp:": {"type": "ModifyExptimeRoute", "target": "PoolRoute|a",
                         "exptime": -1},
                "min:": {"type": "ModifyExptimeRoute", "target": "PoolRoute|a",
                         "action": "min", "exptime": 1000},
                "fast:": {"type": "AllFastestRoute",
                          "children": ["PoolRoute|dead", "PoolRoute|a", "PoolRoute|b"]},
                "deadfast:": {"type": "AllFastestRoute",
                              "children": ["PoolRoute|dead", "PoolRoute|dead"]},
                "maj:": {"type": "AllMajorityRoute",
                         "children": ["PoolRoute|a", "PoolRoute|b", "PoolRoute|c"]},
            },
            "wildcard": "PoolRoute|a",
        },
    })


def ttl(server, key):
    with server.conn() as c:
        c.send(b"mg %s t\r\n" % key)
        return c.readline()


def test_error_and_dev_null_routes():
    with servers(3) as bes, Router(config(bes)) as r, r.conn() as c:
        c.expect(b"set err:k 0 0 1\r\nv\r\n", b"SERVER_ERROR reject\r\n")
        c.expect(b"get err:k\r\n", b"SERVER_ERROR reject\r\n")
        c.expect(b"delete busy:k\r\n", b"SERVER_ERROR 307 busy\r\n")
        # DevNullRoute: NullRoute's answers, nothing sent, each counted
        c.expect(b"set null:k 0 0 1\r\nv\r\n", b"NOT_STORED\r\n")
        c.expect(b"get null:k\r\n", b"END\r\n")
        c.expect(b"delete null:k\r\n", b"NOT_FOUND\r\n")
        c.expect(b"mg null:k v\r\n", b"EN\r\n")       # a meta client's too
        c.expect(b"ms null:k 1\r\nv\r\n", b"NS\r\n")
        c.expect(b"md null:k\r\n", b"NF\r\n")
        assert all(held(be, "null:k") is None for be in bes)
        assert int(r.stats("all")["dev_null_requests"]) == 6
        c.expect(b"get plain\r\n", b"END\r\n")
        st, plain = r.stats("all"), r.stats()
        assert int(st["dev_null_requests"]) == 6
        # mcrouter's names beside cellar's own, from the same counters
        for mcr, ours in (("cmd_get_count", "cmd_get"), ("cmd_set_count", "cmd_set"),
                          ("cmd_delete_count", "cmd_delete"), ("failover_all", "failovers")):
            assert st[mcr] == plain[ours] == st[ours], (mcr, st[mcr], plain[ours])
        # mcrouter counts a server once per proxy: cellar-router, once per worker
        assert int(st["num_servers"]) == int(plain["servers"]) * int(plain["threads"])
        assert sum(int(st["num_servers_" + k]) for k in ("new", "up", "down", "closed")) == \
            int(st["num_servers"])
        assert plain["result_error_count"] == plain["errors"] == "3"   # err:k twice, busy:k
        assert plain["result_client_error_count"] == plain["client_errors"] == "0"


def test_modify_exptime_route():
    with servers(3) as bes, Router(config(bes)) as r, r.conn() as c:
        # set: every store gets exptime -1, gone at once; a delete is left alone
        with bes[0].conn() as b:
            b.expect(b"set exp:k 0 0 1\r\nv\r\n", b"STORED\r\n")
        c.expect(b"get exp:k\r\n", b"VALUE exp:k 0 1\r\nv\r\nEND\r\n")
        c.expect(b"set exp:k 0 0 2\r\nv2\r\n", b"STORED\r\n")
        assert held(bes[0], "exp:k") is None
        c.expect(b"delete exp:k\r\n", b"NOT_FOUND\r\n")
        # min: never and later become 1000 s; sooner stays
        c.expect(b"set min:never 0 0 1\r\nv\r\n", b"STORED\r\n")
        c.expect(b"set min:later 0 5000 1\r\nv\r\n", b"STORED\r\n")
        c.expect(b"set min:sooner 0 100 1\r\nv\r\n", b"STORED\r\n")
        for key, most in ((b"min:never", 1000), (b"min:later", 1000), (b"min:sooner", 100)):
            line = ttl(bes[0], key)
            assert line.startswith(b"HD t"), line
            assert most - 5 <= int(line[4:]) <= most, (key, line)
        c.expect(b"touch min:never 0\r\n", b"TOUCHED\r\n")
        assert 995 <= int(ttl(bes[0], b"min:never")[4:]) <= 1000


def test_all_fastest_route():
    with servers(3) as bes, Router(config(bes)) as r, r.conn() as c:
        # the dead pool's failure is not the answer while another child has one
        c.expect(b"set fast:k 0 0 1\r\nv\r\n", b"STORED\r\n")
        util.wait_for(lambda: held(bes[0], "fast:k") == b"v" and held(bes[1], "fast:k") == b"v",
                      5, what="both live pools to hold fast:k")
        for _ in range(5):
            c.expect(b"get fast:k\r\n", b"VALUE fast:k 0 1\r\nv\r\nEND\r\n")
        # every child failing: the last failure is the answer
        c.send(b"get deadfast:k\r\n")
        assert c.readline().startswith(b"SERVER_ERROR"), "no error when every child failed"


def test_all_majority_route():
    with servers(3) as bes, Router(config(bes)) as r, r.conn() as c:
        for be in bes[:2]:
            with be.conn() as b:
                b.expect(b"set maj:k 0 0 1\r\nv\r\n", b"STORED\r\n")
        # two of three hold it: the hit is the majority
        c.expect(b"get maj:k\r\n", b"VALUE maj:k 0 1\r\nv\r\nEND\r\n")
        # two of three miss it
        with bes[0].conn() as b:
            b.expect(b"delete maj:k\r\n", b"DELETED\r\n")
        c.expect(b"get maj:k\r\n", b"END\r\n")
        # a delete all three see: two answer NOT_FOUND, one DELETED
        c.expect(b"delete maj:k\r\n", b"NOT_FOUND\r\n")
        util.wait_for(lambda: held(bes[1], "maj:k") is None, 5, what="the delete to reach b")
        # add: stored on all three
        c.expect(b"add maj:n 0 0 1\r\nx\r\n", b"STORED\r\n")
        util.wait_for(lambda: all(held(be, "maj:n") == b"x" for be in bes), 5,
                      what="maj:n on every backend")


def test_new_kinds_refuse_bad_settings():
    bad = [
        ({"type": "ModifyExptimeRoute", "target": "PoolRoute|a"}, "exptime"),
        ({"type": "ModifyExptimeRoute", "target": "PoolRoute|a", "exptime": 5,
          "action": "max"}, "\"set\" or \"min\""),
        ({"type": "ErrorRoute", "result": "mc_res_found"}, "not an error result"),
        ("DevNullRoute|x", "takes nothing after"),
    ]
    with servers(3) as bes:
        for route, why in bad:
            cfg = json.loads(config(bes))
            cfg["route"] = route
            res = run_router(json.dumps(cfg))
            assert res.returncode == 1 and why in res.stderr, (route, res.stderr)


def test_mcrouter_lease_and_metaget_commands():
    """lease-get wins a lease on a miss (LVALUE and its token), a second
    lease-get while it is held is a hot miss (token 1), lease-set stores
    only with the token, and a hit is VALUE; metaget gives the exptime the
    backend keeps.  Bad lines are CLIENT_ERROR, and the connection goes on."""
    with servers(3) as bes, Router(config(bes)) as r, r.conn() as c:
        c.send(b"set first 0 0 1\r\nx\r\n")       # so that no lease's token is 1
        assert c.readline() == b"STORED\r\n"
        c.send(b"lease-get lk\r\n")
        head = c.readline().split()
        assert head[0] == b"LVALUE" and head[1] == b"lk" and int(head[2]) > 1, head
        token = int(head[2])
        assert c.readline() == b"\r\n" and c.readline() == b"END\r\n"
        c.expect(b"lease-get lk\r\n", b"LVALUE lk 1 0 0\r\n\r\nEND\r\n")
        c.expect(b"lease-set lk %d 5 0 3\r\nnew\r\n" % (token + 1000), b"NOT_STORED\r\n")
        c.expect(b"lease-set lk %d 5 0 3\r\nnew\r\n" % token, b"STORED\r\n")
        c.expect(b"lease-get lk first\r\n", b"VALUE lk 5 3\r\nnew\r\nVALUE first 0 1\r\nx\r\nEND\r\n")
        assert held(bes[0], "lk") == b"new"
        # a lease given up to a delete: the fill fails
        c.send(b"lease-get gone\r\n")
        token = int(c.readline().split()[2])
        c.readline(), c.readline()
        c.expect(b"delete gone\r\n", b"DELETED\r\n")
        c.expect(b"lease-set gone %d 0 0 1\r\nv\r\n" % token, b"NOT_STORED\r\n")
        # metaget: the absolute exptime, 0 for never; a miss is END alone
        now = int(time.time())
        c.expect(b"set m 0 100 1\r\nx\r\n", b"STORED\r\n")
        c.send(b"metaget m\r\n")
        line = c.readline()
        assert line.startswith(b"META m age: unknown; exptime: "), line
        assert now + 99 <= int(line.split(b"exptime: ")[1].split(b";")[0]) <= now + 102, line
        assert line.endswith(b"; from: unknown; is_transient: 0;\r\n"), line
        assert c.readline() == b"END\r\n"
        c.send(b"metaget first\r\n")
        assert b" exptime: 0;" in c.readline() and c.readline() == b"END\r\n"
        c.expect(b"metaget nothere\r\n", b"END\r\n")
        for bad in (b"metaget\r\n", b"metaget a b\r\n", b"lease-get\r\n", b"lease-set k 1 0\r\n",
                    b"lease-set k x 0 0 1\r\n"):
            c.expect(bad, b"CLIENT_ERROR bad command line format\r\n")
        c.expect(b"get m\r\n", b"VALUE m 0 1\r\nx\r\nEND\r\n")


def test_a_server_at_port_0_fails_to_connect_in_mcrouters_words():
    """mcrouter's configurations may name port 0 for a server nothing can
    reach: it is accepted, and each request fails as a connection error,
    worded as mcrouter words it; a server timing out is "Reply timeout"."""
    mute = socket.socket()
    mute.bind((util.HOST, 0))
    mute.listen(8)                  # connections are taken, nothing is ever answered
    cfg = json.dumps({
        "pools": {"z": {"servers": ["localhost:0"]},
                  "m": {"servers": ["%s:%d" % (util.HOST, mute.getsockname()[1])],
                        "server_timeout": 200}},
        "route": {"type": "PrefixSelectorRoute", "policies": {"m:": "PoolRoute|m"},
                  "wildcard": "PoolRoute|z"}})
    with contextlib.closing(mute), Router(cfg) as r, r.conn() as c:
        c.expect(b"set k 0 0 1\r\nv\r\n", b"SERVER_ERROR connection error\r\n")
        c.send(b"get k\r\n")
        assert c.readline().startswith(b"SERVER_ERROR "), "a get of a server at port 0"
        c.expect(b"set m:k 0 0 1\r\nv\r\n", b"SERVER_ERROR Reply timeout\r\n")


def l1l2_config(bes):
    return json.dumps({
        "pools": {"l1": pool(bes[0]), "l2": pool(bes[1])},
        "route": {
            "type": "PrefixSelectorRoute",
            "policies": {
                "nc:": {"type": "L1L2CacheRoute", "l1": "PoolRoute|l1", "l2": "PoolRoute|l2",
                        "upgradingL1Exptime": 0, "ncacheExptime": 3600,
                        "ncacheUpdatePeriod": 3},
            },
            "wildcard": {"type": "L1L2CacheRoute", "l1": "PoolRoute|l1", "l2": "PoolRoute|l2",
                         "upgradingL1Exptime": 100},
        },
    })


def store(server, line, value):
    with server.conn() as c:
        c.expect(line + b"\r\n" + value + b"\r\n", b"STORED\r\n")


def test_l1l2_cache_route():
    """Gets try l1, then l2, whose hit is added to l1 in the background
    (with upgradingL1Exptime); everything else goes to l1 only."""
    with servers(2) as (l1, l2), Router(l1l2_config((l1, l2, None))) as r, r.conn() as c:
        store(l1, b"set a 1 0 2", b"l1")
        store(l2, b"set a 2 0 2", b"l2")
        c.expect(b"get a\r\n", b"VALUE a 1 2\r\nl1\r\nEND\r\n")
        store(l2, b"set b 3 0 2", b"l2")
        c.expect(b"get b\r\n", b"VALUE b 3 2\r\nl2\r\nEND\r\n")
        util.wait_for(lambda: held(l1, "b") == b"l2", 5, what="l1 filled from l2")
        line = ttl(l1, b"b")
        assert line.startswith(b"HD t") and 95 <= int(line[4:]) <= 100, line
        c.expect(b"get nowhere\r\n", b"END\r\n")
        c.expect(b"set w 0 0 1\r\nw\r\n", b"STORED\r\n")
        assert held(l1, "w") == b"w" and held(l2, "w") is None
        c.expect(b"delete b\r\n", b"DELETED\r\n")
        assert held(l1, "b") is None and held(l2, "b") == b"l2"


def test_l1l2_negative_cache():
    """With ncacheUpdatePeriod, an l2 miss leaves a negative entry in l1
    (flags 0x10000) that answers as a miss; every period-th such answer
    asks l2 again and refreshes l1."""
    with servers(2) as (l1, l2), Router(l1l2_config((l1, l2, None))) as r, r.conn() as c:
        c.expect(b"get nc:x\r\n", b"END\r\n")

        def negative():
            with l1.conn() as b:
                b.send(b"get nc:x\r\n")
                return b.read_get_reply()
        util.wait_for(lambda: negative() == [(b"nc:x", 65536, b"ncache", None)], 5,
                      what="the negative entry in l1")
        store(l2, b"set nc:x 7 0 3", b"new")
        c.expect(b"get nc:x\r\n", b"END\r\n")      # the negative entry answers
        c.expect(b"get nc:x\r\n", b"END\r\n")
        c.expect(b"get nc:x\r\n", b"END\r\n")      # the third: l2 asked again
        util.wait_for(lambda: held(l1, "nc:x") == b"new", 5, what="l1 refreshed from l2")
        c.expect(b"get nc:x\r\n", b"VALUE nc:x 7 3\r\nnew\r\nEND\r\n")


def where_is(bes, key):
    """The indexes of the backends that hold key."""
    return [i for i, be in enumerate(bes) if held(be, key) is not None]


def test_pool_route_hash_functions():
    """A PoolRoute's own hash (and a HashRoute's over routes): Crc32 places
    keys as (crc32 & 0x7fffffff) % n, with its salt after the key; a key
    hashes only up to "|#|"; WeightedCh3 never picks a server of weight 0."""
    with servers(4) as bes:
        addrs = ["%s:%d" % (util.HOST, be.port) for be in bes]
        cfg = json.dumps({
            "pools": {"p": {"servers": addrs}},
            "route": {"type": "PrefixSelectorRoute", "policies": {
                "c:": {"type": "PoolRoute", "pool": "p", "hash": "Crc32"},
                "s:": {"type": "PoolRoute", "pool": "p",
                       "hash": {"hash_func": "Crc32", "salt": "pepper"}},
                "w:": {"type": "PoolRoute", "pool": "p",
                       "hash": {"hash_func": "WeightedCh3", "weights": [0, 1, 0.5, 0]}},
                "h:": {"type": "HashRoute", "hash_func": "Crc32", "salt": "x",
                       "children": ["Pool|p"]}},
                "wildcard": "PoolRoute|p"}})
        with Router(cfg) as r, r.conn() as c:
            for i in range(40):
                for key, hashed in (("c:%d" % i, "c:%d" % i),
                                    ("s:%d" % i, "s:%d" % i + "pepper"),
                                    ("h:%d" % i, "h:%d" % i + "x"),
                                    ("c:%d|#|tail%d" % (i % 5, i), "c:%d" % (i % 5))):
                    c.expect(b"set %s 0 0 1\r\nv\r\n" % key.encode(), b"STORED\r\n")
                    want = (zlib.crc32(hashed.encode()) & 0x7fffffff) % 4
                    assert where_is(bes, key) == [want], (key, where_is(bes, key), want)
            used = set()
            for i in range(200):
                key = "w:%d" % i
                c.expect(b"set %s 0 0 1\r\nv\r\n" % key.encode(), b"STORED\r\n")
                used.update(where_is(bes, key))
            assert used == {1, 2}, used
        bad = json.loads(cfg)
        for hash_, why in (("Md5", "not one cellar knows"),
                           ({"hash_func": "WeightedCh3"}, "needs \"weights\""),
                           ({"hash_func": "WeightedCh3", "weights": [2]}, "[0, 1]"),
                           ({"hash_func": "Crc32", "bucketize": True}, "unknown key")):
            bad["route"] = {"type": "PoolRoute", "pool": "p", "hash": hash_}
            res = run_router(json.dumps(bad))
            assert res.returncode == 1 and why in res.stderr, (hash_, res.stderr)


def test_migrate_route():
    """Before start_time everything goes to from; after start + 2 intervals
    everything to to; in between deletes go to both and each other request
    to from until its key's own moment in the second interval."""
    now = int(time.time())
    with servers(2) as (old, new):
        def mig(start, interval):
            return {"type": "MigrateRoute", "from": "PoolRoute|old", "to": "PoolRoute|new",
                    "start_time": start, "interval": interval}
        cfg = json.dumps({
            "pools": {"old": pool(old), "new": pool(new)},
            "route": {"type": "PrefixSelectorRoute", "policies": {
                "before:": mig(now + 100000, 3600),
                "after:": mig(now - 100000, 3600),
                "during:": mig(now - 5, 3600)}, "wildcard": "PoolRoute|old"}})
        with Router(cfg) as r, r.conn() as c:
            for prefix, where_ in (("before:", [0]), ("after:", [1]), ("during:", [0])):
                for i in range(10):
                    key = "%s%d" % (prefix, i)
                    c.expect(b"set %s 0 0 1\r\nv\r\n" % key.encode(), b"STORED\r\n")
                    assert where_is((old, new), key) == where_, (key, where_is((old, new), key))
            # during the first interval a delete reaches both
            store(new, b"set during:0 0 0 1", b"n")
            c.expect(b"delete during:0\r\n", b"DELETED\r\n")
            assert where_is((old, new), "during:0") == []
            c.expect(b"delete before:1\r\n", b"DELETED\r\n")
            c.expect(b"get after:2\r\n", b"VALUE after:2 0 1\r\nv\r\nEND\r\n")


def test_keep_routing_prefix():
    """A pool with keep_routing_prefix gets the key with the routing prefix
    the client wrote (placed by the key without it); the others the key
    alone; a get through the prefix reads it back either way."""
    with servers(2) as (a, b):
        cfg = json.dumps({
            "pools": {"A": pool(a), "B": dict(pool(b), keep_routing_prefix=True)},
            "routes": [{"aliases": ["/r/a/"], "route": "PoolRoute|A"},
                       {"aliases": ["/r/b/"], "route": "Pool|B"}]})
        with Router(cfg, args=["-R", "/r/a/"]) as r, r.conn() as c:
            c.expect(b"set /r/b/k 0 0 1\r\nv\r\n", b"STORED\r\n")
            assert held(b, "/r/b/k") == b"v" and held(b, "k") is None
            c.expect(b"set /r/*/w 0 0 1\r\nw\r\n", b"STORED\r\n")
            util.wait_for(lambda: held(a, "w") == b"w" and held(b, "/r/*/w") == b"w", 5,
                          what="w in A as itself, in B with its prefix")
            c.expect(b"get /r/b/k\r\n", b"VALUE /r/b/k 0 1\r\nv\r\nEND\r\n")
            c.expect(b"mg /r/b/k v\r\n", b"VA 1\r\nv\r\n")
            c.expect(b"set plain 0 0 1\r\np\r\n", b"STORED\r\n")
            assert held(a, "plain") == b"p"


def test_shadows():
    """A PoolRoute's shadows: requests of the keys on the servers in a
    shadow's index range (and in its key fraction) are also sent to the
    shadow's target, in the background; keys_to_shadow names keys on any
    server; the client hears only the pool's answer."""
    with servers(4) as (m0, m1, sh, sk):
        cfg = json.dumps({
            "pools": {"main": {"servers": ["%s:%d" % (util.HOST, s.port) for s in (m0, m1)]},
                      "shadow": pool(sh), "keys": pool(sk)},
            "route": {"type": "PoolRoute", "pool": "main", "shadows": [
                {"target": "PoolRoute|shadow", "index_range": [0, 1],
                 "key_fraction_range": [0, 1], "key_fraction_range_rv": "kfr"},
                {"target": "PoolRoute|keys", "keys_to_shadow": ["k3", "k7"]}]}})
        with Router(cfg) as r, r.conn() as c:
            on0 = []
            for i in range(30):
                key = "k%d" % i
                c.expect(b"set %s 0 0 1\r\nv\r\n" % key.encode(), b"STORED\r\n")
                if held(m0, key) is not None:
                    on0.append(key)
            assert 0 < len(on0) < 30, on0
            util.wait_for(lambda: all(held(sh, k) == b"v" for k in on0), 5,
                          what="the keys of server 0 in the shadow")
            util.wait_for(lambda: held(sk, "k3") == b"v" and held(sk, "k7") == b"v", 5,
                          what="keys_to_shadow in their shadow")
            assert all(held(sh, "k%d" % i) is None for i in range(30) if "k%d" % i not in on0)
            assert [i for i in range(30) if held(sk, "k%d" % i) is not None] == [3, 7]
            c.expect(b"delete %s\r\n" % on0[0].encode(), b"DELETED\r\n")
            util.wait_for(lambda: held(sh, on0[0]) is None, 5, what="the shadow's delete")


def test_shutdown_only_when_enabled():
    """`shutdown` stops the router when it runs with --enable-shutdown (as
    mcrouter always does); without it the answer is memcached's refusal and
    the router serves on."""
    with servers(3) as bes:
        with Router(config(bes)) as r, r.conn() as c:
            c.expect(b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n")
            c.expect(b"get plain\r\n", b"END\r\n")
            assert r.proc.poll() is None
        with Router(config(bes), args=["--enable-shutdown"]) as r, r.conn() as c:
            c.send(b"shutdown\r\n")
            util.wait_for(lambda: r.proc.poll() is not None, 10, what="the router to stop")
            r._term_sent = True         # it stopped as told: no crash (else __exit__ stops it)
            assert r.proc.returncode == 0, r.proc.returncode


def test_mcrouter_default_flags():
    """--timeouts-until-tko, --server-timeout and -r (--probe-timeout-initial)
    set what a pool leaves out: with 1, the first connection error marks the
    server down and the next request fails at once in mcrouter's words; the
    probe brings it back once something listens.  Bad values are refused."""
    port = util.free_port()
    cfg = json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, port)]}},
                      "route": "PoolRoute|a"})
    with Router(cfg, args=["--timeouts-until-tko", "1", "--server-timeout", "300",
                           "-r", "50"]) as r, r.conn() as c:
        c.expect(b"get k\r\n", b"SERVER_ERROR connection error\r\n")
        c.send(b"get k\r\n")
        assert c.readline().startswith(b"SERVER_ERROR Server unavailable. Reason: ")
        be = subprocess.Popen([util.CELLARD, "-l", util.HOST, "-p", str(port), "-U", "0"]
                              + util.root_args(), stdin=subprocess.DEVNULL)
        try:
            def back():
                c.send(b"get k\r\n")
                return c.readline() == b"END\r\n"
            util.wait_for(back, 10, what="the probe to bring the server back")
        finally:
            be.terminate()
            be.wait(10)
    for flag in ("--timeouts-until-tko", "--server-timeout", "-r", "--probe-timeout-initial"):
        res = run_router(cfg, flag, "0")
        assert res.returncode == 64 and "bad value" in res.stderr, (flag, res.stderr)


def test_failover_tag():
    """With failover_tag, a request failed over with a "|#|" in its key
    reaches the next child with ":failover=1" after the key (placed by the
    part before "|#|", as always); a key without one goes as it is."""
    with servers(1) as (gut,):
        cfg = json.dumps({
            "pools": {"dead": {"servers": ["localhost:0"]}, "gut": pool(gut)},
            "route": {"type": "FailoverRoute", "failover_tag": True,
                      "children": ["PoolRoute|dead", "PoolRoute|gut"]}})
        with Router(cfg) as r, r.conn() as c:
            c.expect(b"set k|#|x 0 0 1\r\nv\r\n", b"STORED\r\n")
            assert held(gut, "k|#|x:failover=1") == b"v" and held(gut, "k|#|x") is None
            c.expect(b"get k|#|x\r\n", b"VALUE k|#|x 0 1\r\nv\r\nEND\r\n")
            c.expect(b"set plain 0 0 1\r\np\r\n", b"STORED\r\n")
            assert held(gut, "plain") == b"p"


def test_validate_config_and_mcrouters_off_switches():
    """--validate-config checks the configuration and exits 0 when it is
    good, 1 (with the reason) when not; mcrouter's --stats-logging-interval 0
    and --config-dump-root "" (its files off) are taken, other values refused
    with the reason."""
    good = json.dumps({"pools": {"a": {"servers": ["127.0.0.1:1"]}}, "route": "PoolRoute|a"})
    bad = json.dumps({"pools": {"a": {"servers": ["127.0.0.1:1"]}}, "route": "PoolRoute|b"})
    for mode in ("--validate-config", "--validate-config=exit"):
        res = run_router(good, mode, "--stats-logging-interval", "0", "--config-dump-root", "")
        assert res.returncode == 0 and "valid" in res.stderr, res
        res = run_router(bad, mode)
        assert res.returncode == 1 and 'unknown pool "b"' in res.stderr, res
    for args, why in ((["--validate-config=later"], "exit or run"),
                      (["--stats-logging-interval", "10"], "writes no stats files"),
                      (["--config-dump-root", "/tmp"], "dumps no configurations")):
        res = run_router(good, *args)
        assert res.returncode == 64 and why in res.stderr, (args, res)


def test_allow_only_gets():
    """With --allow-only-gets only get-like requests reach a backend; the
    rest are answered as NullRoute answers them."""
    with servers(3) as bes, Router(config(bes), args=["--allow-only-gets"]) as r, r.conn() as c:
        store(bes[0], b"set k 0 0 1", b"v")
        c.expect(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
        c.expect(b"gat 0 k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
        c.expect(b"mg k v\r\n", b"VA 1\r\nv\r\n")
        c.expect(b"set k 0 0 1\r\nw\r\n", b"NOT_STORED\r\n")
        c.expect(b"add k2 0 0 1\r\nw\r\n", b"NOT_STORED\r\n")
        c.expect(b"delete k\r\n", b"NOT_FOUND\r\n")
        c.expect(b"incr k 1\r\n", b"NOT_FOUND\r\n")
        c.expect(b"ms k 1\r\nw\r\n", b"NS\r\n")
        assert held(bes[0], "k") == b"v" and held(bes[0], "k2") is None


def test_failover_policies():
    """LeastFailuresPolicy asks the first child, then the others by fewest
    errors in a row, max_tries in all: with three children failing, the
    first request gives up after three, the next reaches the fourth.
    InOrderPolicy's max_tries stops in order; other policies are refused."""
    with servers(1) as (live,):
        dead = {"servers": ["localhost:0"]}
        pools = {"a": dead, "b": dict(dead), "c": dict(dead), "d": pool(live)}
        kids = ["PoolRoute|a", "PoolRoute|b", "PoolRoute|c", "PoolRoute|d"]
        cfg = json.dumps({"pools": pools, "route": {"type": "PrefixSelectorRoute", "policies": {
            "lf:": {"type": "FailoverRoute", "children": kids,
                    "failover_policy": {"type": "LeastFailuresPolicy", "max_tries": 3}},
            "in:": {"type": "FailoverRoute", "children": kids,
                    "failover_policy": {"type": "InOrderPolicy", "max_tries": 3}}},
            "wildcard": {"type": "FailoverRoute", "children": kids}}})
        store(live, b"set lf:k 0 0 1", b"v")
        store(live, b"set in:k 0 0 1", b"v")
        with Router(cfg) as r, r.conn() as c:
            c.expect(b"get lf:k\r\n", b"SERVER_ERROR connection error\r\n")
            c.expect(b"get lf:k\r\n", b"VALUE lf:k 0 1\r\nv\r\nEND\r\n")
            for _ in range(3):          # never the fourth (the first three marked down by now)
                c.send(b"get in:k\r\n")
                assert c.readline().startswith(b"SERVER_ERROR "), "InOrderPolicy's max_tries"
            assert int(r.stats()["cmd_get"]) == 5
        for policy, why in (({"type": "RendezvousPolicy"}, "is not one cellar implements"),
                            ({"type": "LeastFailuresPolicy"}, 'missing "max_tries"'),
                            ({"type": "DeterministicOrderPolicy", "max_tries": 2},
                             'missing "max_error_tries"'),
                            ({"type": "DeterministicOrderPolicy", "max_tries": 2,
                              "max_error_tries": 1, "hash": {"hash_func": "Crc32"}},
                             "hashes with Ch3 or WeightedCh3")):
            bad = json.loads(cfg)
            bad["route"] = {"type": "FailoverRoute", "children": kids, "failover_policy": policy}
            res = run_router(json.dumps(bad))
            assert res.returncode == 1 and why in res.stderr, (policy, res.stderr)


def test_modify_key_and_random_routes():
    """ModifyKeyRoute: ensure_key_prefix adds a prefix a key lacks (or takes
    the key's first bytes' place with modify_inplace), replace_key_prefix
    swaps one prefix for it, set_key_suffix appends, set_routing_prefix
    gives the key a routing prefix (a keep_routing_prefix pool's servers
    see it); a key grown past 250
    bytes is refused in mcrouter's words.  RandomRoute spreads requests over
    its children."""
    with servers(3) as bes:
        a = "PoolRoute|a"
        cfg = json.dumps({"pools": {"a": pool(bes[0]), "b": pool(bes[1]), "c": pool(bes[2]),
                                    "k": dict(pool(bes[2]), keep_routing_prefix=True)},
                          "route": {"type": "PrefixSelectorRoute", "policies": {
                              "rp:": {"type": "ModifyKeyRoute", "target": "PoolRoute|k",
                                      "set_routing_prefix": "/x/y/"},
                              "p:": {"type": "ModifyKeyRoute", "target": a,
                                     "ensure_key_prefix": "p:x:"},
                              "r:": {"type": "ModifyKeyRoute", "target": a,
                                     "replace_key_prefix": "r:", "ensure_key_prefix": "new:"},
                              "i:": {"type": "ModifyKeyRoute", "target": a,
                                     "ensure_key_prefix": "j:", "modify_inplace": True},
                              "s:": {"type": "ModifyKeyRoute", "target": a,
                                     "set_key_suffix": ":v2"},
                              "rnd:": {"type": "RandomRoute",
                                       "children": ["PoolRoute|a", "PoolRoute|b",
                                                    "PoolRoute|c"]}},
                              "wildcard": a}})
        with Router(cfg) as r, r.conn() as c:
            for key, stored in ((b"p:1", "p:x:p:1"), (b"p:x:2", "p:x:2"), (b"r:3", "new:3"),
                                (b"i:4", "j:4"), (b"s:5", "s:5:v2")):
                c.expect(b"set %s 0 0 1\r\nv\r\n" % key, b"STORED\r\n")
                assert held(bes[0], stored) == b"v", (key, stored)
                c.expect(b"get %s\r\n" % key, b"VALUE %s 0 1\r\nv\r\nEND\r\n" % key)
            c.expect(b"set rp:6 0 0 1\r\nv\r\n", b"STORED\r\n")  # its servers keep prefixes
            assert held(bes[2], "/x/y/rp:6") == b"v"
            long = b"s:" + b"k" * 246
            c.expect(b"set %s 0 0 1\r\nv\r\n" % long,
                     b"SERVER_ERROR ModifyKeyRoute: invalid key: key too long\r\n")
            for i in range(60):
                c.expect(b"set rnd:%d 0 0 1\r\nv\r\n" % i, b"STORED\r\n")
            spread = [sum(held(be, "rnd:%d" % i) is not None for i in range(60)) for be in bes]
            assert sum(spread) == 60 and min(spread) > 0, spread
        bad = json.loads(cfg)
        bad["route"] = {"type": "ModifyKeyRoute", "target": a, "set_routing_prefix": "nope"}
        res = run_router(json.dumps(bad))
        assert res.returncode == 1 and "is not a routing prefix" in res.stderr, res.stderr


def test_big_values_split_into_pieces():
    """--big-value-split-threshold N: a value of more than N bytes is stored
    as pieces "key:i:S" and the key itself holds "1-count-S" with flag
    0x8000, as mcrouter stores it; a get joins the pieces (a piece missing:
    a miss); values of N bytes or less are stored as they are.  The JSON
    BigValueRoute does the same below it."""
    with servers(1) as (be,):
        cfg = json.dumps({"pools": {"a": pool(be)}, "route": "PoolRoute|a"})
        with Router(cfg, args=["--big-value-split-threshold", "10",
                               "--big-value-batch-size", "2"]) as r, r.conn() as c:
            value = b"0123456789abcdefghijKLMNO"
            c.expect(b"set big 5 0 25\r\n%s\r\n" % value, b"STORED\r\n")
            with be.conn() as b:
                b.send(b"get big\r\n")
                [(_, flags, info, _)] = b.read_get_reply()
            assert flags == 5 | 0x8000 and info.startswith(b"1-3-"), (flags, info)
            suffix = info.split(b"-")[2].decode()
            pieces = [held(be, "big:%d:%s" % (i, suffix)) for i in range(3)]
            assert pieces == [value[:10], value[10:20], value[20:]], pieces
            c.expect(b"get big\r\n", b"VALUE big 32773 25\r\n%s\r\nEND\r\n" % value)
            c.expect(b"set small 1 0 10\r\n0123456789\r\n", b"STORED\r\n")
            assert held(be, "small") == b"0123456789"
            c.expect(b"get small\r\n", b"VALUE small 1 10\r\n0123456789\r\nEND\r\n")
            with be.conn() as b:
                b.expect(b"delete big:1:%s\r\n" % suffix.encode(), b"DELETED\r\n")
            c.expect(b"get big\r\n", b"END\r\n")
        bad = json.dumps({"pools": {"a": pool(be)}, "route": {
            "type": "BigValueRoute", "target": "PoolRoute|a", "split_threshold": 4,
            "batch_size": 0, "hide_reply_flag": True}})
        with Router(bad) as r, r.conn() as c:
            c.expect(b"set j 0 0 9\r\nabcdefghi\r\n", b"STORED\r\n")
            c.expect(b"get j\r\n", b"VALUE j 0 9\r\nabcdefghi\r\nEND\r\n")   # flag hidden
    for flag in ("--big-value-split-threshold", "--big-value-batch-size"):
        res = run_router(cfg, flag, "-1")
        assert res.returncode == 64 and "bad value" in res.stderr, res


def test_miss_failover_return_best_on_error():
    """MissFailoverRoute asks its children in order until a hit; when a
    later child fails, return_best_on_error answers with the miss an earlier
    one gave instead of that error."""
    with servers(1) as (live,):
        kids = ["PoolRoute|live", "PoolRoute|dead"]
        cfg = json.dumps({"pools": {"live": pool(live), "dead": {"servers": ["localhost:0"]}},
                          "route": {"type": "PrefixSelectorRoute", "policies": {
                              "best:": {"type": "MissFailoverRoute", "children": kids,
                                        "return_best_on_error": True}},
                              "wildcard": {"type": "MissFailoverRoute", "children": kids}}})
        with Router(cfg) as r, r.conn() as c:
            c.expect(b"get best:k\r\n", b"END\r\n")
            c.send(b"get k\r\n")
            assert c.readline().startswith(b"SERVER_ERROR "), "the last child's error"
            store(live, b"set best:h 0 0 1", b"v")
            c.expect(b"get best:h\r\n", b"VALUE best:h 0 1\r\nv\r\nEND\r\n")
            c.expect(b"delete best:h\r\n", b"DELETED\r\n")


def test_big_values_with_leases():
    """A lease-set of a big value stores its pieces, then the key under the
    lease's token; a lease-get's hit of it is the whole value."""
    with servers(1) as (be,):
        cfg = json.dumps({"pools": {"a": pool(be)}, "route": "PoolRoute|a"})
        with Router(cfg, args=["--big-value-split-threshold", "4"]) as r, r.conn() as c:
            c.expect(b"set first 0 0 1\r\nx\r\n", b"STORED\r\n")     # no token of 1
            c.send(b"lease-get lk\r\n")
            token = int(c.readline().split()[2])
            c.readline(), c.readline()
            c.expect(b"lease-set lk %d 3 0 10\r\n0123456789\r\n" % token, b"STORED\r\n")
            c.expect(b"lease-get lk\r\n", b"VALUE lk 32771 10\r\n0123456789\r\nEND\r\n")
            c.expect(b"get lk\r\n", b"VALUE lk 32771 10\r\n0123456789\r\nEND\r\n")
            c.expect(b"lease-set lk %d 3 0 10\r\n9876543210\r\n" % token, b"NOT_STORED\r\n")


@contextlib.contextmanager
def silent_servers(n):
    """n servers that accept and read but never answer: each request line
    they get is recorded as (time, server index, line)."""
    got, lock, socks, stop = [], threading.Lock(), [], threading.Event()

    def serve(i, ls):
        conns = []
        while not stop.is_set():
            ready, _, _ = select.select([ls] + conns, [], [], 0.05)
            for s in ready:
                if s is ls:
                    conns.append(ls.accept()[0])
                    continue
                data = s.recv(4096)
                if not data:
                    conns.remove(s)
                    s.close()
                with lock:
                    got.extend((time.monotonic(), i, line)
                               for line in data.split(b"\r\n") if line)
        for s in conns:
            s.close()
    threads = []
    try:
        for i in range(n):
            ls = socket.socket()
            ls.bind((util.HOST, 0))
            ls.listen(16)
            socks.append(ls)
            threads.append(threading.Thread(target=serve, args=(i, ls), daemon=True))
            threads[-1].start()
        yield ["%s:%d" % ls.getsockname() for ls in socks], got
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for ls in socks:
            ls.close()


def asked(got, key, n):
    """The servers that got `get key`, in order, once n of them have."""
    def which():
        return [i for _, i, line in sorted(got) if line == b"get " + key]
    util.wait_for(lambda: len(which()) >= n, timeout=5, what="get %s at %d servers" % (key, n))
    return which()


def test_deterministic_order_policy():
    """mcrouter's DeterministicOrderPolicy under SaltedFailoverRoute: the
    pool's own pick, then servers picked by a salted hash of the key, each
    asked once, max_error_tries errors at most; the same key walks the same
    servers on another router; mcrouter's failover stats count the walk."""
    with silent_servers(8) as (addrs, got):
        def cfg(tries, error_tries, domains=False):
            return json.dumps({
                "pools": {"s": {"servers": addrs, "server_timeout": 100, "tko_timeouts": 1000,
                                "failure_domains": [1, 1, 2, 2, 3, 3, 4, 4]}},
                "route": {"type": "SaltedFailoverRoute", "pool": "s",
                          "failover_policy": {"type": "DeterministicOrderPolicy",
                                              "max_tries": tries,
                                              "max_error_tries": error_tries,
                                              "enable_failure_domains": domains}}})
        walks = []
        for _run in range(2):
            with Router(cfg(6, 3)) as r, r.conn() as c:
                c.expect(b"get det\r\n", b"SERVER_ERROR Reply timeout\r\n")
                walk = asked(got, b"det", 3 * (_run + 1))[3 * _run:]
                st = r.stats("all")
                assert st["failover_policy_result_error"] == "3", st   # the three asked
                assert st["failover_all_failed_count"] == "0"          # out of error tries
                assert int(st["failover_num_collisions"]) >= 1         # the pool's pick again
            walks.append(walk)
        assert walks[0] == walks[1] and len(set(walks[0])) == 3, walks
        # a different key walks elsewhere (for one of these keys, at least)
        with Router(cfg(6, 3)) as r, r.conn() as c:
            others = []
            for k in (b"a", b"b", b"c"):
                c.expect(b"get " + k + b"\r\n", b"SERVER_ERROR Reply timeout\r\n")
                others.append(asked(got, k, 3))
            assert any(w != walks[0] for w in others), others
        # max_tries reached first: the last answer is not looked at, the walk all failed
        with Router(cfg(2, 2)) as r, r.conn() as c:
            c.expect(b"get two\r\n", b"SERVER_ERROR Reply timeout\r\n")
            assert len(set(asked(got, b"two", 2))) == 2
            st = r.stats("all")
            assert (st["failover_policy_result_error"], st["failover_all_failed_count"]) == \
                ("1", "1"), st
        # failure domains: servers marked down at once (tko_timeouts 1) fail their
        # domain, and later picks in it are picked again
        text = json.loads(cfg(8, 8, domains=True))
        text["pools"]["s"]["tko_timeouts"] = 1
        with Router(json.dumps(text)) as r, r.conn() as c:
            for i in range(6):
                c.send(b"get fd%d\r\n" % i)
                assert c.readline().startswith(b"SERVER_ERROR ")
            assert int(r.stats("all")["failover_num_failed_domain_collisions"]) > 0


def test_mcrouters_words_for_a_key_too_long():
    """A key over 250 bytes, with --mcrouter-errors: mcrouter's CLIENT_ERROR
    bad key, a storage command's data block read past; without it, and in
    cellard, memcached's words."""
    long_key = b"k" * 10000
    cfg = json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, util.free_port())]}},
                      "route": "PoolRoute|a"})
    with Router(cfg) as r, r.conn() as c:
        c.expect(b"set " + long_key + b" 0 0 3\r\nabc\r\n",
                 b"CLIENT_ERROR bad command line format\r\nERROR\r\n")
    with servers(1) as (be,), Router(json.dumps({"pools": {"a": pool(be)},
                                                 "route": "PoolRoute|a"}),
                                     args=["--mcrouter-errors"]) as r, r.conn() as c:
        c.expect(b"set " + long_key + b" 0 0 3\r\nabc\r\n", b"CLIENT_ERROR bad key\r\n")
        c.expect(b"append " + long_key + b" 0 0 3 noreply\r\nabc\r\n"
                 b"get " + long_key + b"\r\n", b"CLIENT_ERROR bad key\r\n")
        for cmd in (b"delete ", b"touch ", b"incr "):
            c.expect(cmd + long_key + (b"\r\n" if cmd == b"delete " else b" 1\r\n"),
                     b"CLIENT_ERROR bad key\r\n")
        c.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
        with be.conn() as b:
            b.expect(b"set " + b"k" * 251 + b" 0 0 3\r\nabc\r\n",
                     b"CLIENT_ERROR bad command line format\r\n")


def test_shard_splits():
    """mcrouter's shard_splits: a key "prefix:SHARD:rest" of a shard split in
    three lives in one of its copies (the one this router's host id picks,
    itself or "prefix:SHARDaa:rest", "...ba..."); a delete reaches them all;
    an unsplit shard's key goes on as it is."""
    with servers(3) as bes:
        cfg = json.dumps({"pools": {"p": {"servers": ["%s:%d" % (util.HOST, b.port)
                                                      for b in bes]}},
                          "route": {"type": "PoolRoute", "pool": "p",
                                    "shard_splits": {"1": 3, "7": {"new_split_size": 1}}}})
        copies = [b"a:1:k", b"a:1aa:k", b"a:1ba:k"]

        def where(key):
            return [be for be in bes if held(be, key.decode()) is not None]

        with Router(cfg) as r, r.conn() as c:
            c.expect(b"set a:1:k 0 0 1\r\nv\r\n", b"STORED\r\n")
            stored = [k for k in copies if where(k)]
            assert len(stored) == 1, stored
            c.expect(b"get a:1:k\r\n", b"VALUE a:1:k 0 1\r\nv\r\nEND\r\n")
            for k in copies:            # a copy's own key is no split shard's: as it is
                c.expect(b"set " + k + b" 0 0 1\r\nw\r\n", b"STORED\r\n")
            assert all(len(where(k)) == 1 for k in copies)
            c.expect(b"delete a:1:k\r\n", b"DELETED\r\n")
            util.wait_for(lambda: not any(where(k) for k in copies), timeout=5,
                          what="the delete at every copy")
            c.expect(b"set a:7:k 0 0 1\r\nv\r\n", b"STORED\r\n")
            assert where(b"a:7:k") and not where(b"a:7aa:k")
        bad = json.loads(cfg)
        bad["route"]["shard_splits"] = {"1": 0}
        res = run_router(json.dumps(bad))
        assert res.returncode == 1 and 'shard_splits.1: a split is a size from 1' in res.stderr, \
            res.stderr


def test_lease_pairing():
    """mcrouter's enable_lease_pairing: a lease won through the second child
    comes with a token of the route's own, and its lease-set goes back to
    that child, though the first is up again; a token it did not hand out
    goes to the first child only."""
    with servers(2) as bes:
        cfg = json.dumps({"pools": {"A": {"servers": ["%s:%d" % (util.HOST, b.port) for b in bes],
                                          "probe_min_ms": 20, "probe_max_ms": 50}},
                          "route": {"type": "FailoverRoute", "name": "lp",
                                    "enable_lease_pairing": True, "children": "Pool|A"}})
        with Router(cfg, threads=1) as r, r.conn() as c:
            bes[0].proc.kill()
            bes[0].proc.wait()
            c.send(b"lease-get key\r\n")
            line = c.readline()
            assert line.startswith(b"LVALUE key ") and c.read_to(b"END\r\n"), line
            token = int(line.split()[2])
            assert token >> 32 == 0x7aceb00c, line        # the route's own
            restart(bes[0])
            addr = "%s:%d" % (util.HOST, bes[0].port)
            def up():
                c.call(b"get probe\r\n", b"END\r\n")     # traffic, for the probe to see
                return r.servers()[addr]["state"] == "up"
            util.wait_for(up, timeout=10, what="the first server up again")
            c.expect(b"lease-set key %d 0 0 3\r\nabc\r\n" % token, b"STORED\r\n")
            assert held(bes[1], "key") == b"abc" and held(bes[0], "key") is None
            # a token not handed out here: the first child, no failing over
            c.expect(b"lease-set other 12345 0 0 1\r\nv\r\n", b"NOT_STORED\r\n")
        bad = json.loads(cfg)
        del bad["route"]["name"]
        res = run_router(json.dumps(bad))
        assert res.returncode == 1 and "enable_lease_pairing needs the route's" in res.stderr


def test_asynclog_disable():
    """mcrouter's --asynclog-disable: a delete a dead server could not take
    gets its error, not a place in the --async-dir spool (NOT_FOUND)."""
    cfg = json.dumps({"pools": {"dead": dead_pool()}, "route": "PoolRoute|dead"})
    with Router(cfg, threads=1, spool=True) as r, r.conn() as c:
        c.expect(b"delete k\r\n", b"NOT_FOUND\r\n")             # spooled
        assert r.stat("spool_appended") == 1
    with Router(cfg, threads=1, spool=True, args=["--asynclog-disable"]) as r, r.conn() as c:
        c.send(b"delete k\r\n")
        assert c.readline().startswith(b"SERVER_ERROR "), "the delete's own error"
        assert r.stat("spool_appended") == 0


def test_slow_warmup():
    """mcrouter's slow_warmup: a server whose hit rate fell below
    enable_threshold gets only some gets (start + rate * step), the rest
    going to the failover target (NullRoute: a miss); other requests all
    reach it."""
    with servers(1) as (be,):
        cfg = json.dumps({"pools": {"a": pool(be)},
                          "route": {"type": "PoolRoute", "pool": "a", "slow_warmup": {
                              "failoverTarget": "NullRoute",
                              "settings": {"enable_threshold": 0.5, "disable_threshold": 0.9,
                                           "start": 0.5, "step": 0.1, "min_requests": 10}}}})
        store(be, b"set hot 0 0 1", b"v")
        with Router(cfg, threads=1) as r, r.conn() as c:
            def gets(n):
                hits = 0
                for _ in range(n):
                    c.send(b"get hot\r\n")
                    hits += c.read_to(b"END\r\n") != b"END\r\n"
                return hits
            assert gets(20) == 20                   # warm: every get reaches it
            for i in range(50):                     # cold now: 20 hits of 70
                c.expect(b"get cold%d\r\n" % i, b"END\r\n")
            hits = gets(40)                         # each a 0.53 chance
            assert 0 < hits < 40, hits
            c.expect(b"set s 0 0 1\r\nv\r\n", b"STORED\r\n")   # writes all reach it
            assert held(be, "s") == b"v"
        bad = json.loads(cfg)
        bad["route"]["slow_warmup"]["settings"]["enable_threshold"] = 0.95
        res = run_router(json.dumps(bad))
        assert res.returncode == 1 and "enable_threshold must be below" in res.stderr, res.stderr


def test_runtime_vars_file():
    """--runtime-vars-file: a shadow's index_range_rv takes the variable's
    range over the one written, and the configuration is built again when
    the file changes."""
    with servers(2) as (main, shadow), tempfile.TemporaryDirectory() as d:
        vars_path = os.path.join(d, "vars.json")
        with open(vars_path, "w") as f:
            json.dump({"r": [0, 1]}, f)
        cfg = json.dumps({"pools": {"m": pool(main), "s": pool(shadow)},
                          "route": {"type": "PoolRoute", "pool": "m", "shadows": [
                              {"target": "PoolRoute|s", "index_range": [0, 0],
                               "index_range_rv": "r", "key_fraction_range": [0, 1]}]}})
        with Router(cfg, args=["--runtime-vars-file", vars_path]) as r, r.conn() as c:
            assert any("ShadowRoute" in k for k in r.stats("routes")), r.stats("routes")
            c.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
            util.wait_for(lambda: held(shadow, "k") == b"v", 5, what="the shadow's copy")
            reloads = r.stat("config_reloads")
            with open(vars_path + ".tmp", "w") as f:
                json.dump({"r": [0, 0]}, f)
            os.replace(vars_path + ".tmp", vars_path)
            util.wait_for(lambda: r.stat("config_reloads") > reloads, 10,
                          what="the configuration built again")
            assert not any("ShadowRoute" in k for k in r.stats("routes")), r.stats("routes")
        res = run_router(cfg, "--runtime-vars-file", os.path.join(d, "none.json"))
        assert res.returncode == 1 and "runtime variables" in res.stderr, res.stderr
