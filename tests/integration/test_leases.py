"""Leases and stale values over real sockets (the paper's section 3.2 in
memcached 1.6's meta form), and the delete hold-off of section 4.3.

  * 50 clients miss on one key at once with `mg <key> N30`: exactly one is
    told W (it won the right to fill the key), the other 49 Z;
  * an invalidation (`md <key> I`) while the winner computes makes the
    winner's CAS-guarded fill (`ms <key> ... C<cas>`) fail with EX;
  * readers of an invalidated key get the stale value marked X; exactly one
    of them gets W, the rest Z;
  * a winner that never fills: the placeholder's TTL (N1) runs out and the
    next miss elects a new winner (at most one token per key per window);
  * `-o delete_hold` (a cellar extension): `delete <key> <seconds>` refuses
    `add` for that long; without the option the line gets memcached
    1.6.18's usage error.

Clients are threads of this process, one connection each, released
together by a barrier.  Waits poll with deadlines.  Everything but the
delete hold-off passes against memcached 1.6.18 itself.
"""

import subprocess
import threading
import time

from util import CELLARD, MEMCACHED, Conn, Server, wait_for

N_CLIENTS = 50


def meta_reply(c, timeout=10.0):
    """Read one meta reply: (tokens of its line, value bytes or None)."""
    line = c.readline(timeout)
    toks = line[:-2].split(b" ")
    if toks[0] == b"VA":
        data = c.read_exact(int(toks[1]) + 2, timeout)
        assert data.endswith(b"\r\n"), data
        return toks, data[:-2]
    return toks, None


def flag(toks, c):
    """The value of return flag c (bytes after the letter), or None."""
    for t in toks[1:]:
        if t[:1] == c:
            return t[1:]
    return None


def race(port, line, n=N_CLIENTS):
    """n clients send `line` at the same moment; returns their replies."""
    barrier = threading.Barrier(n)
    replies = [None] * n
    errors = []
    conns = [Conn(port) for _ in range(n)]

    def client(i):
        try:
            barrier.wait(timeout=20)
            conns[i].send(line)
            replies[i] = meta_reply(conns[i])
        except BaseException as e:          # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for c in conns:
        c.close()
    assert not errors, errors[:3]
    assert all(r is not None for r in replies), "a client got no reply"
    return replies


def winners(replies):
    w = [r for r in replies if b"W" in r[0][1:]]
    z = [r for r in replies if b"Z" in r[0][1:]]
    return w, z


def test_one_winner_among_concurrent_misses():
    with Server() as srv:
        for rnd in range(5):
            key = b"herd%d" % rnd
            replies = race(srv.port, b"mg " + key + b" N30 c v t\r\n")
            w, z = winners(replies)
            assert len(w) == 1, "round %d: %d winners: %r" % (rnd, len(w), [r[0] for r in w])
            assert len(z) == N_CLIENTS - 1, [r[0] for r in replies]
            # Everybody sees the same empty placeholder with the same CAS.
            assert {flag(r[0], b"c") for r in replies} == {flag(w[0][0], b"c")}
            assert all(r[1] == b"" for r in replies)
            assert all(b"W" not in r[0][1:] or b"Z" not in r[0][1:] for r in replies)


def test_invalidation_during_fill_fails_the_winner():
    with Server() as srv, srv.conn() as winner, srv.conn() as other:
        winner.send(b"mg lk N30 c v\r\n")
        toks, val = meta_reply(winner)
        assert toks[-1] == b"W" and val == b"", toks
        cas = flag(toks, b"c")
        # While the winner "queries the database", the data changes.
        other.expect(b"md lk I\r\n", b"HD\r\n")
        winner.expect(b"ms lk 5 C" + cas + b" T60\r\nstale\r\n", b"EX\r\n")
        # The next reader wins the new lease; its fill goes through.
        other.send(b"mg lk c v\r\n")
        toks, val = meta_reply(other)
        assert b"X" in toks and toks[-1] == b"W", toks
        other.expect(b"ms lk 5 C" + flag(toks, b"c") + b" T60\r\nfresh\r\n", b"HD\r\n")
        other.send(b"mg lk v\r\n")
        assert meta_reply(other) == ([b"VA", b"5"], b"fresh")


