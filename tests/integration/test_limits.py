"""Limits: memory (-m, -M), connections (-c), long lines, garbage, quit.

Figures observed on memcached 1.6.18 (64-bit, default -t 4), which cellard
must match:
  * -m 8, 40 MB of 4000-byte values written: every set STORED, ~8700
    evictions, ~1840 items left, VmRSS ~13.5 MB (4.7 MB at start).
  * -m 8 -M: ~1840 sets of 4000 bytes succeed, then every further set gets
    `SERVER_ERROR out of memory storing object`; evictions stay 0.
  * -c N accepts exactly N - 24 client connections (N - reserved_fds - 4,
    reserved_fds = 5 per worker thread = 20); the next one receives
    `ERROR Too many open connections\\r\\n` and is closed.  -c 50 -> 26.
  * A line of more than 2048 bytes without a newline closes the connection
    unless it starts with "get " or "gets "; 2048 bytes does not.
"""

import random
import resource
import time

from util import CELLARD, CELLARD_ARGS, MEMCACHED, Conn, Server, sanitized, wait_for

MB = 1 << 20


def write_batches(conn, keys_values, batch=50):
    """Pipelined sets in bounded batches; returns the replies in order."""
    replies = []
    for i in range(0, len(keys_values), batch):
        chunk = keys_values[i:i + batch]
        conn.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in chunk))
        for _ in chunk:
            replies.append(conn.readline(timeout=30))
    return replies


