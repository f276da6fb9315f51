"""Warm restart (-e FILE): what a graceful stop saves, the next start finds.

A server started with -e and stopped with SIGUSR1 (or `shutdown graceful`)
keeps its cache: every item that has not expired comes back with its
value, client flags, CAS, remaining TTL and lease or stale state; a TTL
runs on while the server is stopped; CAS values handed out afterwards are
higher than any before.  SIGTERM and a plain `shutdown` save nothing.  An
empty or damaged FILE.meta stops the start (memcached 1.6.18 aborts, as
its t/restart.t checks); a smaller -m or -I, or -C changed, starts empty
with a warning; so does (cellard) a memory file whose bytes were damaged
or cut, and a stop killed while it writes.

The first test passes against Debian's memcached 1.6.18 too
(CELLARD=/usr/bin/memcached): it is the behaviour both share.  cellard
also restores into the other storage engine.
"""

import os
import re
import signal
import tempfile
import time

import pytest

from util import CELLARD, MEMCACHED, Server, wait_for

IS_MEMCACHED = os.path.realpath(CELLARD) == os.path.realpath(MEMCACHED)
ENGINES = [[]] if IS_MEMCACHED else [[], ["-o", "storage=seg"]]
ENGINE_IDS = ["default"] if IS_MEMCACHED else ["slab", "seg"]

SIZES = [0, 1, 10, 100, 1000, 5000, 70000, 900000]


@pytest.fixture
def memfile():
    with tempfile.TemporaryDirectory(prefix="cellar-it-restart-") as d:
        yield os.path.join(d, "cache")


def graceful(srv, timeout=60):
    """SIGUSR1, then wait for the server to exit 0 (it saves first)."""
    srv.proc.send_signal(signal.SIGUSR1)
    rc = srv.proc.wait(timeout)
    srv._term_sent = True       # stop() only collects the status now
    assert rc == 0, "exit status %d after SIGUSR1: %s" % (rc, srv.stderr_text()[-2000:])
    after_stop()


def after_stop():
    """memcached 1.6.18 refuses a restart in the second its server stopped
    ("incompatible due to setting for [stop_time]"): give it the next one."""
    if IS_MEMCACHED:
        t = time.time() + 1.5
        wait_for(lambda: time.time() > t, 5, what="the next second")


