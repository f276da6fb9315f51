"""The binary protocol through a real client: Debian's python3-pylibmc
(libmemcached) with binary=True, covering every operation it offers, and
raw binary requests (binproto) where pylibmc has no method or hides the
answer: incr/decr with an initial value, GAT/GATK, quiet opcodes, STAT.

What libmemcached sends, for the record (observed): get -> GETK, gets and
get_multi -> GETKQ... NOOP, set/add/replace/append/prepend -> their
opcodes, cas -> REPLACE with a cas, incr/decr -> INCR/DECR with exptime
0xffffffff (no initial value), touch -> TOUCH, flush_all -> FLUSH, stats
-> STAT; with behaviors={"_noreply": True} the quiet twins SETQ, ADDQ,
DELETEQ, INCRQ, APPENDQ, FLUSHQ.

Each test starts its own server, so tests do not depend on one another."""

import struct

import pylibmc

import binproto as bp
import pytest

from util import ROUTED, Server, wait_for

ITEM_MAX = 1 << 20  # default -I 1m


def client(srv, **behaviors):
    return pylibmc.Client(["127.0.0.1:%d" % srv.port], binary=True, behaviors=behaviors)


def bconn(srv):
    return bp.BinConn(srv.port)


def test_pylibmc_storage_commands():
    with Server() as srv:
        mc = client(srv)
        assert mc.get("missing") is None
        assert mc.set("a", "1") is True
        assert mc.get("a") == "1"
        assert mc.add("a", "2") is False                  # 02 Data exists
        assert mc.get("a") == "1"
        assert mc.add("b", "2") is True
        assert mc.replace("a", "3") is True
        assert mc.get("a") == "3"
        # Binary REPLACE of a missing key answers 01 Not found, which
        # pylibmc raises (the text protocol's NOT_STORED returns False).
        try:
            mc.replace("nope", "x")
            raise AssertionError("replace of a missing key succeeded")
        except pylibmc.NotFound:
            pass
        assert mc.get("nope") is None
        assert mc.append("a", "4") is True
        assert mc.prepend("a", "2") is True
        assert mc.get("a") == "234"
        assert mc.append("nope", "x") is False             # 05 Not stored.
        assert mc.prepend("nope", "x") is False
        assert mc.get("nope") is None
        assert mc.delete("a") is True
        assert mc.delete("a") is False                     # 01 Not found
        assert mc.get("a") is None

        # Values of every type pylibmc serialises, with its flags.
        for key, value in [("str", "ü and more"), ("bytes", b"\x00\xff\r\n"), ("int", 12),
                           ("long", 2 ** 70), ("list", [1, "two", {3: 4}]), ("empty", b""),
                           ("bool", True)]:
            assert mc.set(key, value) is True, key
            assert mc.get(key) == value, key
        # Binary keys may hold spaces and control bytes (not through
        # cellar-router: its pools speak meta or text, whose keys cannot).
        if not ROUTED:
            assert mc.set("key with space", "v") is True
            assert mc.get("key with space") == "v"
        assert mc.set("k" * 250, "long key") is True
        assert mc.get("k" * 250) == "long key"

        # The flags travel in the extras as they were given.
        with bconn(srv) as c:
            p = c.call(bp.req(bp.SET, b"f", bp.set_ext(0xdeadbeef, 0), b"flagged", opaque=7))
            assert (p.op, p.status, p.opaque, p.value) == (bp.SET, bp.OK, 7, b""), bp.describe(p)
            assert p.cas != 0
            g = c.call(bp.req(bp.GET, b"f", opaque=8))
            assert g.status == bp.OK and g.ext == struct.pack(">I", 0xdeadbeef), bp.describe(g)
            assert g.value == b"flagged" and g.cas == p.cas and g.opaque == 8


def test_pylibmc_multi_100_keys():
    with Server() as srv:
        mc = client(srv)
        data = {"multi:%03d" % i: "value-%d" % i * (i % 7 + 1) for i in range(100)}
        assert mc.set_multi(data) == []
        keys = list(data) + ["absent:%d" % i for i in range(20)]
        assert mc.get_multi(keys) == data
        # With a prefix: the prefix is sent, the answer's keys lack it.
        assert mc.set_multi({str(i): i for i in range(100)}, key_prefix="p:") == []
        assert mc.get_multi([str(i) for i in range(100)], key_prefix="p:") == \
            {str(i): i for i in range(100)}
        assert mc.get("p:42") == 42
        # add_multi returns the keys that were not stored.
        failed = mc.add_multi({"multi:000": "x", "multi:001": "y", "fresh": "z"})
        assert sorted(failed) == ["multi:000", "multi:001"], failed
        assert mc.get("fresh") == "z"
        assert mc.delete_multi(list(data)) is True
        assert mc.get_multi(list(data)) == {}
        # One missing key makes delete_multi false; the others are deleted.
        assert mc.delete_multi(["p:1", "p:2", "never"]) is False
        assert mc.get_multi(["p:1", "p:2", "p:3"], ) == {"p:3": 3}


