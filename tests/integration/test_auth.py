"""ASCII authentication (-Y FILE): the same bytes to cellard and to Debian's
memcached 1.6.18, both started with the same file, and the same answers
back; then what memcached 1.6.18 has no answer for yet (an over-long
token), the counters, a reload at SIGHUP, and the options refused."""

import os
import signal
import subprocess
import tempfile

import pytest

import util
from util import CELLARD, MEMCACHED, Server, root_args, wait_for


@pytest.fixture
def authfile():
    fd, path = tempfile.mkstemp(prefix="cellar-auth-")
    with os.fdopen(fd, "w") as f:
        f.write("foo:bar\nbaaaz:quux\r\nempty:\n")
    yield path
    os.unlink(path)


def stats(port, group=""):
    """`stats` over a connection that authenticates first (that token counted too)."""
    with util.Conn(port) as c:
        c.expect(b"set a 0 0 7\r\nfoo bar\r\n", b"STORED\r\n")
        c.send(("stats %s\r\n" % group).encode())
        out = {}
        for line in c.read_to(b"END\r\n").decode().splitlines():
            if line.startswith("STAT "):
                _, k, v = line.split(" ", 2)
                out[k] = v
        return out


STREAMS = [
    b"get foo\r\n",                                     # no command before authentication
    b"set foo 0 0 2\r\nhi\r\n",                          # a value that is one word
    b"set foo 0 0 7\r\nfoo bab\r\n",                     # a wrong password
    b"set foo 0 0 7\r\nfoo bar\r\nset k 0 0 1\r\nv\r\nget k\r\n",   # in, then served
    b"set x 1 2 10\r\nbaaaz quux\r\nmn\r\nmg k v\r\n",   # any key, flags, exptime; meta after
    b"set x 0 0 6\r\nempty \r\n",                       # an empty password, one word only
    b"set x 0 0 7\r\nfoo barXY",                         # not ended by \r\n where it should be
    b"set x 0 0 abc\r\n",                               # no length
    b"set x 0 0\r\n",                                   # too few words
    b"mg k v\r\n",                                      # meta, refused too
    b"\x80\x0c\x00\x00" + b"\x00" * 20,                  # binary bytes: not a line
    b"x" * 3000,                                         # 2048 bytes and no newline: closed
    b"set foo 0 0 7\r\nfoo bar\r\nset foo 0 0 7\r\nfoo bar\r\n",   # a set like a token, after
]


def test_same_answers_as_memcached(authfile):
    with Server(MEMCACHED, ["-Y", authfile], name="oracle") as mc, \
            Server(CELLARD, ["-Y", authfile]) as ours:
        for data in STREAMS:
            want = util.exchange(mc.port, data)
            got = util.exchange(ours.port, data)
            assert got == want, (data[:60], want, got)
        # the counters: a token checked is a command, a wrong one an error too
        st_ours, st_mc = stats(ours.port), stats(mc.port)
        for key in ("auth_cmds", "auth_errors"):
            assert st_ours[key] == st_mc[key], key
        assert st_ours["auth_cmds"] == "5" and st_ours["auth_errors"] == "1"
        assert stats(ours.port, "settings")["auth_enabled_ascii"] == authfile


def test_pipelined_refusals_each_answered(authfile):
    """memcached 1.6.18 answers only the last of several refusals sent in one
    go (each overwrites the one before); cellard answers each line."""
    with Server(CELLARD, ["-Y", authfile]) as ours:
        got, closed = util.exchange(ours.port, b"get a\r\nset x 0 0 6\r\nempty \r\n"
                                          b"set x 0 0 7\r\nfoo barXY\r\nversion\r\n"
                                          b"set x 0 0 7\r\nfoo bar\r\nversion\r\n")
        assert got == (b"CLIENT_ERROR unauthenticated\r\n"
                       b"CLIENT_ERROR bad authentication token format\r\n"
                       b"CLIENT_ERROR bad command line termination\r\n"
                       b"CLIENT_ERROR unauthenticated\r\n"      # the \r\n after XY: a line
                       b"CLIENT_ERROR unauthenticated\r\n"
                       b"STORED\r\nVERSION 1.6.18\r\n"), got
        assert not closed


def test_token_too_long_and_reload(authfile):
    with Server(CELLARD, ["-Y", authfile]) as ours:
        # memcached's newer answer: a token over 16384 bytes is refused, its bytes then lines
        got, closed = util.exchange(ours.port, b"set x 0 0 20000\r\nget k\r\n")
        assert got == b"CLIENT_ERROR auth token too long\r\nCLIENT_ERROR unauthenticated\r\n"
        assert not closed
        with open(authfile, "w") as f:
            f.write("new:pass\n")
        os.kill(ours.pid, signal.SIGHUP)
        wait_for(lambda: util.exchange(ours.port, b"set x 0 0 8\r\nnew pass\r\n")[0]
                 == b"STORED\r\n", 10, what="the file read again")
        assert util.exchange(ours.port, b"set x 0 0 7\r\nfoo bar\r\n")[0] == \
            b"CLIENT_ERROR authentication failure\r\n"
        # a file gone bad at a reload: the table read before stays, the server with it
        with open(authfile, "w") as f:
            f.write("no colon here\n")
        os.kill(ours.pid, signal.SIGHUP)
        wait_for(lambda: "malformed" in ours.stderr_text(), 10, what="the refusal said")
        assert util.exchange(ours.port, b"set x 0 0 8\r\nnew pass\r\n")[0] == b"STORED\r\n"


