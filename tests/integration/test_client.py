"""libcellar against real servers: every operation over each backend
protocol (meta, text, binary), on cellard processes and, separately, on
Debian's memcached; multi-gets over many servers with one of them killed
and brought back; bad keys and bad configurations.

The library is called through its C API (cellar_ffi, ctypes).  What it
stored is read back with pymemcache straight from the server the
library's ring names, so placement and wire are checked by another client.
"""

import os
import signal
import socket
import subprocess
import tempfile

import pytest

import cellar_ffi as cf
import util

KINDS = {"cellard": lambda: util.CELLARD, "memcached": lambda: util.MEMCACHED}
PROTOCOLS = ("meta", "text", "binary")


def servers(kind, n, args=()):
    return [util.Server(KINDS[kind](), args=args, name="%s-%d" % (kind, i)) for i in range(n)]


class Pool:
    """n servers of one kind, started and always stopped."""

    def __init__(self, kind, n, args=()):
        self.servers = servers(kind, n, args)

    def __enter__(self):
        try:
            for s in self.servers:
                s.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self.servers

    def __exit__(self, *exc):
        # SIGTERM to all first, then wait: memcached takes up to 1 s to exit.
        problems = []
        for s in self.servers:
            if s.proc is None:
                continue
            if s.proc.poll() is not None:
                problems.append("%s died before it was stopped (%d)" % (s.name, s.returncode
                                or s.proc.returncode))
            else:
                s.proc.send_signal(signal.SIGTERM)
        for s in self.servers:
            if s.proc is None:
                continue
            try:
                rc = s.proc.wait(10)
                if rc != 0:
                    problems.append("%s: exit status %d after SIGTERM" % (s.name, rc))
            except subprocess.TimeoutExpired:
                s.proc.kill()
                s.proc.wait()
                problems.append("%s did not exit within 10 s of SIGTERM" % s.name)
            s._cleanup_file()
        assert exc[0] is not None or not problems, problems
        return False


def direct(server):
    return server.client()