def test_pylibmc_cas_gets():
    with Server() as srv:
        mc = client(srv, cas=True)
        assert mc.gets("nope") == (None, None)
        mc.set("c", "1")
        v, cas = mc.gets("c")
        assert v == "1" and cas
        assert mc.cas("c", "2", cas) is True
        assert mc.get("c") == "2"
        assert mc.cas("c", "3", cas) is False              # stale cas: 02 exists
        assert mc.get("c") == "2"
        v2, cas2 = mc.gets("c")
        assert v2 == "2" and cas2 != cas
        try:
            mc.cas("nope", "x", cas2)                        # 01 Not found
            raise AssertionError("cas of a missing key succeeded")
        except pylibmc.NotFound:
            pass
        # Raw: a cas in the header of SET/DELETE/APPEND must match.
        with bconn(srv) as c:
            bad = cas2 + 1000
            p = c.call(bp.req(bp.SET, b"c", bp.set_ext(), b"x", cas=bad))
            assert (p.status, p.value) == (bp.EEXISTS, b"Data exists for key."), bp.describe(p)
            p = c.call(bp.req(bp.APPEND, b"c", value=b"x", cas=bad))
            assert p.status == bp.EEXISTS, bp.describe(p)
            p = c.call(bp.req(bp.DELETE, b"c", cas=bad))
            assert p.status == bp.EEXISTS, bp.describe(p)
            p = c.call(bp.req(bp.SET, b"nope", bp.set_ext(), b"x", cas=bad))
            assert (p.status, p.value) == (bp.ENOENT, b"Not found"), bp.describe(p)
            p = c.call(bp.req(bp.APPEND, b"c", value=b"y", cas=cas2))
            assert p.status == bp.OK and p.cas not in (0, cas2), bp.describe(p)
            p = c.call(bp.req(bp.DELETE, b"c", cas=p.cas))
            assert (p.status, p.cas) == (bp.OK, 0), bp.describe(p)


def test_pylibmc_incr_decr():
    with Server() as srv:
        mc = client(srv)
        mc.set("n", 5)
        assert mc.incr("n", 10) == 15
        assert mc.incr("n") == 16
        assert mc.decr("n", 6) == 10
        assert mc.decr("n", 100) == 0                     # stops at 0
        assert mc.get("n") == 0
        mc.set("m", "7")
        assert mc.incr_multi(["n", "m"], delta=2) is None
        assert mc.get_multi(["n", "m"]) == {"n": 2, "m": "9"}
        try:
            mc.incr("missing")          # exptime 0xffffffff: no initial value
            raise AssertionError("incr of a missing key succeeded")
        except pylibmc.NotFound:
            pass
        assert mc.get("missing") is None
        mc.set("s", "abc")
        try:
            mc.incr("s")                # 06 Non-numeric server-side value
            raise AssertionError("incr of a non-number succeeded")
        except pylibmc.Error:
            pass

        # pylibmc has no initial value: raw INCR/DECR with extras.
        with bconn(srv) as c:
            p = c.call(bp.req(bp.INCR, b"w", bp.incr_ext(1, 77, bp.NO_CREATE), opaque=1))
            assert (p.status, p.value, p.cas) == (bp.ENOENT, b"Not found", 0), bp.describe(p)
            # A miss with another exptime stores `initial` and answers it,
            # without applying delta.
            p = c.call(bp.req(bp.INCR, b"w", bp.incr_ext(5, 77, 0), opaque=2))
            assert (p.status, p.opaque) == (bp.OK, 2), bp.describe(p)
            assert struct.unpack(">Q", p.value)[0] == 77 and p.cas != 0
            g = c.call(bp.req(bp.GET, b"w"))
            assert (g.value, g.ext, g.cas) == (b"77", b"\0\0\0\0", p.cas), bp.describe(g)
            p = c.call(bp.req(bp.INCR, b"w", bp.incr_ext(5, 77, 0)))
            assert struct.unpack(">Q", p.value)[0] == 82
            p = c.call(bp.req(bp.DECR, b"d", bp.incr_ext(5, 3, 1000)))
            assert struct.unpack(">Q", p.value)[0] == 3
            p = c.call(bp.req(bp.DECR, b"d", bp.incr_ext(5, 3, 1000)))
            assert struct.unpack(">Q", p.value)[0] == 0
            # incr wraps modulo 2^64.
            p = c.call(bp.req(bp.INCR, b"w", bp.incr_ext(2 ** 64 - 1, 0, 0)))
            assert struct.unpack(">Q", p.value)[0] == 81
            # The quiet twins create silently; a following get sees it.
            pkts = c.until_noop(bp.req(bp.INCRQ, b"q", bp.incr_ext(1, 10, 0)) +
                                bp.req(bp.DECRQ, b"q", bp.incr_ext(4, 0, 0)) +
                                bp.req(bp.GET, b"q", opaque=3))
            # (memcached may rewrite a shrinking number in place, padded
            # with spaces: "10" decr 4 can read back as "6 ".)
            assert [(x.opaque, x.value.rstrip(b" ")) for x in pkts] == [(3, b"6")], \
                [bp.describe(x) for x in pkts]
            # A cas in the header must match the item's.
            p = c.call(bp.req(bp.INCR, b"q", bp.incr_ext(1, 0, 0), cas=pkts[0].cas + 99))
            assert p.status == bp.EEXISTS, bp.describe(p)
            p = c.call(bp.req(bp.INCR, b"q", bp.incr_ext(1, 0, 0), cas=pkts[0].cas))
            assert p.status == bp.OK and struct.unpack(">Q", p.value)[0] == 7
            # A non-number: 06 with memcached's sentence.
            p = c.call(bp.req(bp.DECR, b"s", bp.incr_ext(1, 0, 0)))
            assert (p.status, p.value) == (bp.DELTA_BADVAL, bp.TEXT[bp.DELTA_BADVAL]), bp.describe(p)


