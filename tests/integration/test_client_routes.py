"""libcellar's routes, configured in mcrouter's JSON, against cellard pools
and, separately, memcached pools (warm-up: cellard, for its delete hold-off):
the gutter pool (FailoverWithExptimeRoute), a replicated pool (AllSync
writes, LatestRoute reads by host id) and cold-cluster warm-up
(WarmUpRoute with cellard's delete hold-off).  What each route did is
checked on the servers themselves, by another client or raw commands."""

import json
import signal

import pytest

import cellar_ffi as cf
import util
from test_client import KINDS, Pool


def addrs(servers):
    return ["127.0.0.1:%d" % s.port for s in servers]


def holds(server, key):
    return server.client().get(key) is not None


def ttl_on(server, key):
    """The item's remaining TTL as the server reports it (meta `mg <key> t`)."""
    with server.conn() as c:
        line = c.call(("mg %s t\r\n" % key).encode()).decode().split()
    assert line[0] == "HD", line
    return int(line[1][1:])


def kill(server):
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_gutter_takes_a_dead_servers_keys_with_short_ttls(kind):
    with Pool(kind, 4) as main, Pool(kind, 1) as gutter:
        cfg = json.dumps({
            "pools": {"main": {"servers": addrs(main)}, "gutter": {"servers": addrs(gutter)}},
            "route": {"type": "FailoverWithExptimeRoute", "normal": "PoolRoute|main",
                      "failover": ["PoolRoute|gutter"], "failover_exptime": 10}})
        with cf.Client(cfg, probe_min_ms=60000) as c:
            keys = ["g%d" % i for i in range(200)]
            for k in keys:
                assert c.set(k, "v" + k) == cf.OK
            home = {k: c.server_of(k) for k in keys}
            victim = 1
            mine = [k for k in keys if home[k] == victim]
            assert mine and not any(holds(gutter[0], k) for k in keys)

            main[victim].proc.send_signal(signal.SIGKILL)
            main[victim].proc.wait()
            # A dead server's gets go to the gutter: a miss there, not an error.
            for k in mine:
                assert c.get(k)[0] == cf.NOT_FOUND
            # The application refills; the fill lands in the gutter, its TTL capped.
            for k in mine:
                assert c.set(k, "refill" + k, exptime=3600) == cf.OK
                assert c.get(k)[1] == ("refill" + k).encode()
                assert 0 < ttl_on(gutter[0], k) <= 10
            # Nothing moved to another shard of main; the others are untouched.
            for i, s in enumerate(main):
                if i != victim:
                    assert not any(holds(s, k) for k in mine)
            others = [k for k in keys if home[k] != victim]
            got = c.mget(others)
            assert all(g[0] == cf.OK and g[1] == ("v" + k).encode() for g, k in zip(got, others))
            assert not any(holds(gutter[0], k) for k in others)
            assert c.stats()["tko_events"] == 1
        # main[victim] is dead: Pool expects that of no server, so restart it.
        from test_client import restart_on
        restart_on(main[victim])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_replicated_pool_writes_all_reads_one_by_host_id(kind):
    with Pool(kind, 3) as rep:
        cfg = json.dumps({
            "pools": {"rep": {"servers": addrs(rep)}},
            "route": {"type": "OperationSelectorRoute",
                      "operation_policies": {
                          "get": {"type": "LatestRoute", "children": "Pool|rep",
                                  "failover_count": 2},
                          "set": "AllSyncRoute|Pool|rep",
                          "delete": "AllSyncRoute|Pool|rep"},
                      "default_policy": "AllSyncRoute|Pool|rep"}})
        clients = [cf.Client(cfg, host_id=h) for h in (1, 2, 3, 4, 5, 6)]
        try:
            w = clients[0]
            assert w.set("r", "value") == cf.OK
            assert all(holds(s, "r") for s in rep)             # every replica written
            # Each client reads the replica its host id picks.
            for h, c in zip((1, 2, 3, 4, 5, 6), clients):
                before = [int(s.stats()["get_hits"]) for s in rep]
                assert c.get("r")[:2] == (cf.OK, b"value")
                after = [int(s.stats()["get_hits"]) for s in rep]
                moved = [i for i in range(3) if after[i] != before[i]]
                assert moved == [h % 3], (h, before, after)
            # Deletes reach every replica.
            assert w.set("d", "x") == cf.OK and w.delete("d") == cf.OK
            assert not any(holds(s, "d") for s in rep)
            # A dead replica: its readers fail over to the next one.
            kill(rep[1])
            reader = clients[0]                                  # host id 1 -> replica 1
            assert reader.get("r")[:2] == (cf.OK, b"value")     # its connection broke
            assert reader.get("r")[:2] == (cf.OK, b"value")     # the reconnect is refused
            assert reader.stats()["tko_events"] == 1 and reader.server_down(1)
            # A write now answers the worst reply: the dead replica's error.
            assert w.set("r2", "y") in (cf.ECONNECT, cf.EDOWN, cf.ECLOSED)
            assert holds(rep[0], "r2") and holds(rep[2], "r2")
        finally:
            for c in clients:
                c.close()
            if not rep[1].alive():
                from test_client import restart_on
                restart_on(rep[1])


