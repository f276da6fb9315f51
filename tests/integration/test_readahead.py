"""Pipelined text requests cut at arbitrary bytes.

cellard reads ahead: before it runs a batch of pipelined get/gets/set lines
it hashes their keys, prefetches, and keeps the hashes for the lookups
that follow.  The keys are pointers into the connection's read buffer,
which moves whenever a partial line is compacted to its front; a hash kept
across such a move would look a key up under another key's hash.  Here
every key has the same length, so a stale hash would meet a key of the
same length at the same address: a wrong value, a false miss, or a set
that lands in the wrong bucket (and a later get that misses it).

The stream mixes multi-gets (hits and misses), gets and sets, and is sent
in random pieces of 1 to 3000 bytes while a thread reads the replies; the
replies are checked against a model.  Passes against memcached too.
"""

import random
import socket
import threading
import time

from util import HOST, Server

KEYS = 300
LINES = 4000


def _key(i):
    return b"rk%06d" % i


def _stream(rng):
    """The requests, and the replies the model expects, as bytes."""
    value = {}
    for i in range(KEYS):
        value[_key(i)] = b"first-%d" % i
    req, want = [], []
    for i in range(KEYS):
        k = _key(i)
        req.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value[k]), value[k]))
        want.append(b"STORED\r\n")
    for n in range(LINES):
        r = rng.random()
        if r < 0.2:
            k = _key(rng.randrange(KEYS))
            v = b"v%d-%s" % (n, b"x" * rng.randrange(0, 40))
            value[k] = v
            req.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
            want.append(b"STORED\r\n")
            continue
        # keys beyond KEYS were never set: same length, a miss
        keys = [_key(rng.randrange(KEYS + KEYS // 3)) for _ in range(rng.randrange(1, 9))]
        req.append(b"get " + b" ".join(keys) + b"\r\n")
        out = b""
        for k in keys:
            if k in value:
                out += b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(value[k]), value[k])
        want.append(out + b"END\r\n")
    return b"".join(req), b"".join(want)


def test_pipelined_requests_cut_anywhere():
    rng = random.Random(7)
    data, want = _stream(rng)
    with Server() as srv:
        s = socket.create_connection((HOST, srv.port), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        got = bytearray()
        failed = []

        def reader():
            deadline = time.monotonic() + 60
            try:
                while len(got) < len(want) and time.monotonic() < deadline:
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        break
                    got.extend(chunk)
            except OSError as e:
                failed.append(e)

        t = threading.Thread(target=reader)
        t.start()
        at = 0
        while at < len(data):
            n = rng.randrange(1, 3000)
            s.sendall(data[at:at + n])
            at += n
        t.join(70)
        s.close()
        assert not t.is_alive(), "reader still running"
        assert not failed, failed
        if bytes(got) != want:
            i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                     min(len(got), len(want)))
            raise AssertionError("replies differ at byte %d of %d (got %d): want %r, got %r"
                                 % (i, len(want), len(got), want[max(0, i - 80):i + 80],
                                    bytes(got[max(0, i - 80):i + 80])))


def test_nul_ends_the_line_for_the_read_ahead_too():
    """memcached ends a command line at a NUL byte; the read-ahead splits
    the whole line, so its keys past the NUL (or one running through it)
    must not be used."""
    with Server() as srv:
        with srv.conn() as c:
            for k in (b"na", b"na\x00b", b"nb", b"nc", b"nd"):
                if b"\x00" not in k:
                    c.expect(b"set %s 0 0 2\r\nv%s\r\n" % (k, k[-1:]), b"STORED\r\n")
            c.send(b"get na\x00b nb\r\nget nc na nd\r\nget nb nc\x00 nd\r\n")
            assert c.read_get_reply() == [(b"na", 0, b"va", None)]
            assert c.read_get_reply() == [(b"nc", 0, b"vc", None), (b"na", 0, b"va", None),
                                          (b"nd", 0, b"vd", None)]
            assert c.read_get_reply() == [(b"nb", 0, b"vb", None), (b"nc", 0, b"vc", None)]
