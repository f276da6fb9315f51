"""Every classic text command, driven by pymemcache (a real client) and,
where pymemcache has no method or hides the bytes, by a raw socket.

Each test starts its own server, so tests do not depend on one another."""

import re
import time

from pymemcache.exceptions import MemcacheClientError, MemcacheServerError

import pytest

from util import ROUTED, Server, wait_for

ITEM_MAX = 1 << 20  # default -I 1m


def raw_item(conn, key):
    """(flags, value) of key via a raw get, or None on a miss."""
    conn.send(b"get " + key + b"\r\n")
    items = conn.read_get_reply()
    assert len(items) <= 1, items
    if not items:
        return None
    assert items[0][0] == key, items
    return items[0][1], items[0][2]


def test_set_get_overwrite_flags():
    with Server() as srv:
        mc = srv.client()
        assert mc.get("missing") is None
        assert mc.set("k", b"v1") is True
        assert mc.get("k") == b"v1"
        assert mc.set("k", b"value two") is True
        assert mc.get("k") == b"value two"
        assert mc.set("f", b"x", flags=4294967295) is True
        with srv.conn() as c:
            assert raw_item(c, b"f") == (4294967295, b"x")
            c.expect(b"set k 7 0 3\r\nabc\r\n", b"STORED\r\n")
            c.expect(b"get k\r\n", b"VALUE k 7 3\r\nabc\r\nEND\r\n")
            # A 6th token that is not "noreply" is ignored.
            c.expect(b"set g 0 0 1 garbage\r\nz\r\n", b"STORED\r\n")
            # Tokens are split on spaces only, runs of spaces are fine.
            c.expect(b"set   sp   3   0   2  \r\nok\r\nget  sp \r\n",
                     b"STORED\r\nVALUE sp 3 2\r\nok\r\nEND\r\n")
            # A bare \n ends a command line too.
            c.expect(b"get sp\n", b"VALUE sp 3 2\r\nok\r\nEND\r\n")


