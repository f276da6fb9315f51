"""libcellar with real timeouts: servers in network namespaces whose link is
cut mid-run, so packets vanish and nothing is refused.  The library must
time out after server_timeout, mark the server down after tko_timeouts
timeouts in a row, fail its keys at once while it is down without
touching any other server's keys, and bring it back by probes once the
link is up again."""

import time

import pytest

import cellar_ffi as cf
import util

TIMEOUT_MS = 300
FAST = TIMEOUT_MS / 2000        # an answer that waited for no timeout (a loaded CI box's margin)


def timed(fn, *a):
    t = time.monotonic()
    out = fn(*a)
    return out, time.monotonic() - t


@pytest.mark.parametrize("proto", ("meta", "text", "binary"))
def test_link_down_times_out_then_tko_then_probe(netns_factory, proto):
    healthy, cut = netns_factory(), netns_factory()
    addrs = healthy.start_servers(util.CELLARD, 3) + cut.start_servers(util.CELLARD, 1)
    victim = 3
    with cf.Client(addrs, protocol=proto, server_timeout_ms=TIMEOUT_MS, tko_timeouts=3,
                   probe_min_ms=200, probe_max_ms=400) as c:
        keys = ["f%d" % i for i in range(400)]
        home = {k: c.server_of(k) for k in keys}
        mine = [k for k in keys if home[k] == victim]
        assert mine and len(set(home.values())) == 4
        for k in keys:
            assert c.set(k, "v" + k) == cf.OK

        # Mid-run, the victim's link goes down: a multi-get answers every
        # other key and times the victim's out after one server_timeout.
        cut.link_down()
        got, took = timed(c.mget, keys)
        for g, k in zip(got, keys):
            want = cf.ETIMEDOUT if home[k] == victim else cf.OK
            assert g[0] == want, (k, g)
        assert TIMEOUT_MS / 1000 <= took < TIMEOUT_MS / 1000 + 1.0, took
        st = c.stats()
        assert st["timeouts"] == len(mine)
        # One missed deadline, however many requests it failed: not down yet.
        assert not c.server_down(victim) and st["tko_events"] == 0
        # Two more (each a reconnect that times out): tko_timeouts in a row.
        for n in (2, 3):
            (status, *_), took = timed(c.get, mine[0])
            assert status == cf.ETIMEDOUT and took >= TIMEOUT_MS / 1000, (n, status, took)
        assert c.server_down(victim) and c.stats()["tko_events"] == 1

        # Down: its keys fail at once, nothing is sent, the others are served.
        (status, *_), took = timed(c.get, mine[0])
        assert status == cf.EDOWN and took < FAST
        got, took = timed(c.mget, keys)
        for g, k in zip(got, keys):
            assert g[0] == (cf.EDOWN if home[k] == victim else cf.OK), (k, g)
        assert took < TIMEOUT_MS / 1000

        # Probes go out and time out while the link is down.
        util.wait_for(lambda: (c.poll(100), c.stats()["probes"] >= 2)[1], 10,
                      what="two probes")
        assert c.server_down(victim)

        # Link back: a probe revives the server, and its keys are served again.
        cut.link_up()
        util.wait_for(lambda: (c.poll(100), not c.server_down(victim))[1], 10,
                      what="a probe to revive the server")
        got = c.mget(keys)
        assert all(g[0] == cf.OK and g[1] == b"v" + k.encode() for g, k in zip(got, keys))
        st = c.stats()
        assert st["revivals"] == 1 and st["tko_events"] == 1


def test_tko_after_the_configured_count_of_single_timeouts(netns):
    (addr,) = netns.start_servers(util.CELLARD, 1)
    with cf.Client([addr], server_timeout_ms=TIMEOUT_MS, tko_timeouts=3,
                   probe_min_ms=60000) as c:
        assert c.set("k", "v") == cf.OK
        netns.link_down()
        for n in range(1, 4):
            assert not c.server_down(0)
            (status, *_), took = timed(c.get, "k")
            assert status == cf.ETIMEDOUT, (n, status)
            assert TIMEOUT_MS / 1000 <= took < TIMEOUT_MS / 1000 + 1.0, (n, took)
        assert c.server_down(0)
        (status, *_), took = timed(c.get, "k")
        assert status == cf.EDOWN and took < FAST
        assert c.stats()["timeouts"] == 3