@pytest.mark.parametrize("io", ("epoll", "uring"))
@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_operation(kind, proto, io):
    """io: the handle's sockets driven by epoll, or by an io_uring of its own."""
    with Pool(kind, 3) as srv, cf.Client(srv, protocol=proto, io=io) as c:
        owner = lambda k: direct(srv[c.server_of(k)])
        # set / get / gets, read back from the owning server by another client
        assert c.set("k1", "hello", flags=7) == cf.OK
        assert owner("k1").get("k1") == b"hello"
        st, v, fl, cas = c.get("k1")
        assert (st, v, fl) == (cf.OK, b"hello", 7)
        st, v, fl, cas = c.gets("k1")
        assert (st, v, fl) == (cf.OK, b"hello", 7) and cas > 0
        assert int(owner("k1").gets("k1")[1]) == cas
        assert c.get("absent")[:2] == (cf.NOT_FOUND, None)
        assert c.gets("absent")[0] == cf.NOT_FOUND
        # add / replace
        assert c.add("k1", "x") == cf.NOT_STORED
        assert c.add("k2", "two", flags=3) == cf.OK
        assert c.get("k2")[:3] == (cf.OK, b"two", 3)
        assert c.replace("absent", "x") == cf.NOT_STORED
        assert c.replace("k2", "TWO") == cf.OK
        assert c.get("k2")[1] == b"TWO"
        # append / prepend keep flags
        assert c.append("k1", " world") == cf.OK
        assert c.prepend("k1", ">> ") == cf.OK
        assert c.get("k1")[:3] == (cf.OK, b">> hello world", 7)
        assert c.append("absent", "x") == cf.NOT_STORED
        assert c.prepend("absent", "x") == cf.NOT_STORED
        assert c.get("absent")[0] == cf.NOT_FOUND
        # cas
        cas = c.gets("k2")[3]
        assert c.cas("k2", "new", cas + 1) == cf.EXISTS
        assert c.cas("k2", "new", cas, flags=9) == cf.OK
        assert c.get("k2")[:3] == (cf.OK, b"new", 9)
        assert c.cas("k2", "newer", cas) == cf.EXISTS
        assert c.cas("absent", "x", 12345) == cf.NOT_FOUND
        # delete
        assert c.delete("k2") == cf.OK
        assert c.delete("k2") == cf.NOT_FOUND
        assert owner("k2").get("k2") is None
        # incr / decr
        assert c.set("n", "10") == cf.OK
        assert c.incr("n", 5) == (cf.OK, 15)
        assert c.decr("n", 3) == (cf.OK, 12)
        assert c.decr("n", 100) == (cf.OK, 0)
        assert c.incr("n", 2**64 - 1)[0] == cf.OK
        assert c.incr("absent", 1)[0] == cf.NOT_FOUND
        assert c.decr("absent", 1)[0] == cf.NOT_FOUND
        assert c.get("absent")[0] == cf.NOT_FOUND          # never created
        assert c.incr("k1", 1)[0] == cf.ECLIENT            # not a number
        # touch / gat / gats: a negative exptime expires at once
        assert c.touch("k1", 100) == cf.OK
        assert c.touch("absent", 100) == cf.NOT_FOUND
        st, v, fl, cas = c.gat("k1", 200)
        assert (st, v) == (cf.OK, b">> hello world")
        st, v, fl, cas = c.gats("k1", 300)
        assert st == cf.OK and cas > 0
        assert c.gat("absent", 10)[0] == cf.NOT_FOUND
        assert c.set("gone", "x", exptime=-1) == cf.OK
        assert c.get("gone")[0] == cf.NOT_FOUND
        assert c.set("later", "x") == cf.OK
        assert c.touch("later", -1) == cf.OK
        assert c.get("later")[0] == cf.NOT_FOUND
        # binary-safe values, an empty one, a large one
        blob = bytes(range(256)) * 4 + b"\r\nEND\r\n"
        assert c.set("blob", blob) == cf.OK
        assert c.get("blob")[1] == blob
        assert c.set("empty", b"") == cf.OK
        assert c.get("empty")[:2] == (cf.OK, b"")
        big = os.urandom(600 * 1024)
        assert c.set("big", big) == cf.OK
        assert c.get("big")[1] == big
        assert owner("big").get("big") == big
        # mget
        keys = ["k1", "absent", "n", "big", "empty"]
        got = c.mget(keys)
        assert [g[0] for g in got] == [cf.OK, cf.NOT_FOUND, cf.OK, cf.OK, cf.OK]
        assert got[3][1] == big
        # version, stats, flush_all
        for i in range(3):
            rc, ver = c.version(i)
            assert rc == cf.OK and ver == owner("k1").version().decode()
            rc, st = c.server_stats(i)
            direct_st = srv[i].stats()
            assert rc == cf.OK and st[b"pid"] == direct_st["pid"].encode()
            assert int(st[b"curr_items"]) == int(direct_st["curr_items"])
            rc, st = c.server_stats(i, "settings")
            assert rc == cf.OK and st[b"tcpport"] == str(srv[i].port).encode()
        # raw meta commands (meta pools only)
        if proto == "meta":
            assert c.meta("ms", "raw", "T0 F7", "hi")[:2] == (cf.OK, "HD")
            assert c.meta("mg", "raw", "v t f") == (cf.OK, "VA", "t-1 f7", b"hi")
            assert c.meta("mg", "absent", "v") == (cf.NOT_FOUND, "EN", "", b"")
            assert c.meta("md", "absent", "") == (cf.NOT_FOUND, "NF", "", b"")
            assert c.meta("ma", "raw", "v")[:2] == (cf.ECLIENT, "")
            assert c.meta("mg", "raw", "v q")[0] == cf.EINVAL
            assert c.meta("md", "raw", "")[:2] == (cf.OK, "HD")
        else:
            assert c.meta("mg", "raw", "v")[0] == cf.ENOTSUP
        assert c.server_stats(0, "reset")[0] == cf.OK
        assert c.server_stats(0, "nonesuch")[0] == cf.EUNKNOWN
        assert c.server_stats(0, "bad\r\ngroup")[0] == cf.EINVAL
        assert c.flush_all() == cf.OK
        assert c.get("k1")[0] == cf.NOT_FOUND
        st = c.stats()
        assert st["timeouts"] == 0 and st["errors"] == 0 and st["tko_events"] == 0
        assert st["connects"] == 3


@pytest.mark.parametrize("proto", PROTOCOLS)
def test_bad_keys_are_refused_before_sending(proto):
    with Pool("cellard", 1) as srv, cf.Client(srv, protocol=proto) as c:
        for key in (b"", b"a" * 251, b"with space", b"ctl\x01", b"nl\n", b"\x7f"):
            assert c.get(key)[0] == cf.EINVAL, key
            assert c.set(key, "v") == cf.EINVAL, key
            assert c.delete(key) == cf.EINVAL, key
        assert c.set(b"a" * 250, "v") == cf.OK
        got = c.mget([b"a" * 250, b"bad key"])
        assert [g[0] for g in got] == [cf.OK, cf.EINVAL]
        assert c.stats()["requests"] == 2


def test_io_option_checked():
    with pytest.raises(cf.ConfigError, match="kqueue"):
        cf.Client("127.0.0.1:1", io="kqueue")


def test_server_list_forms():
    with Pool("memcached", 1) as srv:
        port = srv[0].port
        for text in ("127.0.0.1:%d" % port, "localhost:%d" % port, " 127.0.0.1:%d:3 ," % port):
            with cf.Client(text) as c:
                assert c.set("k", "v") == cf.OK and c.get("k")[1] == b"v"
        bad = {"": "no servers", "127.0.0.1:0": "bad port", "127.0.0.1:70000": "bad port",
               "127.0.0.1:11211:x": "bad weight", "::1": "no host",
               "::1:11211": "brackets", "fe80::1:2:3": "brackets",
               "[::1": "unterminated", "no.such.host.invalid:1": "cannot resolve"}
        for text, why in bad.items():
            with pytest.raises(cf.ConfigError, match=why):
                cf.Client(text)
        with pytest.raises(cf.ConfigError, match="unknown protocol"):
            cf.Client("127.0.0.1:%d" % port, protocol="udp")
        with pytest.raises(cf.ConfigError, match="hash"):
            cf.Client("127.0.0.1:%d" % port, hash="crc16")