def test_pylibmc_touch_and_expiry():
    with Server() as srv:
        mc = client(srv)
        mc.set("t", "v", time=1)
        mc.set("canary", "v", time=1)
        mc.set("gone", "v", time=1)
        assert mc.touch("t", 100) is True
        assert mc.touch("nope", 100) is False
        wait_for(lambda: mc.get("canary") is None, 10, what="a 1 s item to expire")
        if ROUTED:      # on another server, whose clock ticks at its own moment
            wait_for(lambda: mc.get("gone") is None, 3, what="the other 1 s item")
        assert mc.get("gone") is None
        assert mc.get("t") == "v"                         # touched before it expired

        with bconn(srv) as c:
            s = c.call(bp.req(bp.SET, b"g", bp.set_ext(9, 0), b"val"))
            # TOUCH answers the flags, no value, and the item's cas.
            p = c.call(bp.req(bp.TOUCH, b"g", bp.exp_ext(1000), opaque=4))
            assert (p.status, p.ext, p.key, p.value, p.cas) == \
                (bp.OK, b"\0\0\0\x09", b"", b"", s.cas), bp.describe(p)
            p = c.call(bp.req(bp.TOUCH, b"nope", bp.exp_ext(1000)))
            assert (p.status, p.value) == (bp.ENOENT, b"Not found"), bp.describe(p)
            p = c.call(bp.req(bp.GAT, b"g", bp.exp_ext(1000)))
            assert (p.status, p.ext, p.key, p.value, p.cas) == \
                (bp.OK, b"\0\0\0\x09", b"", b"val", s.cas), bp.describe(p)
            p = c.call(bp.req(bp.GATK, b"g", bp.exp_ext(0)))
            assert (p.status, p.key, p.value) == (bp.OK, b"g", b"val"), bp.describe(p)
            p = c.call(bp.req(bp.GATK, b"nope", bp.exp_ext(0)))
            assert (p.status, p.keylen, p.key, p.value) == (bp.ENOENT, 4, b"nope", b""), bp.describe(p)
            # Quiet GATs: hits answered, misses not.
            pkts = c.until_noop(bp.req(bp.GATQ, b"nope", bp.exp_ext(0), opaque=1) +
                                bp.req(bp.GATKQ, b"g", bp.exp_ext(0), opaque=2) +
                                bp.req(bp.GATQ, b"g", bp.exp_ext(0), opaque=3))
            assert [(x.op, x.opaque) for x in pkts] == [(bp.GATKQ, 2), (bp.GATQ, 3)], pkts
            # Touching into the past (an absolute time long gone) expires it.
            p = c.call(bp.req(bp.GAT, b"g", bp.exp_ext(1000000000)))
            assert p.status == bp.OK, bp.describe(p)
            p = c.call(bp.req(bp.GET, b"g"))
            assert p.status == bp.ENOENT, bp.describe(p)


