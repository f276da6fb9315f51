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

import pytest

import util
from util import HOST, Server

KEYS = 300
LINES = 4000


def _key(i, who=0):
    return b"rk%d%06d" % (who, i)


def _stream(rng, who=0, meta=False):
    """The requests, and the replies the model expects, as bytes (the keys
    of connection `who` are its own, all of one length).  With meta, half
    the sets are ms and half the gets runs of mg (the read-ahead reads
    those lines too, and steps over an ms's value by its length)."""
    value = {}
    for i in range(KEYS):
        value[_key(i, who)] = b"first-%d" % i
    req, want = [], []
    for i in range(KEYS):
        k = _key(i, who)
        req.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(value[k]), value[k]))
        want.append(b"STORED\r\n")
    for n in range(LINES):
        r = rng.random()
        if r < 0.2:
            k = _key(rng.randrange(KEYS), who)
            v = b"v%d-%s" % (n, b"x" * rng.randrange(0, 40))
            value[k] = v
            if meta and rng.random() < 0.5:     # a value that reads as a line: "mg ..."
                v = value[k] = b"mg %s v" % _key(0, who) if rng.random() < 0.3 else v
                req.append(b"ms %s %d T0\r\n%s\r\n" % (k, len(v), v))
                want.append(b"HD\r\n")
                continue
            req.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
            want.append(b"STORED\r\n")
            continue
        # keys beyond KEYS were never set: same length, a miss
        keys = [_key(rng.randrange(KEYS + KEYS // 3), who) for _ in range(rng.randrange(1, 9))]
        if meta and rng.random() < 0.5:
            for k in keys:
                req.append(b"mg %s v\r\n" % k)
                want.append(b"VA %d\r\n%s\r\n" % (len(value[k]), value[k]) if k in value
                            else b"EN\r\n")
            continue
        req.append(b"get " + b" ".join(keys) + b"\r\n")
        out = b""
        for k in keys:
            if k in value:
                out += b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(value[k]), value[k])
        want.append(out + b"END\r\n")
    return b"".join(req), b"".join(want)


def _run_stream(port, seed, who, errors, meta=False):
    """Sends connection `who`'s stream cut at random bytes while a thread
    reads the replies; appends what went wrong to errors."""
    rng = random.Random(seed)
    data, want = _stream(rng, who, meta)
    s = socket.create_connection((HOST, port), timeout=30)
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
    if t.is_alive():
        errors.append("connection %d: reader still running" % who)
    elif failed:
        errors.append("connection %d: %r" % (who, failed))
    elif bytes(got) != want:
        i = next((j for j in range(min(len(got), len(want))) if got[j] != want[j]),
                 min(len(got), len(want)))
        errors.append("connection %d: replies differ at byte %d of %d (got %d): want %r, got %r"
                      % (who, i, len(want), len(got), want[max(0, i - 80):i + 80],
                         bytes(got[max(0, i - 80):i + 80])))


def test_pipelined_requests_cut_anywhere():
    with Server() as srv:
        errors = []
        _run_stream(srv.port, 7, 0, errors)
        assert not errors, errors[0]


@pytest.mark.parametrize("binary", ["cellard", "memcached"])
def test_pipelined_meta_and_text_cut_anywhere(binary):
    """Text and meta lines mixed (ms values that read as mg lines among
    them), cut at random bytes; memcached gives the same replies."""
    with Server(util.CELLARD if binary == "cellard" else util.MEMCACHED) as srv:
        errors = []
        _run_stream(srv.port, 11, 0, errors, meta=True)
        assert not errors, errors[0]


def test_many_connections_at_once():
    """Several connections' streams at once, so that the worker's read-ahead
    state serves one connection after another's."""
    with Server() as srv:
        errors = []
        threads = [threading.Thread(target=_run_stream, args=(srv.port, 100 + w, w, errors))
                   for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert not any(t.is_alive() for t in threads), "a connection is still running"
        assert not errors, errors[0]


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
