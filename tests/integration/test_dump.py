"""Dumping keys: `lru_crawler metadump`, `stats cachedump`, and memcached-tool.

The same items go into cellard and memcached 1.6.18 and the dumps are
compared field by field, except where the two servers legitimately differ:
the order of the lines (memcached walks LRUs, cellard its hash table), slab
class ids and item sizes (the item headers differ), and times, which are
compared relative to each server's own clock.  memcached's cachedump lists
only the newest part of a class's LRU, so it is compared on freshly stored
items.  These pass with CELLARD=/usr/bin/memcached too, except the last two,
which check what cellard does beyond it: dumps that stream from the worker
and run side by side (memcached answers BUSY to a second one).
"""

import socket
import subprocess
import time

from util import CELLARD, HOST, MEMCACHED, Conn, Server, wait_for

TOOL = "/usr/share/memcached/scripts/memcached-tool"

# Keys with every printable byte metadump must encode, and one it keeps.
ODD_KEYS = [bytes(range(33, 80)), bytes(range(80, 127)), b"plain-key_1.0~x", b"caf\xc3\xa9"]


def _load(c, n, prefix=b"k", value=b"v" * 20, exptime=0):
    """Store n items in one pipelined burst; check every reply."""
    c.send(b"".join(b"set %s%d 0 %d %d\r\n%s\r\n" % (prefix, i, exptime, len(value), value)
                    for i in range(n)))
    c.read_until(lambda b: len(b) if b.count(b"STORED\r\n") == n else 0, 60,
                 what="%d STORED" % n)


def _read_dump(c, timeout=60):
    """A metadump's lines and its closing END\\r\\n, read in big bites; what
    follows stays in c.buf."""
    data = bytearray(c.buf)
    c.buf = b""
    deadline = time.monotonic() + timeout
    seen = 0
    while True:
        end = b"END\r\n" if data.startswith(b"END\r\n") else b"\nEND\r\n"
        i = data.find(end, max(0, seen - len(end)))
        if i >= 0:
            i += len(end)
            c.buf = bytes(data[i:])
            return bytes(data[:i])
        seen = len(data)
        c.sock.settimeout(max(0.001, deadline - time.monotonic()))
        d = c.sock.recv(1 << 20)
        assert d, "connection closed during the dump"
        data += d


def _metadump(c, what=b"hash", unique=True):
    """{key: {field: value}} of a metadump.  "hash" by default: memcached's
    walk of its LRUs ("all", class lists) may meet an item twice as it
    moves between them; unique asserts that no key comes twice."""
    c.send(b"lru_crawler metadump " + what + b"\r\n")
    raw = _read_dump(c)
    assert raw.endswith(b"END\r\n"), raw[-100:]
    out = {}
    for line in raw[:-5].split(b"\n")[:-1]:
        fields = dict(f.split(b"=", 1) for f in line.split(b" "))
        key = fields.pop(b"key")
        assert not unique or key not in out, "key %r dumped twice" % key
        out[key] = fields
    return out


def _decode(k):
    out, i = b"", 0
    while i < len(k):
        if k[i:i + 1] == b"%":
            out += bytes([int(k[i + 1:i + 3], 16)])
            i += 3
        else:
            out += k[i:i + 1]
            i += 1
    return out


def _now(c):
    return int(c.stats()["time"])


def _fill_both(c):
    for k in ODD_KEYS:
        c.expect(b"set %s 3 0 2\r\nab\r\n" % k, b"STORED\r\n")
    c.expect(b"set ttl 0 1000 1\r\nx\r\n", b"STORED\r\n")
    c.expect(b"set big 0 0 5000\r\n%s\r\n" % (b"b" * 5000), b"STORED\r\n")
    c.expect(b"get ttl\r\n", b"VALUE ttl 0 1\r\nx\r\nEND\r\n")
    c.expect(b"set gone 0 0 1\r\nx\r\n", b"STORED\r\n")
    c.expect(b"delete gone\r\n", b"DELETED\r\n")


def _view(c):
    """A metadump as the fields that must agree between the two servers."""
    now = _now(c)
    view = {}
    for key, f in _metadump(c).items():
        exp = int(f[b"exp"])
        view[key] = (f[b"fetch"], f[b"cas"], exp if exp == -1 else exp - now,
                     abs(int(f[b"la"]) - now) <= 2)
    return view