@pytest.mark.flush_delay
def test_pylibmc_flush_all():
    with Server() as srv:
        mc = client(srv)
        mc.set_multi({"f%d" % i: i for i in range(20)})
        assert mc.flush_all() is True
        assert mc.get_multi(["f%d" % i for i in range(20)]) == {}
        mc.set("later", "v")
        assert mc.get("later") == "v"                     # stored after the flush
        # A delayed flush: nothing goes before its time, everything after.
        mc.set("d", "v")
        assert mc.flush_all(time=2) is True
        assert mc.get("d") == "v"
        wait_for(lambda: mc.get("d") is None, 10, what="the delayed flush")
        assert mc.get("later") is None
        with bconn(srv) as c:
            c.call(bp.req(bp.SET, b"x", bp.set_ext(), b"1"))
            p = c.call(bp.req(bp.FLUSH, ext=bp.exp_ext(0), opaque=5))
            assert (p.op, p.status, p.opaque, p.cas, p.value) == (bp.FLUSH, bp.OK, 5, 0, b"")
            assert c.call(bp.req(bp.GET, b"x")).status == bp.ENOENT


def test_pylibmc_noreply_quiet():
    with Server() as srv:
        mc = client(srv)
        nr = client(srv, _noreply=True)
        # libmemcached may keep quiet requests in its buffer until the next
        # request that waits for an answer, so each check goes through the
        # same client (a GETK flushes what is buffered before it).  Only
        # quiet requests that succeed: the server answers a failed one, and
        # libmemcached does not read that answer, which then desynchronises
        # it (the raw part below checks failures).
        assert nr.set("q", "1") is True                   # SETQ
        assert nr.add("q2", "2") is True                  # ADDQ
        assert nr.append("q", "0") is True                # APPENDQ
        assert nr.get("q") == "10"
        assert mc.get("q") == "10"
        nr.incr("q", 5)                                   # INCRQ (pylibmc's return is meaningless)
        assert nr.get("q") == "15"
        assert nr.delete("q") is True                     # DELETEQ
        assert nr.get("q") is None
        assert nr.get("q2") == "2"
        assert nr.set_multi({"m%d" % i: i for i in range(50)}) == []
        assert nr.get_multi(["m%d" % i for i in range(50)]) == {"m%d" % i: i for i in range(50)}
        assert mc.get("m7") == 7
        assert nr.flush_all() is True                     # FLUSHQ
        assert nr.get("m1") is None
        assert mc.get("m7") is None

        # The rules, raw: quiet successes and quiet misses say nothing;
        # failures of quiet commands and hits of quiet gets are answered.
        with bconn(srv) as c:
            pkts = c.until_noop(
                bp.req(bp.SETQ, b"a", bp.set_ext(1, 0), b"A", opaque=1) +
                bp.req(bp.ADDQ, b"a", bp.set_ext(), b"B", opaque=2) +       # exists
                bp.req(bp.REPLACEQ, b"zz", bp.set_ext(), b"B", opaque=3) +  # not found
                bp.req(bp.APPENDQ, b"zz", value=b"B", opaque=4) +           # not stored
                bp.req(bp.PREPENDQ, b"a", value=b"<", opaque=5) +
                bp.req(bp.GETQ, b"zz", opaque=6) +
                bp.req(bp.GETKQ, b"a", opaque=7) +
                bp.req(bp.DELETEQ, b"zz", opaque=8) +                       # not found
                bp.req(bp.INCRQ, b"a", bp.incr_ext(1, 0, 0), opaque=9) +    # non-numeric
                bp.req(bp.GETQ, b"a", opaque=10) +
                bp.req(bp.DELETEQ, b"a", opaque=11) +
                bp.req(bp.FLUSHQ, opaque=12))
            got = [(x.op, x.status, x.opaque, x.key, x.value) for x in pkts]
            assert got == [
                (bp.ADDQ, bp.EEXISTS, 2, b"", b"Data exists for key."),
                (bp.REPLACEQ, bp.ENOENT, 3, b"", b"Not found"),
                (bp.APPENDQ, bp.NOT_STORED, 4, b"", b"Not stored."),
                (bp.GETKQ, bp.OK, 7, b"a", b"<A"),
                (bp.DELETEQ, bp.ENOENT, 8, b"", b"Not found"),
                (bp.INCRQ, bp.DELTA_BADVAL, 9, b"", bp.TEXT[bp.DELTA_BADVAL]),
                (bp.GETQ, bp.OK, 10, b"", b"<A"),
            ], got
            # A lone quiet hit is answered without a NOOP behind it.
            c.call(bp.req(bp.SET, b"h", bp.set_ext(), b"H"))
            p = c.call(bp.req(bp.GETQ, b"h", opaque=13))
            assert (p.op, p.opaque, p.value) == (bp.GETQ, 13, b"H"), bp.describe(p)
            # QUITQ closes without a word; QUIT answers first.
            c.send(bp.req(bp.QUITQ))
            assert c.wait_closed(), "QUITQ did not close the connection"
            assert c.buf == b"", c.buf
        with bconn(srv) as c:
            c.send(bp.req(bp.QUIT, opaque=14))
            assert c.wait_closed(), "QUIT did not close the connection"
            pkts, rest = bp.parse_packets(c.buf)
            assert [(x.op, x.status, x.opaque) for x in pkts] == [(bp.QUIT, bp.OK, 14)] and not rest