def test_add_replace():
    with Server() as srv:
        mc = srv.client()
        assert mc.add("a", b"1") is True
        assert mc.add("a", b"2") is False
        assert mc.get("a") == b"1"
        assert mc.replace("b", b"1") is False
        assert mc.get("b") is None
        assert mc.replace("a", b"3") is True
        assert mc.get("a") == b"3"
        with srv.conn() as c:
            c.expect(b"add a 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
            c.expect(b"replace nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")


def test_append_prepend_keep_flags():
    with Server() as srv:
        mc = srv.client()
        assert mc.append("m", b"x") is False
        assert mc.prepend("m", b"x") is False
        assert mc.get("m") is None
        assert mc.set("m", b"mid", flags=9) is True
        assert mc.append("m", b">>") is True
        assert mc.prepend("m", b"<<") is True
        assert mc.get("m") == b"<<mid>>"
        with srv.conn() as c:
            # append/prepend ignore their own flags and exptime.
            c.expect(b"append m 5 -1 1\r\n!\r\n", b"STORED\r\n")
            assert raw_item(c, b"m") == (9, b"<<mid>>!")
            c.expect(b"append none 0 0 1\r\n!\r\n", b"NOT_STORED\r\n")


def test_cas_gets():
    with Server() as srv:
        mc = srv.client()
        assert mc.gets("c") == (None, None)
        assert mc.cas("c", b"v", 12345) is None          # NOT_FOUND
        assert mc.set("c", b"v0") is True
        v, cas = mc.gets("c")
        assert v == b"v0" and int(cas) > 0
        assert mc.gets("c") == (v, cas)                  # unchanged item, same CAS
        assert mc.cas("c", b"v1", cas) is True
        assert mc.get("c") == b"v1"
        assert mc.cas("c", b"v2", cas) is False          # stale CAS: EXISTS
        assert mc.get("c") == b"v1"
        v1, cas1 = mc.gets("c")
        assert int(cas1) != int(cas)
        assert mc.set("d", b"dd") is True
        many = mc.gets_many(["c", "d", "nokey"])
        assert set(many) == {"c", "d"}
        assert many["c"] == (b"v1", cas1)
        assert many["d"][0] == b"dd" and many["d"][1] != cas1
        with srv.conn() as c:
            c.send(b"gets c\r\n")
            [(key, flags, val, raw_cas)] = c.read_get_reply()
            assert (key, val, raw_cas) == (b"c", b"v1", int(cas1))
            c.expect(b"cas c 0 0 1 %d\r\nz\r\n" % (raw_cas + 1000), b"EXISTS\r\n")
            c.expect(b"cas c 0 0 1 %d\r\nz\r\n" % raw_cas, b"STORED\r\n")
            c.expect(b"cas gone 0 0 1 1\r\nz\r\n", b"NOT_FOUND\r\n")
            # Every mutation gives a new CAS.
            c.send(b"gets c\r\n")
            [(_, _, val, cas2)] = c.read_get_reply()
            assert val == b"z" and cas2 != raw_cas


def test_get_many_100_keys():
    with Server() as srv:
        mc = srv.client()
        values = {"key%03d" % i: (b"value-%d-" % i) * (i % 7 + 1) for i in range(100)}
        assert mc.set_many(values) == []
        keys = list(values) + ["absent%d" % i for i in range(10)]
        got = mc.get_many(keys)
        assert got == values
        with srv.conn() as c:
            c.send(b"get " + b" ".join(k.encode() for k in keys) + b"\r\n")
            items = c.read_get_reply()
            # Hits come back in request order, misses are omitted.
            assert [k for k, _, _, _ in items] == [k.encode() for k in values]
            assert {k.decode(): v for k, _, v, _ in items} == values


def test_gat_gats():
    # pymemcache 3.5 has no gat/gats: raw socket.
    with Server() as srv:
        with srv.conn() as c:
            c.expect(b"gat 100 nokey\r\n", b"END\r\n")
            c.expect(b"set g 3 0 2\r\nhi\r\nset h 0 0 1\r\nx\r\n", b"STORED\r\nSTORED\r\n")
            c.expect(b"gat 100 g nokey h\r\n",
                     b"VALUE g 3 2\r\nhi\r\nVALUE h 0 1\r\nx\r\nEND\r\n")
            c.send(b"gets g\r\n")
            [(_, _, _, cas)] = c.read_get_reply()
            c.send(b"gats 100 g\r\n")
            assert c.read_get_reply() == [(b"g", 3, b"hi", cas)]
            # gat with a negative exptime returns the hit, then the item is gone.
            c.expect(b"gat -1 g\r\n", b"VALUE g 3 2\r\nhi\r\nEND\r\n")
            c.expect(b"get g\r\n", b"END\r\n")
            c.expect(b"get h\r\n", b"VALUE h 0 1\r\nx\r\nEND\r\n")
            c.expect(b"gat abc h\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
            c.expect(b"gat 10\r\n", b"END\r\n")
            c.expect(b"gat\r\n", b"ERROR\r\n")
            # gat can extend a short TTL: with TTL 2 then gat 0 (never) the
            # item must still be there after the original TTL has passed.
            c.expect(b"set s 0 2 1\r\ns\r\nset t 0 2 1\r\nt\r\n", b"STORED\r\nSTORED\r\n")
            c.expect(b"gat 0 s\r\n", b"VALUE s 0 1\r\ns\r\nEND\r\n")
            wait_for(lambda: c.get(b"t") is None, 6, 0.05, "t (TTL 2) to expire")
            assert c.get(b"s") == b"s"


def test_touch():
    with Server() as srv:
        mc = srv.client()
        assert mc.touch("t", 100) is False
        assert mc.set("t", b"v", expire=100) is True
        assert mc.touch("t", 0) is True
        assert mc.get("t") == b"v"
        assert mc.touch("t", -1) is True
        assert mc.get("t") is None
        with srv.conn() as c:
            c.expect(b"set u 0 0 1\r\nu\r\ntouch u 10\r\ntouch nokey 10\r\n",
                     b"STORED\r\nTOUCHED\r\nNOT_FOUND\r\n")
            c.expect(b"touch u abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
            c.expect(b"touch u\r\n", b"ERROR\r\n")


def test_delete():
    with Server() as srv:
        mc = srv.client()
        assert mc.delete("d") is False
        assert mc.set("d", b"v") is True
        assert mc.delete("d") is True
        assert mc.get("d") is None
        assert mc.delete("d") is False
        with srv.conn() as c:
            c.expect(b"set d 0 0 1\r\nv\r\ndelete d 0\r\ndelete d\r\n",
                     b"STORED\r\nDELETED\r\nNOT_FOUND\r\n")
            c.expect(b"delete d 5\r\n",
                     b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")
            c.expect(b"delete\r\n", b"ERROR\r\n")


def test_incr_decr():
    with Server() as srv:
        mc = srv.client()
        assert mc.incr("n", 1) is None
        assert mc.decr("n", 1) is None
        assert mc.set("n", b"10") is True
        assert mc.incr("n", 5) == 15
        assert mc.decr("n", 3) == 12
        assert mc.decr("n", 100) == 0                    # decr clamps at 0
        assert mc.get("n") == b"0 "                      # length kept, space padded
        assert mc.set("w", b"18446744073709551615") is True
        assert mc.incr("w", 2) == 1                      # incr wraps at 2^64
        assert mc.get("w") == b"1" + b" " * 19           # in place, padded
        assert mc.set("p", b"100") is True
        assert mc.decr("p", 1) == 99
        assert mc.get("p") == b"99 "                     # shorter number padded
        assert mc.incr("p", 1) == 100
        assert mc.get("p") == b"100"
        assert mc.incr("p", 900) == 1000                 # longer number grows
        assert mc.get("p") == b"1000"
        assert mc.set("s", b"abc") is True
        try:
            mc.incr("s", 1)
            raise AssertionError("incr of a non-numeric value succeeded")
        except MemcacheClientError as e:
            assert b"cannot increment or decrement non-numeric value" in e.args[0], e
        with srv.conn() as c:
            c.expect(b"incr p 18446744073709551615\r\n", b"999\r\n")  # wraps
            c.expect(b"incr p 18446744073709551616\r\n",
                     b"CLIENT_ERROR invalid numeric delta argument\r\n")
            c.expect(b"incr p -1\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n")
            c.expect(b"decr p abc\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n")
            c.expect(b"incr p\r\n", b"ERROR\r\n")
            c.expect(b"set e 0 0 0\r\n\r\nincr e 1\r\n",
                     b"STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
            c.expect(b"set m 0 0 2\r\n-5\r\nincr m 1\r\n",
                     b"STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
            c.expect(b"set f 5 0 2\r\n07\r\nincr f 1\r\nget f\r\n",
                     b"STORED\r\n8\r\nVALUE f 5 2\r\n8 \r\nEND\r\n")


def test_flush_all():
    with Server() as srv:
        mc = srv.client()
        mc.set_many({"a": b"1", "b": b"2"})
        assert mc.flush_all() is True
        assert mc.get_many(["a", "b"]) == {}
        # Items stored after the flush, even within the same second, are kept.
        assert mc.set("c", b"3") is True
        assert mc.get("c") == b"3"
        with srv.conn() as c:
            c.expect(b"flush_all abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
            c.expect(b"flush_all 0\r\nget c\r\n", b"OK\r\nEND\r\n")
            c.expect(b"set c 0 0 1\r\n3\r\nflush_all noreply\r\nget c\r\n", b"STORED\r\nEND\r\n")


@pytest.mark.flush_delay
def test_flush_all_delay():
    with Server() as srv:
        mc = srv.client()
        mc.set_many({"a": b"1", "b": b"2"})
        t0 = time.monotonic()
        assert mc.flush_all(delay=3) is True
        # Not flushed yet: the delay has not passed.  (memcached rounds the
        # flush point down to the 1 s clock, so "3" takes effect after 1-3 s.)
        assert mc.get_many(["a", "b"]) == {"a": b"1", "b": b"2"}
        wait_for(lambda: mc.get_many(["a", "b"]) == {}, 6, 0.05, "delayed flush_all")
        took = time.monotonic() - t0
        print("flush_all 3 took effect after %.2fs" % took)
        assert took >= 0.9, "flush_all 3 took effect after only %.2fs" % took
        # Items stored after the flush point are visible again.  memcached
        # also hides items stored within the very second the flush fires, so
        # poll until a fresh set is readable.
        wait_for(lambda: mc.set("c", b"3") and mc.get("c") == b"3", 3, 0.05,
                 "a set after the delayed flush to be readable")


def test_version_verbosity():
    with Server() as srv:
        mc = srv.client()
        assert re.match(rb"^\d+\.\d+\.\d+", mc.version()), mc.version()
        with srv.conn() as c:
            line = c.call(b"version\r\n")
            assert re.match(rb"^VERSION \d+\.\d+\.\d+\S*\r\n$", line), line
            c.expect(b"verbosity 1\r\n", b"OK\r\n")
            c.expect(b"verbosity 0\r\n", b"OK\r\n")
            c.expect(b"verbosity 0 noreply\r\nget x\r\n", b"END\r\n")
            c.expect(b"verbosity\r\n", b"ERROR\r\n")
            c.expect(b"verbosity abc\r\n", b"CLIENT_ERROR bad command line format\r\n")


@pytest.mark.single_server
def test_stats():
    with Server(args=["-m", "16", "-c", "333"]) as srv:
        mc = srv.client()
        before = mc.stats()
        for name in (b"pid", b"uptime", b"time", b"version", b"curr_connections",
                     b"total_connections", b"cmd_get", b"cmd_set", b"get_hits",
                     b"get_misses", b"curr_items", b"total_items", b"bytes",
                     b"evictions", b"limit_maxbytes", b"threads", b"max_connections"):
            assert name in before, "stats lacks %r: %r" % (name, sorted(before))
        assert before[b"pid"] == srv.pid
        assert before[b"limit_maxbytes"] == 16 << 20
        assert before[b"max_connections"] == 333
        assert before[b"curr_items"] == 0
        assert abs(before[b"time"] - time.time()) <= 3, before[b"time"]
        mc.set("a", b"1")
        mc.set("b", b"22")
        mc.get("a")
        mc.get("zz")
        after = mc.stats()
        assert after[b"curr_items"] == 2
        assert after[b"cmd_set"] - before[b"cmd_set"] == 2
        assert after[b"get_hits"] - before[b"get_hits"] == 1
        assert after[b"get_misses"] - before[b"get_misses"] == 1
        assert after[b"cmd_get"] - before[b"cmd_get"] == 2
        settings = mc.stats("settings")
        assert settings[b"maxbytes"] == 16 << 20
        assert settings[b"maxconns"] == 333
        assert settings[b"tcpport"] == srv.port
        assert settings[b"item_size_max"] == ITEM_MAX
        items = mc.stats("items")
        numbers = [v for k, v in items.items() if re.match(rb"items:\d+:number$", k)]
        assert sum(numbers) == 2, items
        slabs = mc.stats("slabs")
        assert b"active_slabs" in slabs and b"total_malloced" in slabs, slabs
        conns = mc.stats("conns")
        my_port = mc.sock.getsockname()[1]
        addrs = [v for k, v in conns.items() if k.endswith(b":addr")]
        assert b"tcp:127.0.0.1:%d" % my_port in addrs, conns
        with srv.conn() as c:
            c.expect(b"stats nosuchthing\r\n", b"ERROR\r\n")
            c.send(b"stats\r\n")
            raw = c.read_to(b"END\r\n")
            lines = raw.split(b"\r\n")
            assert lines[-2:] == [b"END", b""], raw[-50:]
            assert all(re.match(rb"^STAT \S+ .*$", l) for l in lines[:-2]), raw


def test_noreply_everywhere():
    """Every command that takes noreply answers nothing; its effect shows in
    a later get.  A single `get` after each command frames the reply."""
    with Server() as srv:
        with srv.conn() as c:
            def check(cmds, key, expect_value):
                if expect_value is None:
                    want = b"END\r\n"
                else:
                    want = b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(expect_value), expect_value)
                c.expect(cmds + b"get " + key + b"\r\n", want)

            check(b"set a 0 0 1 noreply\r\n1\r\n", b"a", b"1")
            check(b"add a 0 0 1 noreply\r\n2\r\n", b"a", b"1")
            check(b"add b 0 0 1 noreply\r\n2\r\n", b"b", b"2")
            check(b"replace a 0 0 1 noreply\r\n3\r\n", b"a", b"3")
            check(b"replace zz 0 0 1 noreply\r\n3\r\n", b"zz", None)
            check(b"append a 0 0 1 noreply\r\n4\r\n", b"a", b"34")
            check(b"prepend a 0 0 1 noreply\r\n2\r\n", b"a", b"234")
            check(b"incr a 6 noreply\r\n", b"a", b"240")
            check(b"decr a 40 noreply\r\n", b"a", b"200")
            c.send(b"gets a\r\n")
            [(_, _, _, cas)] = c.read_get_reply()
            check(b"cas a 0 0 1 %d noreply\r\n5\r\n" % (cas + 1), b"a", b"200")
            check(b"cas a 0 0 1 %d noreply\r\n5\r\n" % cas, b"a", b"5")
            check(b"touch a -1 noreply\r\n", b"a", None)
            check(b"set d 0 0 1 noreply\r\nd\r\ndelete d noreply\r\n", b"d", None)
            check(b"set d 0 0 1 noreply\r\nd\r\ndelete d 0 noreply\r\n", b"d", None)
            check(b"set f 0 0 1 noreply\r\nf\r\nflush_all noreply\r\n", b"f", None)
            check(b"set f 0 0 1 noreply\r\nf\r\nflush_all 0 noreply\r\n", b"f", None)
            check(b"set f 0 0 1 noreply\r\nf\r\nverbosity 0 noreply\r\n", b"f", b"f")
            # noreply also silences that command's errors (1.6.18 behaviour).
            check(b"incr f 1 noreply\r\n", b"f", b"f")
            check(b"incr f abc noreply\r\n", b"f", b"f")
            check(b"touch f abc noreply\r\n", b"f", b"f")
            # Bad data chunk: the error is silenced, the 3 bytes "xyz" are read
            # as the data block (1 + \r\n) and the "\r\n" left over is an
            # empty command line, which answers ERROR.
            c.expect(b"set g 0 0 1 noreply\r\nxyz\r\nget g\r\n", b"ERROR\r\nEND\r\n")
        mc = srv.client()
        assert mc.set("p", b"1", noreply=True) is True
        assert mc.add("p", b"2", noreply=True) is True
        assert mc.replace("p", b"3", noreply=True) is True
        assert mc.append("p", b"4", noreply=True) is True
        assert mc.prepend("p", b"0", noreply=True) is True
        assert mc.incr("p", 1, noreply=True) is None
        assert mc.decr("p", 2, noreply=True) is None
        assert mc.get("p") == b"33 "
        assert mc.touch("p", -1, noreply=True) is True
        assert mc.get("p") is None
        assert mc.set("q", b"1", noreply=True) is True
        assert mc.delete("q", noreply=True) is True
        assert mc.get("q") is None


def test_value_sizes():
    with Server() as srv:
        mc = srv.client()
        for key, value in ((b"zero", b""), (b"one", b"\x00"),
                           (b"big", bytes(range(256)) * ((ITEM_MAX - 100) // 256) + b"t" * ((ITEM_MAX - 100) % 256))):
            assert mc.set(key, value) is True
            got = mc.get(key)
            assert got == value, "value of %d bytes came back as %d bytes" % (len(value), len(got or b""))
        assert len(mc.get(b"big")) == ITEM_MAX - 100
        assert mc.set("old", b"old value") is True
        try:
            mc.set("old", b"x" * (ITEM_MAX + 1))
            raise AssertionError("a value over 1 MB was stored")
        except MemcacheServerError as e:
            assert e.args[0] == b"object too large for cache", e
        assert mc.get("old") is None, "a failed too-large set must delete the old value"
        with srv.conn() as c:
            # The oversized data is swallowed; the connection stays in sync.
            c.expect(b"set k 0 0 %d\r\n%s\r\nget zero\r\n" % (2 * ITEM_MAX, b"y" * (2 * ITEM_MAX)),
                     b"SERVER_ERROR object too large for cache\r\nVALUE zero 0 0\r\n\r\nEND\r\n")
            c.expect(b"set k 0 0 -1\r\n", b"CLIENT_ERROR bad command line format\r\n")
            # Data block not ended by \r\n where <bytes> says.
            c.expect(b"set k 0 0 3\r\nabcde\r\n", b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
            c.expect(b"get k\r\n", b"END\r\n")


def test_expiry():
    with Server() as srv:
        mc = srv.client()
        now = int(time.time())
        assert mc.set("rel", b"r", expire=2) is True
        # now + 3: memcached's clock and its absolute-time base are each
        # truncated to whole seconds, so now + 2 could already be due.
        assert mc.set("abs", b"a", expire=now + 3) is True
        assert mc.set("far", b"f", expire=now + 3600) is True
        assert mc.set("farrel", b"f", expire=3600) is True
        assert mc.set("neg", b"n", expire=-1) is True
        assert mc.set("past", b"p", expire=now - 10) is True
        assert mc.set("epoch", b"e", expire=2592001) is True  # absolute 1970: expired
        assert mc.set("max_rel", b"m", expire=2592000) is True  # 30 days, relative
        got = mc.get_many(["rel", "abs", "far", "farrel", "neg", "past", "epoch", "max_rel"])
        assert set(got) == {"rel", "abs", "far", "farrel", "max_rel"}, got
        t0 = time.monotonic()
        wait_for(lambda: mc.get_many(["rel", "abs"]) == {}, 7, 0.05, "TTL 2 / now+3 items to expire")
        print("TTL 2 / now+3 items expired after %.2fs" % (time.monotonic() - t0))
        assert set(mc.get_many(["far", "farrel", "max_rel"])) == {"far", "farrel", "max_rel"}
        if not ROUTED:          # the router's stats are its own, not the items'
            st = mc.stats()
            assert st[b"curr_items"] >= 3


def test_binary_safe_values():
    with Server() as srv:
        mc = srv.client()
        all_bytes = bytes(range(256))
        tricky = b"a\r\nb\nEND\r\nVALUE x 0 1\r\n\r\n\x00"
        assert mc.set("all", all_bytes) is True
        assert mc.set("tricky", tricky) is True
        assert mc.get("all") == all_bytes
        assert mc.get_many(["tricky", "all"]) == {"tricky": tricky, "all": all_bytes}
        with srv.conn() as c:
            c.send(b"get tricky all tricky\r\n")
            items = c.read_get_reply()
            assert [(k, v) for k, _, v, _ in items] == [
                (b"tricky", tricky), (b"all", all_bytes), (b"tricky", tricky)]
            c.expect(b"append tricky 0 0 2\r\n\r\n\r\n", b"STORED\r\n")
            assert raw_item(c, b"tricky") == (0, tricky + b"\r\n")