def test_metadump_matches_memcached():
    """Same items in both: the same keys, URI-encoded the same way, with the
    same fetch, cas, remaining time to live and a recent last access."""
    views = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary) as srv, srv.conn() as c:
            _fill_both(c)
            views.append(_view(c))
    want, got = views
    assert set(got) == set(want), (sorted(got), sorted(want))
    for key in want:
        w, g = want[key], got[key]
        assert g[:2] == w[:2] and g[3] and w[3], (key, g, w)
        assert g[2] == w[2] or (w[2] != -1 and abs(g[2] - w[2]) <= 1), (key, g, w)
    assert {_decode(k) for k in got} == set(ODD_KEYS) | {b"ttl", b"big"}
    assert b"plain-key_1.0~x" in got


def test_metadump_class_lists():
    """A class list dumps exactly the items of those classes; "hash" and
    "all" dump everything; a bad list is refused as memcached refuses it.
    (cellard's dumps never repeat a key; memcached's LRU walks may.)"""
    bad = [b"0", b"64", b"-1", b"1a", b"foo", b"ALL", b"all,1", b"1,99", b"0x1"]
    syntax = [b"lru_crawler metadump", b"lru_crawler metadump all extra"]
    replies = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary) as srv, srv.conn() as c:
            _fill_both(c)
            every = _metadump(c)
            assert set(_metadump(c, b"all", unique=False)) == set(every)
            classes = sorted({int(f[b"cls"]) for f in every.values()})
            assert len(classes) >= 2, classes
            for cls in classes:
                part = _metadump(c, b"%d" % cls, unique=False)
                assert set(part) == {k for k, f in every.items() if int(f[b"cls"]) == cls}
            two = _metadump(c, b",%d,,+%d," % (classes[0], classes[-1]), unique=False)
            assert set(two) == {k for k, f in every.items()
                                if int(f[b"cls"]) in (classes[0], classes[-1])}
            empty = next(i for i in range(63, 0, -1) if i not in classes)
            out = [c.call(b"lru_crawler metadump %d\r\n" % empty),
                   c.call(b"lru_crawler metadump ,\r\n")]
            out += [c.call(b"lru_crawler metadump " + a + b"\r\n") for a in bad]
            out += [c.call(line + b"\r\n") for line in syntax]
            c.expect(b"get ttl\r\n", b"VALUE ttl 0 1\r\nx\r\nEND\r\n")   # still serving
            replies.append(out)
    assert replies[1] == replies[0]
    assert replies[0][:3] == [b"END\r\n", b"NOTSTARTED no items to crawl\r\n",
                              b"BADCLASS invalid class id\r\n"]


def test_dumps_refused_with_X():
    """-X turns both dumps off, with memcached's words."""
    lines = [b"lru_crawler metadump all", b"stats cachedump 1 0", b"stats cachedump 1"]
    replies = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary, args=["-X"]) as srv, srv.conn() as c:
            replies.append([c.call(line + b"\r\n") for line in lines])
    assert replies[1] == replies[0]
    assert replies[0][0] == b"ERROR metadump not allowed\r\n"


def _cachedump(c, args):
    c.send(b"stats cachedump " + args + b"\r\n")
    lines = c.read_to(b"END\r\n").split(b"\r\n")
    assert lines[-2:] == [b"END", b""], lines[-3:]
    return lines[:-2]


def test_cachedump_matches_memcached():
    """Freshly stored items of one class: the ITEM lines memcached gives
    (it lists the newest part of the LRU only) among cellard's (in another
    order), the limit honoured, and memcached's errors."""
    bad = [b"", b"1", b"x 1", b"1 x", b"1 -1", b"-1 1", b"64 1"]
    results = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary) as srv, srv.conn() as c:
            for i in range(30):
                c.expect(b"set cd%d 0 0 %d\r\n%s\r\n" % (i, 10 + i % 3, b"x" * (10 + i % 3)),
                         b"STORED\r\n")
            # At once: memcached lists the HOT part of the LRU only, which its
            # maintainer thread empties in its own time; cellard the whole class.
            every = _cachedump(c, b"1 0")
            assert {f[b"cls"] for f in _metadump(c).values()} == {b"1"}
            two = _cachedump(c, b"1 2")
            stored = {b"ITEM cd%d [%d b; 0 s]" % (i, 10 + i % 3) for i in range(30)}
            assert len(set(every)) == len(every) and set(every) <= stored, every
            assert len(two) <= 2 and set(two) <= stored, two
            if binary != MEMCACHED:
                assert set(every) == stored and len(two) == 2, (every, two)
            errors = [c.call(b"stats cachedump " + a + b"\r\n") for a in bad]
            errors.append(c.call(b"stats cachedump 0 5\r\n"))
            results.append((every, errors))
    assert results[1][1] == results[0][1]


