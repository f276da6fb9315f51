"""libcellar's near-cache: gets are answered in process for at most its TTL,
a handle's own writes are seen at once, another client's only once the
entry has expired; its memory stays within its bound."""

import time

import pytest

import cellar_ffi as cf
import util


def test_near_cache_ttl_and_own_writes():
    with util.Server(util.CELLARD) as srv, cf.Near(1 << 20, 2) as near, \
            cf.Client([srv]) as c, cf.Client([srv]) as other:
        c.use_near(near)
        assert c.set("k", "v1", flags=4) == cf.OK
        assert c.get("k")[:3] == (cf.OK, b"v1", 4)       # fetched, now kept
        before = int(srv.stats()["cmd_get"])
        for _ in range(10):
            assert c.get("k")[:3] == (cf.OK, b"v1", 4)
        assert int(srv.stats()["cmd_get"]) == before    # none reached the server
        assert c.stats()["near_hits"] == 10
        # Another client's write is not seen until the entry expires...
        assert other.set("k", "v2") == cf.OK
        t0 = time.monotonic()
        assert c.get("k")[1] == b"v1"
        # ...and is seen within the TTL (+1 s, whole-second clock).
        util.wait_for(lambda: c.get("k")[1] == b"v2", 4, what="the near copy to expire")
        assert time.monotonic() - t0 <= 3.5
        # The handle's own writes are seen at once.
        assert c.set("k", "v3") == cf.OK
        assert c.get("k")[1] == b"v3"
        assert c.delete("k") == cf.OK
        assert c.get("k")[0] == cf.NOT_FOUND
        assert c.set("n", "1") == cf.OK and c.get("n")[1] == b"1"
        assert c.incr("n", 4) == (cf.OK, 5)
        assert c.get("n")[1] == b"5"
        # Multi-gets read it too: kept keys are not asked for.
        keys = ["m%d" % i for i in range(20)]
        for k in keys:
            assert c.set(k, k) == cf.OK
        got = c.mget(keys)
        assert [g[1] for g in got] == [k.encode() for k in keys]
        before = int(srv.stats()["cmd_get"])
        got = c.mget(keys + ["absent"])
        assert [g[1] for g in got[:20]] == [k.encode() for k in keys] and got[20][0] == cf.NOT_FOUND
        assert int(srv.stats()["cmd_get"]) == before + 1
        # flush_all empties it too.
        assert c.flush_all() == cf.OK
        assert c.get("m1")[0] == cf.NOT_FOUND


def test_near_cache_is_bounded():
    with util.Server(util.CELLARD, args=["-m", "64"]) as srv, cf.Near(256 * 1024, 60) as near, \
            cf.Client([srv]) as c:
        c.use_near(near)
        val = b"x" * 1000
        keys = ["b%d" % i for i in range(2000)]                    # ~2 MB through 256 KB
        for k in keys:
            assert c.set(k, val) == cf.OK
        for k in keys:
            assert c.get(k)[1] == val
        assert c.stats()["near_hits"] == 0
        got = c.mget(keys)
        assert all(g[1] == val for g in got)
        hits = c.stats()["near_hits"]
        assert 0 < hits < 400, hits                                 # at most ~256 of them fit


def test_near_cache_arguments():
    for nbytes, ttl, policy in ((1000, 10, None), (1 << 20, 0, None), (1 << 20, 5, "nope")):
        with pytest.raises(ValueError):
            cf.Near(nbytes, ttl, policy)
    with cf.Near(1 << 20, 5, "lru"):
        pass