def test_warm_up_fills_cold_from_warm_and_deletes_stay_deleted():
    with Pool("cellard", 2, args=["-o", "delete_hold"]) as cold, Pool("cellard", 2) as warm:
        cfg = json.dumps({
            "pools": {"cold": {"servers": addrs(cold)}, "warm": {"servers": addrs(warm)}},
            "route": {"type": "WarmUpRoute", "cold": "PoolRoute|cold", "warm": "PoolRoute|warm",
                      "exptime": 100, "delete_hold": 2}})
        with cf.Client(",".join(addrs(warm))) as wc, cf.Client(cfg) as c, \
                cf.Client(",".join(addrs(cold))) as cc:
            keys = ["w%d" % i for i in range(40)]
            for k in keys:
                assert wc.set(k, "warm" + k, flags=3, exptime=500) == cf.OK
            # Cold misses are read from warm and added into cold with warm's TTL.
            for k in keys:
                assert c.get(k)[:3] == (cf.OK, ("warm" + k).encode(), 3)
            for k in keys:
                owner = cold[cc.server_of(k)]
                assert owner.client().get(k) == ("warm" + k).encode()
                assert 490 <= ttl_on(owner, k) <= 500
            # Now cold answers: warm sees no more gets.
            before = sum(int(s.stats()["cmd_get"]) for s in warm)
            got = c.mget(keys)
            assert all(g[0] == cf.OK for g in got)
            assert sum(int(s.stats()["cmd_get"]) for s in warm) == before
            assert c.get("nowhere")[0] == cf.NOT_FOUND
            # A delete during warm-up: cold holds the key off, so the warm copy
            # (not yet invalidated there) cannot come back into cold.
            assert wc.set("late", "old", exptime=500) == cf.OK
            assert c.delete("late") == cf.NOT_FOUND             # not in cold yet
            assert c.get("late")[1] == b"old"                   # warm still has it...
            owner = cold[cc.server_of("late")]
            assert owner.client().get("late") is None           # ...but cold refused the add
            assert wc.delete("late") == cf.OK                   # the invalidation reaches warm
            assert c.get("late")[0] == cf.NOT_FOUND
            assert owner.client().get("late") is None
            # Writes go to cold only.
            assert c.set("fresh", "new") == cf.OK
            assert cc.get("fresh")[1] == b"new" and wc.get("fresh")[0] == cf.NOT_FOUND


def test_warm_up_with_a_memcached_cold_and_a_dead_cold():
    """A cold cluster of stock memcached (no delete hold-off) still gets its
    deletes, as plain ones; a cold server that is down is read around, from
    warm, and nothing is added into it."""
    with Pool("memcached", 1) as cold, Pool("cellard", 1) as warm:
        cfg = json.dumps({
            "pools": {"cold": {"servers": addrs(cold)}, "warm": {"servers": addrs(warm)}},
            "route": {"type": "WarmUpRoute", "cold": "PoolRoute|cold", "warm": "PoolRoute|warm",
                      "exptime": 100, "delete_hold": 2}})
        with cf.Client(",".join(addrs(warm))) as wc, cf.Client(cfg, probe_min_ms=60000) as c:
            assert c.set("k", "v") == cf.OK                  # into cold
            assert c.delete("k") == cf.OK                    # memcached refuses the hold-off...
            assert cold[0].client().get("k") is None         # ...the plain delete went through
            assert wc.set("w", "warm", exptime=500) == cf.OK
            kill(cold[0])
            assert c.get("w")[:2] == (cf.OK, b"warm")         # cold down: read from warm
            assert c.get("absent")[0] in (cf.ECONNECT, cf.EDOWN, cf.ECLOSED)
            from test_client import restart_on
            restart_on(cold[0])
