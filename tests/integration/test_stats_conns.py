"""`stats conns` against memcached 1.6.18: the listener (with its seconds
since start), the asking connection in conn_parse_cmd, an idle one and one
holding half a request in conn_read, one reading a value in conn_nread.  Fd
numbers, ports and the order of the connections differ between the servers
and are left out.  Passes with CELLARD=/usr/bin/memcached too.
"""

import re

from util import CELLARD, MEMCACHED, Server, wait_for


def _conns(binary):
    with Server(binary, args=["-t", "1"]) as srv, srv.conn() as c, srv.conn() as idle, \
            srv.conn() as half, srv.conn() as value:
        for k in (idle, half, value):
            k.expect(b"version\r\n", b"VERSION ")
        half.send(b"get a")
        value.send(b"set v 0 0 10\r\nabc")
        seen = []

        def settled():
            seen[:] = [c.call(b"stats conns\r\n", b"END\r\n")]
            return seen[0].count(b":addr ") == 5 and b"conn_nread" in seen[0]
        wait_for(settled, 10, what="the value's first bytes read")
        out = seen[0]
    conns = {}
    for fd, field, val in re.findall(rb"STAT (\d+):(\S+) (.*)\r\n", out):
        conns.setdefault(fd, []).append(b"%s %s" % (field, val))
    assert out.endswith(b"END\r\n"), out
    records = [re.sub(rb"127\.0\.0\.1:\d+", b"127.0.0.1:P", b" | ".join(f)) for f in conns.values()]
    return sorted(re.sub(rb"secs_since_last_cmd [01]$", b"secs_since_last_cmd 0-1", r)
                  for r in records)


def test_stats_conns_match_memcached():
    want, got = _conns(MEMCACHED), _conns(CELLARD)
    assert got == want, (got, want)
    states = [r.split(b" | ")[-2] for r in want]
    assert states == [b"state conn_nread", b"state conn_parse_cmd", b"state conn_read",
                      b"state conn_read", b"state conn_listening"], want


def _udp_conns(binary):
    """The UDP sockets' records (memcached: "UDP UDP", the socket's own address, conn_read)."""
    with Server(binary, args=["-t", "2"], udp=True) as srv, srv.conn() as c:
        out = c.call(b"stats conns\r\n", b"END\r\n")
    conns = {}
    for fd, field, val in re.findall(rb"STAT (\d+):(\S+) (.*)\r\n", out):
        conns.setdefault(fd, []).append(b"%s %s" % (field, val))
    records = [b" | ".join(f) for f in conns.values() if f[0] == b"UDP UDP"]
    return sorted(re.sub(rb"secs_since_last_cmd \d+$", b"secs_since_last_cmd N",
                         r.replace(b":%d " % srv.port, b":P ").replace(b":%d |" % srv.port,
                                                                      b":P |"))
                  for r in records)


def test_stats_conns_udp_sockets_match_memcached():
    want, got = _udp_conns(MEMCACHED), _udp_conns(CELLARD)
    assert got == want, (got, want)
    assert want == [b"UDP UDP | addr udp:127.0.0.1:P | state conn_read | "
                    b"secs_since_last_cmd N"] * 2, want