def test_memcached_tool_dump_and_keys():
    """memcached-tool (Debian's, which reads `lru_crawler metadump all`)
    dumps the same keys and values from both servers."""
    outs = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary) as srv, srv.conn() as c:
            _load(c, 2000, b"tool:", b"some value")
            for k in ODD_KEYS[2:]:
                c.expect(b"set %s 7 0 3\r\nodd\r\n" % k, b"STORED\r\n")
            addr = "%s:%d" % (HOST, srv.port)
            dump = subprocess.run(["perl", TOOL, addr, "dump"], capture_output=True,
                                  timeout=60, check=True).stdout
            keys = subprocess.run(["perl", TOOL, addr, "keys"], capture_output=True,
                                  timeout=60, check=True).stdout
            records = dump.split(b"add ")[1:]
            key_lines = {line.split(b" ")[0] for line in keys.splitlines()}
            outs.append((sorted(records), key_lines))
    assert outs[1][0] == outs[0][0]
    assert len(outs[0][0]) == 2002
    assert {k.split(b" exp=")[0] for k in outs[1][1]} == {k.split(b" exp=")[0]
                                                          for k in outs[0][1]}


def test_metadump_streams_while_others_are_served():
    """A large dump to a client that does not read: the server buffers a
    bounded amount, serves other clients meanwhile, holds off the table's
    doubling while the dump runs (so every key stored before it comes out
    exactly once, though 20,000 more arrive meanwhile), and grows the table
    once it is over."""
    with Server(CELLARD, args=["-o", "hashpower=13"]) as srv, srv.conn() as c:
        _load(c, 5000, b"before:", b"v" * 200)
        _load(c, 90000, b"pad:" + b"p" * 40, b"")   # cheap items: a 10 MB dump
        # 95,000 items: 2^16 buckets hold them at under 1.5 a bucket.
        power = 16
        wait_for(lambda: srv.stats()["hash_power_level"] == "16" and
                 srv.stats()["hash_is_expanding"] == "0", 30, 0.05, "table growth")
        rss0 = srv.rss_kb()
        slow = Conn(srv.port)
        slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        slow.send(b"lru_crawler metadump all\r\nget before:7\r\n")
        with srv.conn() as other:
            _load(other, 10000, b"during:", b"")
            other.expect(b"get before:1\r\n", b"VALUE before:1 0 200\r\n%s\r\nEND\r\n" % (b"v" * 200))
            st = other.stats()
            # More than 1.5 items a bucket, yet no doubling while the dump is held up.
            assert int(st["curr_items"]) == 105000 > 3 << (power - 1), st
            assert st["hash_is_expanding"] == "0", st
            assert int(st["hash_power_level"]) == power, (power, st["hash_power_level"])
        grown = srv.rss_kb() - rss0
        dump = _read_dump(slow)
        after = slow.read_get_reply()
        slow.close()
        lines = dump[:-5].split(b"\n")[:-1]
        keys = [_decode(line.split(b" ", 1)[0][4:]) for line in lines]
        assert len(keys) == len(set(keys)), "a key dumped twice"
        before = {k for k in keys if k.startswith(b"before:")}
        assert before == {b"before:%d" % i for i in range(5000)}
        assert sum(k.startswith(b"pad:") for k in keys) == 90000
        assert after == [(b"before:7", 0, b"v" * 200, None)]
        # The dump is over 8 MB (more than the sockets hold); the server held
        # a slice of it, not all (the 10,000 new items account for the growth).
        assert len(dump) > 8 << 20, len(dump)
        assert grown < 3 << 10, grown
        wait_for(lambda: int(srv.stats()["hash_power_level"]) > power, 30, 0.05,
                 "the table to double after the dump")


def test_dump_client_that_goes_away():
    """Clients that ask for a dump and close before reading it: the server
    carries on, and the table can double again (the dumps let go of it)."""
    with Server(CELLARD, args=["-o", "hashpower=13"]) as srv, srv.conn() as c:
        _load(c, 12000, b"x" * 240 + b":", b"")    # long keys: a 3 MB dump
        for _ in range(5):
            gone = Conn(srv.port)
            gone.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            gone.send(b"lru_crawler metadump all\r\n")
            gone.read_exact(100)
            gone.close()
        _load(c, 5000, b"y:", b"")
        wait_for(lambda: int(srv.stats()["hash_power_level"]) > 13, 30, 0.05,
                 "the table to double")
        assert c.get(b"y:1") == b""
