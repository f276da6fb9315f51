"""libcellar's UDP gets (a pool with udp): gets go in memcached's UDP frames,
everything else over TCP; replies of several datagrams are reassembled; a
lost or late reply answers CELLAR_DROPPED (a miss not to refill), counted,
and never marks the server down."""

import pytest

import cellar_ffi as cf
import util

KINDS = {"cellard": lambda: util.CELLARD, "memcached": lambda: util.MEMCACHED}


@pytest.mark.parametrize("proto", ("meta", "text", "binary"))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_udp_gets(kind, proto):
    servers = [util.Server(KINDS[kind](), udp=True, name="%s-udp-%d" % (kind, i))
               for i in range(3)]
    try:
        for s in servers:
            s.start()
        with cf.Client(servers, protocol=proto, udp=1) as c:
            keys = ["u%d" % i for i in range(300)]
            for k in keys:
                assert c.set(k, "v" + k, flags=5) == cf.OK
            big = b"B" * 20000                     # 15 datagrams of 1,392 bytes
            assert c.set("big", big) == cf.OK
            assert c.get("u1")[:3] == (cf.OK, b"vu1", 5)
            assert c.gets("u1")[3] > 0
            assert c.get("absent")[0] == cf.NOT_FOUND
            assert c.get("big")[1] == big
            got = c.mget(keys + ["absent", "big"])
            assert all(g[0] == cf.OK and g[1] == ("v" + k).encode() for g, k in zip(got, keys))
            assert got[-2][0] == cf.NOT_FOUND and got[-1][1] == big
            st = c.stats()
            assert st["udp_gets"] == 4 + len(keys) + 2 and st["udp_drops"] == 0
            # The servers saw these gets over UDP: their TCP connections carried the sets.
            per = [int(s.stats()["cmd_get"]) for s in servers]
            assert sum(per) == st["udp_gets"]
    finally:
        for s in servers:
            if s.proc is not None:
                s.stop()
            s._cleanup_file()


def test_udp_drops_are_misses_not_failures(netns):
    """Replies of 15 datagrams through a tbf queue that holds fewer: most are
    lost; each such get answers DROPPED after the timeout, is counted, and
    the server is not marked down; TCP gets of the same keys still work."""
    (addr,) = netns.start_servers(util.CELLARD, 1, udp=True)
    big = b"D" * 20000
    with cf.Client([addr], udp=1, server_timeout_ms=200) as c, cf.Client([addr]) as tcp:
        for i in range(20):
            assert tcp.set("d%d" % i, big) == cf.OK
        netns.shape(rate="1mbit", burst="4kb", limit="6kb")
        got = c.mget(["d%d" % i for i in range(20)])
        dropped = [g for g in got if g[0] == cf.DROPPED]
        assert dropped, [g[0] for g in got]
        assert all(g[0] in (cf.OK, cf.DROPPED) for g in got)
        assert all(g[1] == big for g in got if g[0] == cf.OK)
        st = c.stats()
        assert st["udp_drops"] == len(dropped) and st["tko_events"] == 0
        assert not c.server_down(0)
        netns.unshape()
        assert tcp.get("d0")[1] == big
        assert c.get("d0")[1] == big