def test_eviction_small_memory():
    limit_mb = 8
    overhead_mb = 24     # memcached 1.6.18 measures ~5.5 MB over -m 8
    value_size = 4000
    total = 40 * MB
    n = total // value_size
    with Server(args=["-m", limit_mb]) as srv:
        start_rss = srv.rss_kb()
        max_rss = start_rss
        replies = []
        with srv.conn() as c:
            t0 = time.monotonic()
            step = 500
            for base in range(0, n, step):
                kv = [(b"key:%08d" % i, (b"%08d" % i) * (value_size // 8))
                      for i in range(base, min(n, base + step))]
                replies += write_batches(c, kv)
                max_rss = max(max_rss, srv.rss_kb())
                assert time.monotonic() - t0 < 120, "writing 40 MB took over 120 s"
            bad = [(i, r) for i, r in enumerate(replies) if r != b"STORED\r\n"]
            assert not bad, "%d of %d sets failed, first: %r" % (len(bad), n, bad[:3])
            st = c.stats()
            evictions = int(st["evictions"])
            assert evictions > 0, "no evictions after writing %d MB into -m %d" % (total // MB, limit_mb)
            assert int(st["curr_items"]) * value_size <= limit_mb * MB, st["curr_items"]
            early = [i for i in range(100) if c.get(b"key:%08d" % i) is not None]
            if "evict=lirs" in " ".join(CELLARD_ARGS):
                # LIRS resists scans: the first keys became its LIR set, and
                # keys seen once since then only pass through its 1% HIR queue.
                assert len(early) == 100, "LIRS lost early keys: %d of 100 left" % len(early)
            else:
                assert not early, "early keys still present: %s" % early[:10]
            # The newest keys survive under every eviction policy (W-TinyLFU
            # keeps only about 1% of the items, its window, for new keys that
            # have not yet shown frequency; LRU keeps far more).
            for i in range(n - 10, n):
                v = c.get(b"key:%08d" % i)
                assert v == (b"%08d" % i) * (value_size // 8), "recent key %d missing or wrong" % i
            end_rss = srv.rss_kb()
            max_rss = max(max_rss, end_rss)
        print("-m %d: %d sets of %d B, evictions %s, curr_items %s, RSS start %d KB, max %d KB, end %d KB"
              % (limit_mb, n, value_size, st["evictions"], st["curr_items"], start_rss, max_rss, end_rss))
        assert max_rss <= (limit_mb + overhead_mb) * 1024, \
            "RSS %d KB exceeds -m %d + %d MB" % (max_rss, limit_mb, overhead_mb)


def test_out_of_memory_with_M():
    limit_mb = 8
    value = b"v" * 4000
    with Server(args=["-m", limit_mb, "-M"]) as srv:
        with srv.conn() as c:
            stored = 0
            first_fail = None
            for i in range(0, 4 * limit_mb * MB // len(value)):
                c.send(b"set key:%08d 0 0 %d\r\n%s\r\n" % (i, len(value), value))
                r = c.readline()
                if r == b"STORED\r\n":
                    assert first_fail is None, "set %d stored after an OOM failure" % i
                    stored += 1
                    continue
                assert r == b"SERVER_ERROR out of memory storing object\r\n", r
                if first_fail is None:
                    first_fail = i
                if i >= first_fail + 20:
                    break
            assert first_fail is not None, "never ran out of memory with -M"
            print("-m %d -M: %d sets of %d B stored before OOM" % (limit_mb, stored, len(value)))
            assert stored * len(value) >= limit_mb * MB // 2, "only %d stored" % stored
            assert stored * len(value) <= limit_mb * MB, "%d stored" % stored
            st = c.stats()
            assert st["evictions"] == "0", st["evictions"]
            for i in (0, 1, stored - 1):
                assert c.get(b"key:%08d" % i) == value, "key %d lost under -M" % i
            # Deleting frees room for an item of the same size.
            c.expect(b"delete key:00000000\r\n", b"DELETED\r\n")
            c.expect(b"set again 0 0 %d\r\n%s\r\n" % (len(value), value), b"STORED\r\n")
            assert c.get(b"again") == value


def test_cache_memlimit_raises_the_limit():
    """`cache_memlimit 16` on a -m 8 -M server: the stats show 16 MB and sets
    that failed for memory succeed again, up to the new limit (memcached
    1.6.18 does the same; checked with CELLARD=/usr/bin/memcached)."""
    value = b"v" * 4000

    def fill(c, prefix):
        n = 0
        while n < 8000:
            c.send(b"set %s:%06d 0 0 %d\r\n%s\r\n" % (prefix, n, len(value), value))
            if c.readline() != b"STORED\r\n":
                return n
            n += 1
        raise AssertionError("never ran out of memory")

    with Server(args=["-m", 8, "-M"]) as srv, srv.conn() as c:
        before = fill(c, b"a")
        c.expect(b"cache_memlimit 16\r\n", b"OK\r\n")
        st, settings = c.stats(), c.stats("settings")
        assert st["limit_maxbytes"] == settings["maxbytes"] == str(16 * MB), (st, settings)
        more = fill(c, b"b")
        assert before * 0.8 <= more <= before * 1.2, (before, more)
        assert int(c.stats("slabs")["total_malloced"]) <= 16 * MB + MB
        c.expect(b"cache_memlimit 7\r\n",
                 b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n")
        c.expect(b"cache_memlimit 1000000001\r\n",
                 b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n")
        c.expect(b"cache_memlimit 9 noreply\r\nversion\r\n", b"VERSION ")
        assert c.stats()["limit_maxbytes"] == str(9 * MB)


def _idle_kick(binary):
    """-o idle_timeout=1: a silent connection and one with half a request are
    closed within seconds; one that keeps sending commands, or that is
    mid-value, is not.  Returns what the stats say."""
    with Server(binary, args=["-o", "idle_timeout=1"]) as srv, srv.conn() as busy, \
            srv.conn() as silent, srv.conn() as half, srv.conn() as midvalue:
        for k in (busy, silent, half, midvalue):
            k.expect(b"version\r\n", b"VERSION ")
            k.readline()
        half.send(b"get a")
        midvalue.send(b"set v 0 0 10\r\nabc")
        deadline = time.monotonic() + 10
        closed = set()
        while len(closed) < 2 and time.monotonic() < deadline:
            busy.expect(b"version\r\n", b"VERSION ")   # keeps it busy, paces the loop
            busy.readline()
            for name, k in (("silent", silent), ("half", half), ("midvalue", midvalue)):
                k.sock.settimeout(0.1)
                try:
                    if k.sock.recv(100) == b"":
                        closed.add(name)
                except OSError:
                    pass
        assert closed == {"silent", "half"}, closed
        st = busy.stats()
        midvalue.expect(b"defghij\r\n", b"STORED\r\n")
        return st["idle_kicks"], list(st).index("idle_kicks") - list(st).index("auth_errors")


def test_idle_timeout_like_memcached():
    got, want = _idle_kick(CELLARD), _idle_kick(MEMCACHED)
    assert got == want == ("2", 1), (got, want)
    with Server() as srv:
        assert "idle_kicks" not in srv.stats()          # only with the option


def raise_nofile(n):
    """Raise this process's RLIMIT_NOFILE soft limit to at least n (and the
    hard limit too when needed, which works as root)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        if hard != resource.RLIM_INFINITY and hard < n:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            except (ValueError, OSError):
                pass
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < n:
            resource.setrlimit(resource.RLIMIT_NOFILE, (n if hard == resource.RLIM_INFINITY else min(n, hard), hard))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft >= n, "cannot raise RLIMIT_NOFILE to %d (soft %d hard %d)" % (n, soft, hard)


def test_thousand_connections():
    count = 1000
    raise_nofile(2 * count + 200)
    with Server(args=["-c", 4096]) as srv:
        socks = []
        # What a worker keeps however many connections it has (its pools of
        # read buffers and reply scratch; under io_uring its ring and the
        # 128 receive buffers it hands the kernel, used in turn) is warmed
        # first: 600 connections (150 a worker), one request each, closed.
        warm = [Conn(srv.port) for _ in range(600)]
        for c in warm:
            c.send(b"set warm 0 0 1\r\nx\r\nget warm\r\n")
        for c in warm:
            assert c.read_to(b"END\r\n") == b"STORED\r\nVALUE warm 0 1\r\nx\r\nEND\r\n"
            c.close()
        # The keys too, so that the storage's own growth (hash table pages,
        # a segment's) is not counted as the connections' memory: below
        # they are stored again with the same values.
        with Conn(srv.port) as c:
            c.send(b"".join(b"set conn%d 0 0 %d noreply\r\n%d\r\n" % (i, len(b"%d" % i), i)
                            for i in range(count)) + b"get conn0\r\n")
            assert c.read_to(b"END\r\n") == b"VALUE conn0 0 1\r\n0\r\nEND\r\n"

        def open_and_serve():
            """count more connections, all open at once, every one sending
            before any reads; returns how much the RSS grew meanwhile."""
            before = srv.rss_kb()
            new = [Conn(srv.port, timeout=20) for _ in range(count)]
            socks.extend(new)
            for i, c in enumerate(new):
                c.send(b"set conn%d 0 0 %d\r\n%d\r\nget conn%d\r\n" % (i, len(b"%d" % i), i, i))
            for i, c in enumerate(new):
                want = b"STORED\r\nVALUE conn%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(b"%d" % i), i)
                got = c.read_to(b"END\r\n", timeout=20)
                assert got == want, "connection %d: %r" % (i, got)
            return srv.rss_kb() - before

        try:
            # Between requests a connection holds no read or reply buffer
            # (memcached 1.6 lends both from its worker too).  Measured
            # twice, 1000 connections each time: the first reuses the
            # structures of the closed warm-up connections, the second
            # makes all of its own (memcached grows ~0.25 and ~0.6 KB a
            # connection here, cellard ~0.4 and ~0.8 KB; 5.4 KB when reply
            # scratch was kept).  The smaller growth is taken: what each
            # connection holds shows in both, while the allocator's arenas
            # now and then grow by a megabyte or so in one of them (about
            # once in 45 runs, for memcached too: blocks in flight, not the
            # connections).
            grown = [open_and_serve(), open_and_serve()]
            print("%d connections twice: RSS grew %s KB" % (count, grown))
            limit = (3 if sanitized(srv.binary) else 1) * count     # ASan: redzones
            assert min(grown) <= limit, "RSS grew %s KB for %d idle connections" % (grown, count)
            st = socks[0].stats()
            assert int(st["curr_connections"]) >= 2 * count, st["curr_connections"]
            assert int(st["curr_items"]) == count + 1     # and "warm"
            # And each connection still works for another round.
            for i, c in enumerate(socks):
                c.send(b"incr conn%d 1\r\n" % (i % count))
            for i, c in enumerate(socks):
                assert c.readline(timeout=20) == b"%d\r\n" % (i % count + 1 + i // count), i
        finally:
            for c in socks:
                c.close()


def test_connection_limit():
    maxconns = 50
    allowed = maxconns - 24   # observed on memcached 1.6.18 with -t 4
    with Server(args=["-c", maxconns]) as srv:
        first = Conn(srv.port)
        conns = [first]
        try:
            # The server's own start-up probe connection must be gone first.
            wait_for(lambda: first.stats()["curr_connections"] == "1", 5, 0.01,
                     "curr_connections to settle at 1")
            for i in range(1, allowed):
                c = Conn(srv.port)
                conns.append(c)
                c.expect(b"set c%d 0 0 1\r\nx\r\n" % i, b"STORED\r\n")
            # Over the limit: told so, then closed (without sending anything).
            for extra in range(3):
                c = Conn(srv.port)
                assert c.wait_closed(5), "connection over the limit was not closed"
                assert c.buf == b"ERROR Too many open connections\r\n", c.buf
                c.close()
            # Existing connections keep working.
            for i, c in enumerate(conns):
                c.expect(b"get c1\r\n", b"VALUE c1 0 1\r\nx\r\nEND\r\n")
            st = first.stats()
            assert st["max_connections"] == str(maxconns), st["max_connections"]
            assert int(st["rejected_connections"]) == 3, st["rejected_connections"]
            # Closing some makes room again.
            for c in conns[-5:]:
                c.close()
            del conns[-5:]

            def another_fits():
                c = Conn(srv.port)
                try:
                    c.send(b"get c1\r\n")
                    line = c.read_to(b"\r\n", timeout=5)
                except (AssertionError, OSError):
                    line = b""
                if line == b"VALUE c1 0 1\r\n":
                    assert c.read_to(b"END\r\n") == b"x\r\nEND\r\n"
                    conns.append(c)
                    return True
                c.close()
                return False
            wait_for(another_fits, 5, 0.05, "a new connection after closing some")
        finally:
            for c in conns:
                c.close()


def test_garbage_and_partial_requests():
    rng = random.Random(7)
    with Server() as srv:
        good = srv.conn()
        good.expect(b"set g 0 0 2\r\nok\r\n", b"STORED\r\n")
        # A connection sending half a storage command, and one sending half a line.
        half_set = srv.conn()
        half_set.send(b"set half 0 0 10\r\n01234")
        half_line = srv.conn()
        half_line.send(b"get g")
        # ASCII garbage: 256 byte values, four newlines in 1024 bytes.
        ascii_garbage = srv.conn()
        ascii_garbage.send(bytes(range(256)) * 4)
        assert ascii_garbage.read_exact(4 * len(b"ERROR\r\n")) == b"ERROR\r\n" * 4
        # Random garbage, some starting with the binary magic byte.
        others = []
        for i in range(20):
            c = srv.conn()
            blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
            if i % 4 == 0:
                blob = b"\x80" + blob
            try:
                c.send(blob)
            except OSError:
                pass
            others.append(c)
        # Meanwhile the good connection is unaffected.
        for i in range(50):
            good.expect(b"get g\r\n", b"VALUE g 0 2\r\nok\r\nEND\r\n")
        # The halves complete correctly, also when the rest comes byte by byte.
        for b in b"56789\r\nget half\r\n":
            half_set.send(bytes([b]))
        assert half_set.read_to(b"END\r\n") == b"STORED\r\nVALUE half 0 10\r\n0123456789\r\nEND\r\n"
        half_line.send(b" half\r\n")
        assert half_line.read_to(b"END\r\n") == \
            b"VALUE g 0 2\r\nok\r\nVALUE half 0 10\r\n0123456789\r\nEND\r\n"
        # A command split at every byte.
        msg = b"set split 5 0 7\r\na\r\nb\r\nc\r\ngets split\r\ndelete split\r\n"
        for b in msg:
            half_line.send(bytes([b]))
        half_line.read_to(b"STORED\r\n")
        items = half_line.read_get_reply()
        assert [(k, f, v) for k, f, v, _ in items] == [(b"split", 5, b"a\r\nb\r\nc")]
        assert half_line.readline() == b"DELETED\r\n"
        ascii_garbage.send(b"\r\nget g\r\n")
        assert ascii_garbage.read_to(b"END\r\n") == b"ERROR\r\nVALUE g 0 2\r\nok\r\nEND\r\n"
        for c in others + [good, half_set, half_line, ascii_garbage]:
            c.close()
        assert srv.alive()
        with srv.conn() as c:
            c.expect(b"get g\r\n", b"VALUE g 0 2\r\nok\r\nEND\r\n")


def test_long_lines():
    with Server() as srv:
        bystander = srv.conn()
        bystander.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
        for line in (b"x" * 2049, b"set " + b"k" * 3000, b"gat 0 " + b"k " * 1500,
                     b"get" + b"k" * 3000):
            with srv.conn() as c:
                c.send(line)
                assert c.wait_closed(5), "no close after %d bytes without newline: %r" % (len(line), line[:10])
                assert c.buf == b"", c.buf
        with srv.conn() as c:
            # 2048 bytes without a newline are still one (unknown) command.
            c.send(b"x" * 2048)
            c.send(b"\r\n")
            assert c.readline() == b"ERROR\r\n"
            # get/gets lines may be longer than 2048 bytes, even sent in pieces.
            keys = b" ".join(b"key%04d" % i for i in range(800)) + b" k"
            for cmd in (b"get ", b"gets "):
                line = cmd + keys + b"\r\n"
                for i in range(0, len(line), 1000):
                    c.send(line[i:i + 1000])
                items = c.read_get_reply()
                assert [(k, v) for k, _, v, _ in items] == [(b"k", b"v")], items
        bystander.expect(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
        bystander.close()


def test_quit_closes():
    with Server() as srv:
        with srv.conn() as c:
            c.send(b"quit\r\n")
            assert c.wait_closed(5) and c.buf == b""
        with srv.conn() as c:
            c.send(b"set q 0 0 1\r\n1\r\nquit\r\nget q\r\n")
            assert c.wait_closed(5)
            assert c.buf == b"STORED\r\n", c.buf
        with srv.conn() as c:
            c.expect(b"get q\r\n", b"VALUE q 0 1\r\n1\r\nEND\r\n")