def fill(c, n, ttl_of=lambda i: 0):
    """n items k<i>, sizes cycling through SIZES, flags i, TTL ttl_of(i)."""
    out = []
    for i in range(n):
        size = SIZES[i % len(SIZES)] if i < 64 else (i * 37) % 300
        val = (b"%d:" % i * (size // 2 + 1))[:size]
        out.append(b"set k%d %d %d %d\r\n%s\r\n" % (i, i, ttl_of(i), size, val))
        if len(out) == 500:
            c.send(b"".join(out))
            for _ in out:
                assert c.read_to(b"\r\n") == b"STORED\r\n"
            out = []
    if out:
        c.send(b"".join(out))
        for _ in out:
            assert c.read_to(b"\r\n") == b"STORED\r\n"


def snapshot(c, keys):
    """key -> (flags, cas, ttl, value, state) by meta get, without touching LRU."""
    out = {}
    for i in range(0, len(keys), 200):
        batch = keys[i:i + 200]
        c.send(b"".join(b"mg %s f c t v q k O.\r\n" % k for k in batch) + b"mn\r\n")
        while True:
            line = c.read_to(b"\r\n")
            if line == b"MN\r\n":
                break
            assert line.startswith(b"VA "), line
            parts = line.split()
            n = int(parts[1])
            fl = dict((p[:1], p[1:]) for p in parts[2:] if p[:1] not in (b"W", b"X", b"Z"))
            state = b"".join(p for p in parts[2:] if p in (b"W", b"X", b"Z"))
            val = c.read_to(b"\r\n")[:n]
            out[fl[b"k"]] = (int(fl[b"f"]), int(fl[b"c"]), int(fl[b"t"]), val, state)
    return out


def restart_args(memfile, extra=()):
    return ["-m", "128", "-e", memfile, "-I", "1m"] + list(extra)


@pytest.mark.parametrize("engine", ENGINES, ids=ENGINE_IDS)
def test_items_survive_a_graceful_stop(memfile, engine):
    n = 20000
    keys = [b"k%d" % i for i in range(n)]
    srv = Server(args=restart_args(memfile, engine))
    with srv:
        with srv.conn() as c:
            assert srv.stats("settings")["memory_file"] == memfile
            # every third item has a TTL: 1000 s, or 1 s (gone after the stop)
            fill(c, n, lambda i: 0 if i % 3 else (1 if i % 9 == 0 else 1000))
            # a lease out (vivify on miss) and a stale item (invalidated)
            c.send(b"mg lease N30 c\r\nmd k4 I\r\n")
            assert b"W" in c.read_to(b"\r\n").split()
            assert c.read_to(b"\r\n") == b"HD\r\n"
            # (a read of a stale item takes its lease: the second read shows
            # the state as it is stored)
            snapshot(c, keys + [b"lease"])
            before = snapshot(c, keys + [b"lease"])
            short = [b"k%d" % i for i in range(0, n, 9)]
            for k in short:
                before.pop(k, None)     # (may be gone already)
            max_cas = max(v[1] for v in before.values())
            hp = srv.stats().get("hash_power_level")
        stopped = time.time()
        graceful(srv)
    assert os.path.exists(memfile + ".meta")
    # the 1 s items expire while the server is down
    wait_for(lambda: time.time() > stopped + 2.1, 5, what="the short TTLs to pass")

    srv = Server(args=restart_args(memfile, engine))
    with srv:
        with srv.conn() as c:
            after = snapshot(c, keys + [b"lease"])
            for k in short:
                assert k not in after, k
            assert set(after) == set(before)
            elapsed = time.time() - stopped + 1
            for k, (flags, cas, ttl, val, state) in before.items():
                a = after[k]
                assert a[0] == flags and a[1] == cas and a[3] == val and a[4] == state, k
                if ttl == -1:
                    assert a[2] == -1, k
                else:
                    assert ttl - elapsed <= a[2] <= ttl, (k, ttl, a[2])
            assert before[b"lease"][4] == b"Z" and set(before[b"k4"][4]) == set(b"XZ")
            # the lease is still out: a second asker does not win
            c.send(b"mg lease N30 c\r\n")
            assert b"Z" in c.read_to(b"\r\n").split()
            # new CAS values come after every restored one
            c.send(b"set fresh 0 0 1\r\nx\r\nmg fresh c\r\n")
            assert c.read_to(b"\r\n") == b"STORED\r\n"
            assert int(c.read_to(b"\r\n").split()[1][1:]) > max_cas
            st = srv.stats()
            assert int(st["curr_items"]) == len(before) + 1
            if not engine:
                assert st["hash_power_level"] == hp
        # the meta file is used once
        assert not os.path.exists(memfile + ".meta")


@pytest.mark.skipif(IS_MEMCACHED, reason="cellard's storage engines")
def test_a_save_restores_into_the_other_engine(memfile):
    for first, second in ((["-o", "storage=seg"], []), ([], ["-o", "storage=seg"])):
        srv = Server(args=restart_args(memfile, first))
        with srv:
            with srv.conn() as c:
                fill(c, 3000)
                before = snapshot(c, [b"k%d" % i for i in range(3000)])
            graceful(srv)
        with Server(args=restart_args(memfile, second)) as srv:
            with srv.conn() as c:
                assert snapshot(c, [b"k%d" % i for i in range(3000)]) == before


def _saved(memfile, extra=(), n=500):
    srv = Server(args=restart_args(memfile, extra))
    with srv:
        with srv.conn() as c:
            fill(c, n)
        graceful(srv)
    assert os.path.exists(memfile + ".meta")


def test_term_and_plain_shutdown_save_nothing(memfile):
    _saved(memfile)
    # a start reads (and removes) the meta file; SIGTERM writes none
    with Server(args=restart_args(memfile)) as srv:
        assert int(srv.stats()["curr_items"]) == 500
    assert not os.path.exists(memfile + ".meta")
    srv = Server(args=restart_args(memfile, ["-A"]))
    with srv:
        assert int(srv.stats()["curr_items"]) == 0
        with srv.conn() as c:
            fill(c, 10)
            c.send(b"shutdown\r\n")
        srv.proc.wait(10)
        srv._term_sent = True
    assert not os.path.exists(memfile + ".meta")


def test_shutdown_graceful_saves(memfile):
    srv = Server(args=restart_args(memfile, ["-A"]))
    with srv:
        with srv.conn() as c:
            fill(c, 100)
            c.send(b"shutdown graceful\r\n")
        assert srv.proc.wait(30) == 0
        srv._term_sent = True
    after_stop()
    with Server(args=restart_args(memfile)) as srv:
        assert int(srv.stats()["curr_items"]) == 100


def _start_fails(memfile, extra=()):
    srv = Server(args=restart_args(memfile, extra), start_timeout=5)
    with pytest.raises(AssertionError) as e:
        srv.start()
    return str(e.value)


@pytest.mark.parametrize("damage", ["empty", "edited"])
def test_a_damaged_meta_file_stops_the_start(memfile, damage):
    """memcached's t/restart.t: an empty metadata file, and the server dies."""
    if damage == "empty":
        open(memfile + ".meta", "w").close()
    elif IS_MEMCACHED:
        pytest.skip("memcached's metadata carries no check of itself")
    else:
        _saved(memfile)
        with open(memfile + ".meta") as f:
            text = f.read()
        with open(memfile + ".meta", "w") as f:
            f.write(text.replace("items 500", "items 501"))
    err = _start_fails(memfile)
    if not IS_MEMCACHED:
        assert "corrupt metadata file" in err, err
        assert os.path.exists(memfile + ".meta")    # kept, for the operator to look at


@pytest.mark.skipif(IS_MEMCACHED, reason="cellard's format version")
def test_another_format_version_starts_empty(memfile):
    _saved(memfile)
    with open(memfile + ".meta") as f:
        text = f.read()
    with open(memfile + ".meta", "w") as f:
        f.write(text.replace("cellar memory file 1\n", "cellar memory file 2\n"))
    srv = Server(args=restart_args(memfile))
    with srv:
        assert int(srv.stats()["curr_items"]) == 0
        assert "format 2; this cellard reads format 1, starting with a clean cache" in \
            srv.stderr_text()
    assert not os.path.exists(memfile + ".meta")


@pytest.mark.parametrize("change", [["-m", "64"], ["-I", "512k"], ["-C"]],
                         ids=["smaller-m", "smaller-I", "cas-off"])
def test_settings_that_would_lose_items_start_empty(memfile, change):
    _saved(memfile)
    srv = Server(args=restart_args(memfile) + change)
    with srv:
        assert int(srv.stats()["curr_items"]) == 0
        assert "starting with a clean cache" in srv.stderr_text() or IS_MEMCACHED
    assert not os.path.exists(memfile + ".meta")


@pytest.mark.skipif(IS_MEMCACHED, reason="memcached's file is its memory, not a copy")
@pytest.mark.parametrize("damage", ["flipped", "cut"])
def test_a_damaged_memory_file_starts_empty(memfile, damage):
    _saved(memfile)
    size = os.path.getsize(memfile)
    with open(memfile, "r+b") as f:
        if damage == "flipped":
            f.seek(size // 2)
            b = f.read(1)
            f.seek(size // 2)
            f.write(bytes([b[0] ^ 0x20]))
        else:
            f.truncate(size - 3)
    srv = Server(args=restart_args(memfile))
    with srv:
        assert int(srv.stats()["curr_items"]) == 0
        with srv.conn() as c:
            c.send(b"get k1 k2 k3\r\n")
            assert c.read_to(b"\r\n") == b"END\r\n"
        err = srv.stderr_text()
        assert re.search(r"damaged|bytes, its metadata says", err), err
        assert "starting with a clean cache" in err


@pytest.mark.skipif(IS_MEMCACHED, reason="memcached writes only its metadata at a stop")
def test_a_stop_killed_while_it_writes_leaves_nothing_to_restore(memfile):
    srv = Server(args=["-m", "1024", "-e", memfile])
    with srv:
        with srv.conn() as c:
            val = b"v" * 1000000
            for i in range(0, 400, 50):
                c.send(b"".join(b"set big%d 0 0 %d\r\n%s\r\n" % (j, len(val), val)
                                for j in range(i, i + 50)))
                for _ in range(50):
                    assert c.read_to(b"\r\n") == b"STORED\r\n"
        srv.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: os.path.getsize(memfile) > 0, 30, interval=0.0005,
                 what="the save to begin")
        meta_then = os.path.exists(memfile + ".meta")
        srv.proc.kill()
        srv.proc.wait(10)
        srv.proc = None         # killed on purpose: nothing for stop() to judge
    assert not meta_then and not os.path.exists(memfile + ".meta")
    assert os.path.getsize(memfile) < 400 * 1000000
    srv = Server(args=["-m", "1024", "-e", memfile])
    with srv:
        assert int(srv.stats()["curr_items"]) == 0
        assert "no metadata save file, starting with a clean cache" in srv.stderr_text()


@pytest.mark.skipif(IS_MEMCACHED, reason="cellard writes its file at the stop")
def test_a_relative_path_survives_daemonizing(memfile):
    """-d moves the daemon to /: the stop still writes where -e meant."""
    from util import HOST, free_port, root_args
    import socket
    import subprocess
    d = os.path.dirname(memfile)
    port, pidfile = free_port(), os.path.join(d, "pid")
    subprocess.run([CELLARD, "-d", "-P", pidfile, "-l", HOST, "-p", str(port), "-U", "0",
                    "-e", "cache"] + root_args(), cwd=d, check=True, timeout=10)
    pid = int(wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), 10,
                       what="the pid file"))
    try:
        def up():
            try:
                return socket.create_connection((HOST, port), timeout=1)
            except OSError:
                return None
        s = wait_for(up, 10, what="the daemon to listen")
        s.sendall(b"set k 0 0 1\r\nx\r\n")
        assert s.recv(100) == b"STORED\r\n"
        s.close()
        os.kill(pid, signal.SIGUSR1)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), 30, what="the daemon to exit")
    finally:
        if os.path.exists("/proc/%d" % pid):
            os.kill(pid, signal.SIGKILL)
    assert os.path.exists(os.path.join(d, "cache.meta"))
