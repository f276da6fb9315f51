"""Per-class counters of `stats slabs` against memcached 1.6.18's.

memcached counts get, set, delete, incr, decr, cas and touch hits in the
slab class of the item they found.  The same commands go to both servers,
on one small and one large item; their classes are found with a metadump
(the class ids themselves differ: the item headers do), and each class's
counters must be memcached's.  Passes with CELLARD=/usr/bin/memcached too.
"""

from test_dump import _metadump
from util import CELLARD, MEMCACHED, Server

COUNTERS = ["get_hits", "cmd_set", "delete_hits", "incr_hits", "decr_hits", "cas_hits",
            "cas_badval", "touch_hits"]


def _run(binary):
    with Server(binary) as srv, srv.conn() as c:
        c.expect(b"set small 0 0 1\r\n5\r\n", b"STORED\r\n")
        c.expect(b"set big 0 0 2000\r\n%s\r\n" % (b"7" * 2000), b"STORED\r\n")
        cls = {k.decode(): f[b"cls"].decode() for k, f in _metadump(c).items()}
        assert cls["small"] != cls["big"], cls
        lines = [b"incr small 1", b"incr small 2", b"decr big 1", b"touch small 10",
                 b"touch big 10", b"touch big 20", b"get small big", b"incr nosuch 1",
                 b"ma small", b"ma big MD", b"gets small", b"touch nosuch 1"]
        for line in lines:
            c.send(line + b"\r\n")
            c.read_to(b"END\r\n" if line.startswith(b"get") else b"\r\n")
        cas = int(c.call(b"mg small c\r\n").split()[1][1:])
        c.expect(b"cas small 0 0 1 %d\r\n9\r\n" % cas, b"STORED\r\n")
        c.expect(b"cas small 0 0 1 %d\r\n9\r\n" % cas, b"EXISTS\r\n")
        c.expect(b"delete small\r\n", b"DELETED\r\n")
        c.expect(b"md big\r\n", b"HD\r\n")
        c.expect(b"delete small\r\n", b"NOT_FOUND\r\n")
        slabs = c.stats("slabs")
        totals = c.stats()
    per = {role: {n: slabs.get("%s:%s" % (cls[role], n)) for n in COUNTERS}
           for role in ("small", "big")}
    return per, {n: totals.get(n) for n in ("delete_hits", "incr_hits", "decr_hits",
                                            "touch_hits", "cas_hits", "get_hits")}


def test_per_class_counters_match_memcached():
    want, got = _run(MEMCACHED), _run(CELLARD)
    assert got == want, (got, want)
    assert want[0]["small"]["delete_hits"] == "1" and want[0]["big"]["delete_hits"] == "1"
    assert want[0]["big"]["touch_hits"] == "2" and want[0]["small"]["incr_hits"] == "3"
