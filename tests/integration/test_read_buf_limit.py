"""-o read_buf_mem_limit (memcached's limit, in MB, on the memory of read
buffers and response objects), against memcached 1.6.18.

memcached divides the limit among its worker threads in 16 KB objects
(-o read_buf_mem_limit=1 -t 32: two each); a request takes a read buffer
and a response object, each further key of a get another, 13 to an
object.  So a 13-key get fits and a 14-key get answers SERVER_ERROR out of
memory writing get response (response_obj_oom); a pipeline of 500 meta
gets in one write closes the connection; connections each holding part of
a command line take read buffers until there are none (read_buf_oom).
Both of cellard's network back ends are run.  Passes with
CELLARD=/usr/bin/memcached.
"""

import select
import socket

import pytest

from util import CELLARD, MEMCACHED, Server, wait_for

ARGS = ["-o", "read_buf_mem_limit=1", "-t", "32", "-R", "500"]


def _get(n):
    return b"get " + b" ".join(b"k%d" % i for i in range(n)) + b"\r\n"


def _closed(conn):
    """Has the server closed conn (EOF or reset)?  Does not wait."""
    if not select.select([conn.sock], [], [], 0)[0]:
        return False
    try:
        return conn.sock.recv(1, socket.MSG_PEEK) == b""
    except ConnectionError:
        return True


def _run(binary, extra):
    out = []
    with Server(binary, args=ARGS + extra) as srv, srv.conn() as c:
        for n in (13, 14, 1, 13, 15):
            out.append((n, c.call(_get(n))))
        out.append(c.stats()["response_obj_oom"])
        with srv.conn() as p:
            p.send(b"mg foo v\r\n" * 500)
            out.append(("pipeline closed", p.wait_closed()))
        out.append(int(c.stats()["response_obj_oom"]) > 2)
        # Every worker's read buffers end up held by partial lines, so the
        # connections refused one are closed: the servers' sign, polled
        # (a `stats` now could be refused too); then all are let go.
        held = [srv.conn() for _ in range(128)]
        try:
            for h in held:
                h.send(b"set foo 0 0 2")    # a partial line keeps a read buffer
            wait_for(lambda: sum(map(_closed, held)) >= 32, 10, what="refused connections")
        finally:
            for h in held:
                h.close()
        oom = wait_for(lambda: int(c.stats()["read_buf_oom"]), 10, what="read_buf_oom")
        out.append(("read_buf_oom > 1", oom > 1))
        c.expect(b"set k1 0 0 1\r\nx\r\n", b"STORED\r\n")
        out.append(c.call(_get(2), b"END\r\n"))
    return out


@pytest.mark.parametrize("io", [[], ["-o", "io=epoll"]], ids=["io-default", "io-epoll"])
def test_read_buf_mem_limit_matches_memcached(io):
    want = _run(MEMCACHED, [])
    got = _run(CELLARD, io if CELLARD != MEMCACHED else [])
    assert got == want, (got, want)
    oom = b"SERVER_ERROR out of memory writing get response\r\n"
    assert want[:5] == [(13, b"END\r\n"), (14, oom), (1, b"END\r\n"), (13, b"END\r\n"),
                        (15, oom)], want
    assert want[5] == "2" and want[-1] == b"VALUE k1 0 1\r\nx\r\nEND\r\n", want


def test_no_limit_by_default():
    with Server(CELLARD, args=["-t", "32"]) as srv, srv.conn() as c:
        assert c.call(_get(500)) == b"END\r\n"
        st = c.stats()
        assert st["response_obj_oom"] == "0" and st["read_buf_oom"] == "0", st
        assert c.stats("settings")["read_buf_mem_limit"] == "0"



def _noreply(binary, extra):
    """Ten reads of ten `set ... noreply` each on one connection, each read
    run before the next is sent (another connection polls total_items):
    each request takes a response object while it runs and keeps none,
    there being no reply; 100 would be past the limit (2 objects of 13 a
    worker).  Then a get on the same connection."""
    with Server(binary, args=ARGS + extra) as srv, srv.conn() as c, srv.conn() as watch:
        for b in range(10):
            c.send(b"".join(b"set n%d 0 0 1 noreply\r\nx\r\n" % (b * 10 + i) for i in range(10)))
            wait_for(lambda: int(watch.stats()["total_items"]) == 10 * (b + 1), 10,
                     what="batch %d stored" % b)
        got = c.call(_get(13))
        return got, watch.stats()["response_obj_oom"]


@pytest.mark.parametrize("io", [[], ["-o", "io=epoll"]], ids=["io-default", "io-epoll"])
def test_noreply_requests_keep_no_response_objects(io):
    want = _noreply(MEMCACHED, [])
    got = _noreply(CELLARD, io if CELLARD != MEMCACHED else [])
    assert got == want, (got, want)
    assert want == (b"END\r\n", "0"), want