def test_options_refused_as_memcached_refuses_them(authfile):
    """The same exit code from both for what -Y cannot go with, and for a bad file."""
    bad = authfile + ".bad"
    with open(bad, "w") as f:
        f.write("foo:bar\nnocolon\n")
    try:
        for extra in (["-B", "binary"], ["-U", "11299"], [], ["-Y", bad]):
            args = ["-l", util.HOST, "-p", str(util.free_port()), "-Y",
                    authfile if extra != [] else authfile + ".missing"] + extra + root_args()
            if "-U" not in extra:
                args += ["-U", "0"]
            rcs = []
            for binary in (MEMCACHED, CELLARD):
                p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=10)
                rcs.append((p.returncode, p.stderr.strip().splitlines()[:1]))
            assert rcs[0][0] == rcs[1][0] != 0, (extra, rcs)
    finally:
        os.unlink(bad)


def test_router_clients_authenticate_first(authfile):
    """cellar-router --auth-file: an unauthenticated client gets nothing but
    memcached's refusals, and nothing it sends reaches a backend; once in,
    it is served.  SIGHUP reads the file again."""
    import json
    from router_util import Router, backend
    with backend("be") as be:
        cfg = json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, be.port)]}},
                          "route": "PoolRoute|a"})
        with Router(cfg, args=["--auth-file", authfile]) as r:
            got, closed = util.exchange(r.port, b"set k 0 0 1\r\nv\r\nget k\r\nflush_all\r\n"
                                           b"stats\r\nversion\r\nmg k v\r\n")
            # a set is taken for a token ("v": not two words); the rest refused
            assert got == b"CLIENT_ERROR bad authentication token format\r\n" + \
                b"CLIENT_ERROR unauthenticated\r\n" * 5, got
            got, _ = util.exchange(r.port, b"\x80\x01\x00\x01" + b"\x00" * 20 + b"\r\n")
            assert got == b"CLIENT_ERROR unauthenticated\r\n", got      # binary: a line too
            with util.Conn(be.port) as c:
                c.expect(b"get k\r\n", b"END\r\n")                     # nothing went through
            got, _ = util.exchange(r.port, b"set x 0 0 7\r\nfoo bad\r\n")
            assert got == b"CLIENT_ERROR authentication failure\r\n"
            with util.Conn(r.port) as c:
                c.expect(b"set x 0 0 7\r\nfoo bar\r\n", b"STORED\r\n")
                c.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
                c.expect(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n")
            st = stats(r.port)          # (authenticates too: the third token)
            assert (st["auth_cmds"], st["auth_errors"]) == ("3", "1"), st
            with open(authfile, "w") as f:
                f.write("other:secret\n")
            os.kill(r.pid, signal.SIGHUP)
            wait_for(lambda: util.exchange(r.port, b"set x 0 0 12\r\nother secret\r\n")[0] ==
                     b"STORED\r\n", 10, what="the file read again")


def test_router_presents_a_token_to_its_backends(authfile):
    """A pool's "auth": libcellar sends the token first on each connection
    to a cellard started with -Y; a wrong one leaves every request refused
    by the server."""
    import json
    from router_util import Router
    with Server(CELLARD, ["-Y", authfile]) as be:
        def cfg(password):
            return json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, be.port)],
                                               "auth": {"user": "foo", "password": password}}},
                               "route": "PoolRoute|a"})
        with Router(cfg("bar"), threads=2) as r:
            with util.Conn(r.port) as c:
                for i in range(20):
                    c.expect(b"set r%d 0 0 2\r\nhi\r\n" % i, b"STORED\r\n")
                c.expect(b"get r7\r\n", b"VALUE r7 0 2\r\nhi\r\nEND\r\n")
        assert int(stats(be.port)["auth_cmds"]) >= 2      # a connection per worker, and ours
        with Router(cfg("wrong"), threads=1) as r:
            with util.Conn(r.port) as c:
                c.send(b"get r7\r\n")
                assert c.read_to(b"\r\n") == b"CLIENT_ERROR unauthenticated\r\n"
        # what a pool cannot say is refused when the configuration is read
        bad = json.loads(cfg("bar"))
        bad["pools"]["a"]["protocol"] = "meta"
        p = subprocess.run([os.environ["CELLAR_ROUTER"], "--config", "/dev/stdin", "-p", "0"],
                           input=json.dumps(bad), capture_output=True, text=True, timeout=10)
        assert p.returncode != 0 and "protocol ascii or text" in p.stderr, p.stderr
