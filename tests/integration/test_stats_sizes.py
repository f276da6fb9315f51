"""`stats sizes`, `stats sizes_enable|sizes_disable` and -o track_sizes, against
memcached 1.6.18.

Items of several sizes (with and without client flags, appended to, deleted)
go to both servers; the histograms (32-byte steps of memcached's item size,
counting only items stored after the histogram was switched on) must be
memcached's line for line, and so must the status lines (sizes_enable and
sizes_disable answer without END) and -C's refusal.  Passes with
CELLARD=/usr/bin/memcached too.
"""

from util import CELLARD, MEMCACHED, Server

# z and y are exactly 128 bytes to memcached (with y's flags): one byte off
# and they would move to the 160 step.
ITEMS = [(b"a", 10, 0), (b"bb", 100, 5), (b"ccc", 1000, 0), (b"dd", 30, 0),
         (b"e" * 200, 3000, 1), (b"big", 700000, 0), (b"z", 68, 0), (b"y", 64, 7)]


def _session(binary, args):
    out = []
    with Server(binary, args=args) as srv, srv.conn() as c:
        c.expect(b"set pre 0 0 5\r\nhello\r\n", b"STORED\r\n")
        out.append(c.call(b"stats sizes\r\n", b"END\r\n"))
        c.send(b"stats sizes_enable\r\n")
        first = c.readline()
        out.append(first if first.endswith(b"enabled\r\n") else first + c.readline())
        for key, n, flags in ITEMS:
            c.expect(b"set %s %d 0 %d\r\n%s\r\n" % (key, flags, n, b"x" * n), b"STORED\r\n")
        c.expect(b"set a 0 0 12\r\nxxxxxxxxxxxx\r\n", b"STORED\r\n")   # replaced: same step
        out.append(c.call(b"stats sizes\r\n", b"END\r\n"))
        c.expect(b"delete dd\r\n", b"DELETED\r\n")
        c.expect(b"delete pre\r\n", b"DELETED\r\n")     # stored before: never counted
        c.expect(b"append bb 0 0 40\r\n" + b"y" * 40 + b"\r\n", b"STORED\r\n")
        out.append(c.call(b"stats sizes extra\r\n", b"END\r\n"))
        out.append(c.call(b"stats sizes_disable\r\n"))
        out.append(c.call(b"stats sizes\r\n", b"END\r\n"))
        out.append(c.call(b"stats sizes_x\r\n"))
    return out


def test_stats_sizes_match_memcached():
    for args in ([], ["-C"], ["-o", "track_sizes"]):
        want, got = _session(MEMCACHED, args), _session(CELLARD, args)
        assert got == want, (args, got, want)
    # Not vacuous: memcached's own histogram, without and with track_sizes.
    assert _session(MEMCACHED, [])[2] == (b"STAT 96 2\r\nSTAT 128 2\r\nSTAT 192 1\r\n"
                                          b"STAT 1088 1\r\nSTAT 3264 1\r\nSTAT 700064 1\r\n"
                                          b"END\r\n")
    assert _session(MEMCACHED, ["-o", "track_sizes"])[0] == b"STAT 96 1\r\nEND\r\n"