def test_pylibmc_no_block_pipelined():
    with Server() as srv:
        mc = client(srv, no_block=True, tcp_nodelay=True)
        for i in range(200):
            mc.set("nb%d" % i, i)
        assert mc.get_multi(["nb%d" % i for i in range(200)]) == {"nb%d" % i: i for i in range(200)}
        assert mc.incr("nb5", 5) == 10


def test_pylibmc_large_values():
    with Server() as srv:
        mc = client(srv)
        big = bytes(range(256)) * ((ITEM_MAX - 4096) // 256)
        assert mc.set("big", big) is True
        assert mc.get("big") == big
        for n in (ITEM_MAX, ITEM_MAX + 100, 2 * ITEM_MAX):
            try:
                mc.set("big", b"x" * n)                   # 03 Too large.
                raise AssertionError("a %d-byte value was stored" % n)
            except pylibmc.TooBig:
                pass
        # A refused SET also removes the old value (memcached does, so a
        # stale value cannot outlive a failed overwrite); the connection
        # survives (the value's bytes were skipped).
        assert mc.get("big") is None
        assert mc.set("after", "ok") is True
        assert mc.get("after") == "ok"
        with bconn(srv) as c:
            pkts = c.until_noop(bp.req(bp.APPENDQ, b"after", value=b"y" * (ITEM_MAX + 10), opaque=1))
            assert [(x.status, x.value) for x in pkts] == [(bp.E2BIG, b"Too large.")], pkts


@pytest.mark.single_server
def test_pylibmc_stats():
    with Server() as srv:
        mc = client(srv)
        mc.set("s1", "v")
        mc.get("s1")
        mc.get("nope")
        stats = mc.get_stats()
        assert len(stats) == 1
        name, d = stats[0]
        assert name.startswith(b"127.0.0.1:%d" % srv.port), name
        for k in ("pid", "uptime", "curr_items", "total_items", "bytes", "curr_connections",
                  "total_connections", "cmd_get", "cmd_set", "get_hits", "get_misses",
                  "evictions", "limit_maxbytes", "threads"):
            assert k in d, (k, sorted(d))
        assert int(d["curr_items"]) == 1
        assert int(d["get_hits"]) == 1 and int(d["get_misses"]) == 1
        assert int(d["pid"]) == srv.pid
        for group in ("items", "slabs", "settings"):
            assert len(mc.get_stats(group)) == 1
        try:
            mc.get_stats("bogus")                          # 01 Not found
            raise AssertionError("stats bogus succeeded")
        except pylibmc.Error:
            pass
        with bconn(srv) as c:
            general = c.stats()
            assert int(general["curr_items"]) == 1
            assert general["pid"] == b"%d" % srv.pid
            assert int(c.stats(b"settings")["maxbytes"]) == 64 * 1024 * 1024
            assert "items:1:number" in c.stats(b"items")
            assert "active_slabs" in c.stats(b"slabs")
            assert c.stats(b"reset") == {}
            assert int(c.stats()["get_hits"]) == 0
            for group in (b"bogus", b"conns"):
                try:
                    c.stats(group)
                    raise AssertionError("stat %r answered" % group)
                except KeyError as e:
                    assert e.args[0] == (bp.ENOENT, b"Not found"), e
            # The connection is still usable after a refused group.
            assert c.call(bp.req(bp.NOOP, opaque=9)).opaque == 9