def test_unix_socket_server():
    d = tempfile.mkdtemp(prefix="cellar-it-")
    path = os.path.join(d, "mc.sock")
    # util.Server waits for a TCP port; with -s the server listens on the socket only.
    proc = subprocess.Popen([util.CELLARD, "-s", path] + util.root_args(),
                            stdin=subprocess.DEVNULL)
    try:
        util.wait_for(lambda: os.path.exists(path), 10, what="unix socket")
        with cf.Client("unix:" + path) as c:
            assert c.set("k", "v") == cf.OK
            assert c.get("k")[:2] == (cf.OK, b"v")
        with cf.Client(path, protocol="binary") as c:
            assert c.get("k")[:2] == (cf.OK, b"v")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(d)


def restart_on(server):
    """Start a stopped Server again on the port it had (polled until it accepts)."""
    server.proc = subprocess.Popen(server.argv, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def accepts():
        try:
            socket.create_connection((util.HOST, server.port), timeout=1).close()
            return True
        except OSError:
            return False
    util.wait_for(accepts, 10, what="restarted server on port %d" % server.port)


@pytest.mark.parametrize("proto", ("meta", "binary"))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mget_with_a_dead_server(kind, proto):
    """1,000 keys over 8 servers; one killed mid-run: its keys fail, every
    other key is served; after TKO nothing is sent to it; restarted, a probe
    brings it back and its keys are served again."""
    keys = ["key:%d" % i for i in range(1000)]
    with Pool(kind, 8) as srv, cf.Client(srv, protocol=proto, probe_min_ms=200,
                                          probe_max_ms=400) as c:
        home = {k: c.server_of(k) for k in keys}
        assert len(set(home.values())) == 8
        for k in keys:
            assert c.set(k, "v:" + k) == cf.OK
        got = c.mget(keys)
        assert all(g[0] == cf.OK and g[1] == ("v:" + k).encode() for g, k in zip(got, keys))

        victim = 3
        srv[victim].proc.send_signal(signal.SIGKILL)
        srv[victim].proc.wait()
        got = c.mget(keys)
        for g, k in zip(got, keys):
            if home[k] == victim:
                assert g[0] in (cf.ECLOSED, cf.ECONNECT, cf.EDOWN), (k, g)
            else:
                assert g[0] == cf.OK and g[1] == ("v:" + k).encode(), (k, g)
        # The broken connection failed what it held; the next connect is
        # refused, which marks the server down at once (hard TKO).
        got = c.mget(keys)
        assert all(g[0] in (cf.ECONNECT, cf.EDOWN) for g, k in zip(got, keys)
                   if home[k] == victim)
        assert c.server_down(victim)
        st = c.stats()
        assert st["tko_events"] == 1

        # Down: its keys fail at once, nothing goes out for them.
        before = c.stats()
        got = c.mget(keys)
        mine = sum(1 for k in keys if home[k] == victim)
        assert sum(1 for g in got if g[0] == cf.EDOWN) == mine
        after = c.stats()
        assert after["requests"] - before["requests"] == 1000 - mine
        assert after["down_fast_fails"] - before["down_fast_fails"] == mine

        # Restarted (empty): no get reaches it while it is down; a probe revives it.
        restart_on(srv[victim])
        got = c.mget(keys)
        assert sum(1 for g in got if g[0] == cf.EDOWN) == mine
        assert int(srv[victim].stats()["cmd_get"]) == 0
        util.wait_for(lambda: (c.poll(100), not c.server_down(victim))[1], 10,
                      what="probe to revive the server")
        assert c.stats()["revivals"] == 1
        got = c.mget(keys)
        for g, k in zip(got, keys):
            want = cf.NOT_FOUND if home[k] == victim else cf.OK
            assert g[0] == want, (k, g)
        assert int(srv[victim].stats()["cmd_get"]) == mine


def test_mget_window_bounds_requests_in_flight():
    keys = ["w%d" % i for i in range(2000)]
    with Pool("cellard", 4) as srv:
        with cf.Client(srv, window_init=32, window_min=32, window_max=32) as c:
            got = c.mget(keys)
            assert all(g[0] == cf.NOT_FOUND for g in got)
            st = c.stats()
            assert st["window_peak"] == 32 and st["requests"] == 2000
        with cf.Client(srv, window_init=16, window_min=16, window_max=4096) as c:
            for _ in range(3):
                c.mget(keys)
            st = c.stats()
            assert 16 < st["window"] <= 4096        # grew with answers
            assert st["window_peak"] <= st["window"]
