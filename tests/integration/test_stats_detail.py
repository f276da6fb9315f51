"""`stats detail on|off|dump` and -D, against memcached 1.6.18.

The same commands (text, binary and meta) go to both servers with detail
on, then off; the PREFIX lines must be memcached's (their order is the
hash table's, so they are compared as a set), and so must the usage
errors and `stats settings`' detail_enabled.  Passes with
CELLARD=/usr/bin/memcached too.
"""

import binproto as bp
from util import CELLARD, MEMCACHED, Server

TEXT = [b"set a:1 0 0 1\r\nx", b"set a:2 0 0 1\r\nx", b"add a:1 0 0 1\r\nx",
        b"set nodelim 0 0 1\r\nx", b"set :lead 0 0 1\r\nx", b"set b:c:d 0 0 1\r\nx",
        b"get a:1 a:3 nodelim b:c:d", b"gets a:2", b"delete a:1", b"delete a:9",
        b"incr a:2 1", b"touch a:2 10", b"gat 10 a:2", b"mg a:2 v", b"ms a:5 1\r\nz",
        b"md a:5", b"append a:2 0 0 1\r\ny", b"cas a:2 0 0 1 999\r\nq",
        b"set big:1 0 0 2000000\r\n" + b"z" * 2000000]
BINARY = [bp.req(bp.SET, b"c:1", bp.set_ext(), b"v"), bp.req(bp.GET, b"c:1"),
          bp.req(bp.GETK, b"c:2"), bp.req(bp.TOUCH, b"c:1", bp.exp_ext(10)),
          bp.req(bp.GAT, b"c:1", bp.exp_ext(10)), bp.req(bp.APPEND, b"c:1", b"", b"w"),
          bp.req(bp.DELETE, b"c:1"), bp.req(bp.DELETE, b"c:1"),
          bp.req(bp.INCR, b"c:3", bp.incr_ext(1, 5, 0))]


def _run(binary, args=()):
    out = []
    with Server(binary, args=args) as srv, srv.conn() as c:
        settings = lambda: c.stats("settings")["detail_enabled"]
        out.append(settings())
        for line in [b"stats detail", b"stats detail bogus", b"stats detail dump",
                     b"stats detail on extra"]:
            out.append(c.call(line + b"\r\n"))
        out.append(settings())
        for line in TEXT:
            c.send(line + b"\r\n")
            c.read_to(b"END\r\n" if line.startswith((b"get", b"gat")) else b"\r\n")
            if line.startswith(b"mg"):
                c.read_to(b"\r\n")                    # the value

        with bp.BinConn(srv.port) as b:
            for r in BINARY:
                b.call(r)
        c.expect(b"stats detail off\r\n", b"OK\r\n")
        out.append(settings())
        c.expect(b"get a:1 a:2\r\n", b"VALUE a:2 0 2\r\nxy\r\nEND\r\n")   # not counted
        dump = c.call(b"stats detail dump\r\n", b"END\r\n")
        lines = dump.split(b"\r\n")
        assert lines[-2:] == [b"END", b""], dump
        out.append(sorted(lines[:-2]))
    return out


def test_stats_detail_matches_memcached():
    want, got = _run(MEMCACHED), _run(CELLARD)
    assert got == want, (got, want)
    assert b"PREFIX a get 4 hit 3 set 5 del 2" in want[-1], want[-1]
    assert want[0] == "no" and want[5] == "yes" and want[6] == "no", want


def test_dash_D_sets_the_delimiter_and_turns_detail_on():
    outs = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary, args=["-D", "/"]) as srv, srv.conn() as c:
            st = c.stats("settings")
            c.expect(b"set x/1 0 0 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"get x/1 q:1\r\n", b"VALUE x/1 0 1\r\nx\r\nEND\r\n")
            outs.append((st["detail_enabled"], st["stat_key_prefix"],
                         c.call(b"stats detail dump\r\n", b"END\r\n")))
    assert outs[1] == outs[0]
    assert outs[0] == ("yes", "/", b"PREFIX x get 1 hit 1 set 1 del 0\r\nEND\r\n"), outs


def test_stats_reset_empties_the_dump():
    """`stats reset` forgets every prefix (text and binary reset); detail
    stays on, so the next get counts from zero."""
    outs = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary) as srv, srv.conn() as c:
            out = []
            c.expect(b"stats detail on\r\n", b"OK\r\n")
            c.expect(b"set foo:1 0 0 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"get foo:1 foo:2\r\n", b"VALUE foo:1 0 1\r\nx\r\nEND\r\n")
            out.append(c.call(b"stats detail dump\r\n", b"END\r\n"))
            c.expect(b"stats reset\r\n", b"RESET\r\n")
            out.append(c.call(b"stats detail dump\r\n", b"END\r\n"))
            c.expect(b"get foo:1\r\n", b"VALUE foo:1 0 1\r\nx\r\nEND\r\n")
            out.append(c.call(b"stats detail dump\r\n", b"END\r\n"))
            with bp.BinConn(srv.port) as b:
                b.call(bp.req(bp.STAT, b"reset"))
            out.append(c.call(b"stats detail dump\r\n", b"END\r\n"))
            outs.append(out)
    assert outs[1] == outs[0], outs
    assert outs[0] == [b"PREFIX foo get 2 hit 1 set 1 del 0\r\nEND\r\n", b"END\r\n",
                       b"PREFIX foo get 1 hit 1 set 0 del 0\r\nEND\r\n", b"END\r\n"], outs