def test_readers_of_an_invalidated_key_get_the_stale_value():
    with Server() as srv, srv.conn() as c:
        c.expect(b"ms hot 5 T0\r\nvalue\r\n", b"HD\r\n")
        c.expect(b"md hot I T30\r\n", b"HD\r\n")
        replies = race(srv.port, b"mg hot c v t\r\n")
        assert all(r[1] == b"value" for r in replies), {r[1] for r in replies}
        assert all(b"X" in r[0] for r in replies), [r[0] for r in replies]
        w, z = winners(replies)
        assert len(w) == 1 and len(z) == N_CLIENTS - 1, [r[0] for r in replies]
        # The winner recaches with the CAS it read: the stale mark is gone.
        c.expect(b"ms hot 3 C" + flag(w[0][0], b"c") + b" T0\r\nnew\r\n", b"HD\r\n")
        c.send(b"mg hot v\r\n")
        assert meta_reply(c) == ([b"VA", b"3"], b"new")
        # A late writer with an older CAS is refused ("no stale sets")...
        c.expect(b"ms hot 3 C1\r\nold\r\n", b"EX\r\n")


def test_unfilled_lease_expires_and_a_new_winner_is_chosen():
    with Server() as srv, srv.conn() as a, srv.conn() as b:
        a.send(b"mg slow N1 c\r\n")
        toks, _ = meta_reply(a)
        assert toks[-1] == b"W", toks
        first = flag(toks, b"c")
        b.send(b"mg slow N1 c\r\n")
        toks, _ = meta_reply(b)
        assert toks[-1] == b"Z", toks

        def won():
            b.send(b"mg slow N1 c\r\n")
            t, _ = meta_reply(b)
            return t if t[-1] == b"W" else None
        toks = wait_for(won, 6.0, interval=0.05, what="the 1 s placeholder to expire")
        assert flag(toks, b"c") != first
        # ... and only one: the next reader is told Z again.
        a.send(b"mg slow N1 c\r\n")
        assert meta_reply(a)[0][-1] == b"Z"


USAGE = b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"


def test_delete_with_time_is_refused_without_delete_hold():
    for binary in (CELLARD, MEMCACHED):
        with Server(binary) as srv, srv.conn() as c:
            c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"delete k 5\r\n", USAGE)
            c.expect(b"delete k 5 noreply\r\nget k\r\n", b"VALUE k 0 1\r\nx\r\nEND\r\n")
            c.expect(b"add k 0 0 1\r\ny\r\n", b"NOT_STORED\r\n")
            c.expect(b"delete k 0\r\n", b"DELETED\r\n")
            c.expect(b"add k 0 0 1\r\ny\r\n", b"STORED\r\n")


def has_delete_hold():
    out = subprocess.run([CELLARD, "-h"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=10).stdout
    return b"delete_hold" in out


def test_delete_hold_refuses_add():
    if not has_delete_hold():
        print("skipped: %s has no -o delete_hold (a cellar extension)" % CELLARD)
        return
    with Server(args=["-o", "delete_hold"]) as srv, srv.conn() as c:
        assert c.stats("settings")["delete_hold"] == "yes"
        c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
        c.expect(b"delete k 2\r\n", b"DELETED\r\n")
        c.expect(b"get k\r\n", b"END\r\n")
        c.expect(b"add k 0 0 1\r\ny\r\n", b"NOT_STORED\r\n")
        c.expect(b"mg k N30\r\n", b"EN\r\n")                   # nor by vivify
        c.expect(b"delete k 2\r\n", b"NOT_FOUND\r\n")           # a hold is no item
        t0 = time.monotonic()
        # noreply, and a hold on a key that did not exist
        c.expect(b"delete k2 100 noreply\r\nadd k2 0 0 1\r\nz\r\n", b"NOT_STORED\r\n")
        # a set ends the hold
        c.expect(b"set k2 0 0 1\r\nz\r\n", b"STORED\r\n")
        c.expect(b"get k2\r\n", b"VALUE k2 0 1\r\nz\r\nEND\r\n")
        # plain deletes and malformed lines answer as before
        c.expect(b"delete k2\r\n", b"DELETED\r\n")
        c.expect(b"add k2 0 0 1\r\nz\r\n", b"STORED\r\n")
        c.expect(b"delete k2 x\r\n", USAGE)
        c.expect(b"delete k2 0 0\r\n", USAGE)

        def added():
            c.send(b"add k 0 0 1\r\ny\r\n")
            return c.readline() == b"STORED\r\n"
        wait_for(added, 6.0, interval=0.05, what="the 2 s hold to end")
        assert time.monotonic() - t0 > 0.5, "the hold ended at once"
        c.expect(b"get k\r\n", b"VALUE k 0 1\r\ny\r\nEND\r\n")
