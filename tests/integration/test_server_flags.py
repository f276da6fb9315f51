"""Process-level behaviour: unix sockets, daemon mode and pid file, signals,
option errors, shutdown, hash-table growth, stats conns.

Everything here is also what memcached 1.6.18 does, so these tests pass with
CELLARD=/usr/bin/memcached too (except where cellard's safe default differs,
which none of these touch: every server here is given -l explicitly).
"""

import os
import signal
import socket
import stat
import subprocess
import tempfile
import time

from util import CELLARD, CELLARD_ARGS, HOST, MEMCACHED, Server, free_port, root_args, wait_for


def _unix_call(path, data, terminator):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall(data)
    buf = b""
    deadline = time.monotonic() + 10
    while not buf.endswith(terminator) and time.monotonic() < deadline:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return buf


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_unix_socket_with_mask():
    d = tempfile.mkdtemp(prefix="cellar-it-")
    path = os.path.join(d, "cellard.sock")
    p = subprocess.Popen([CELLARD, "-s", path, "-a", "0770"] + root_args(),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    try:
        wait_for(lambda: os.path.exists(path), 10, what="the unix socket to appear")
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == 0o770, oct(mode)
        wait_for(lambda: _try_unix(path), 10, what="the unix socket to accept")
        assert _unix_call(path, b"set u 3 0 2\r\nhi\r\n", b"\r\n") == b"STORED\r\n"
        assert _unix_call(path, b"get u\r\n", b"END\r\n") == b"VALUE u 3 2\r\nhi\r\nEND\r\n"
        conns = _unix_call(path, b"stats conns\r\n", b"END\r\n")
        assert b"unix:" + path.encode() in conns, conns
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(10)
        assert rc == 0, (rc, p.stderr.read())
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(d)


def _try_unix(path):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.close()
        return True
    except OSError:
        return False


def test_daemon_mode_and_pid_file():
    d = tempfile.mkdtemp(prefix="cellar-it-")
    pidfile = os.path.join(d, "cellard.pid")
    port = free_port()
    rc = subprocess.run([CELLARD, "-d", "-P", pidfile, "-l", HOST, "-p", str(port), "-U", "0"]
                        + root_args(), timeout=10).returncode
    assert rc == 0, rc
    pid = int(wait_for(lambda: os.path.exists(pidfile) and open(pidfile).read().strip(), 10,
                       what="the pid file"))
    try:
        assert _pid_alive(pid)
        wait_for(lambda: _try_tcp(port), 10, what="the daemon to accept")
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not _pid_alive(pid), 10, what="the daemon to exit after SIGTERM")
    assert not os.path.exists(pidfile), "pid file left behind"
    os.rmdir(d)


def _try_tcp(port):
    try:
        socket.create_connection((HOST, port), timeout=1).close()
        return True
    except OSError:
        return False


def test_sigint_stops_cleanly():
    srv = Server().start()
    with srv.conn() as c:
        c.expect(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n")
    srv.proc.send_signal(signal.SIGINT)
    assert srv.proc.wait(10) == 0
    srv._cleanup_file()


def test_option_errors_and_info():
    r = subprocess.run([CELLARD, "-o", "no_such_thing"] + root_args(), capture_output=True,
                       timeout=10)
    assert r.returncode == 1, r
    assert b'Illegal suboption "no_such_thing"' in r.stderr, r.stderr
    r = subprocess.run([CELLARD, "-t", "0"] + root_args(), capture_output=True, timeout=10)
    assert r.returncode == 1 and b"Number of threads must be greater than 0" in r.stderr, r
    # memcached's item lock table has 2^12 stripes at -t 4: a hashpower must exceed it.
    for args in (["-o", "hashpower=12"], ["-t", "5", "-o", "hashpower=13"]):
        r = subprocess.run([CELLARD, "-p", str(free_port())] + args + root_args(),
                           capture_output=True, timeout=10)
        assert r.returncode == 1, r
        assert b"cannot be equal to or less than item lock table" in r.stderr, r.stderr
    r = subprocess.run([CELLARD, "-h"], capture_output=True, timeout=10)
    assert r.returncode == 0 and b"-p, --port=<num>" in r.stdout, r.stdout[:300]
    r = subprocess.run([CELLARD, "-V"], capture_output=True, timeout=10)
    assert r.returncode == 0 and b"1.6.18" in r.stdout, r.stdout
    if os.geteuid() == 0:
        r = subprocess.run([CELLARD, "-p", str(free_port())], capture_output=True, timeout=10)
        assert r.returncode == 64, r
        assert b"can't run as root without the -u switch" in r.stderr, r.stderr


def test_shutdown_command():
    with Server() as srv:
        with srv.conn() as c:
            c.expect(b"shutdown\r\n", b"ERROR: shutdown not enabled\r\n")
    srv = Server(args=["-A"]).start()
    with srv.conn() as c:
        c.send(b"shutdown\r\n")
        assert c.wait_closed(10)
    assert srv.proc.wait(10) == 0
    srv._cleanup_file()


def test_hash_table_grows_in_the_background():
    with Server(args=["-o", "hashpower=13"]) as srv:
        assert srv.stats()["hash_power_level"] == "13"
        with srv.conn() as c:
            batch = b"".join(b"set g%d 0 0 1 noreply\r\nx\r\n" % i for i in range(20000))
            c.send(batch)
            c.expect(b"get g19999\r\n", b"VALUE g19999 0 1\r\nx\r\nEND\r\n")
        # 20000 items > 1.5 x 8192 buckets: the maintenance thread doubles the table.
        wait_for(lambda: srv.stats()["hash_power_level"] == "14", 20, 0.05,
                 "hash_power_level to reach 14")
        wait_for(lambda: srv.stats()["hash_is_expanding"] == "0", 20, 0.05,
                 "the expansion to finish")
        with srv.conn() as c:
            for i in range(0, 20000, 997):
                c.expect(b"get g%d\r\n" % i, b"VALUE g%d 0 1\r\nx\r\nEND\r\n" % i)
        st = srv.stats()
        assert st["curr_items"] == "20000", st["curr_items"]
        assert int(st["hash_bytes"]) == 8 * (1 << 14), st["hash_bytes"]


def test_no_hashexpand_keeps_the_table():
    """-o no_hashexpand: the same load that doubles a server's table leaves
    this one's alone (checked once the other one has grown; memcached too)."""
    for binary in (MEMCACHED, CELLARD):
        with Server(binary, args=["-o", "hashpower=13"]) as grows, \
                Server(binary, args=["-o", "hashpower=13,no_hashexpand"]) as fixed:
            batch = b"".join(b"set g%d 0 0 1 noreply\r\nx\r\n" % i for i in range(20000))
            for srv in (fixed, grows):
                with srv.conn() as c:
                    c.send(batch)
                    c.expect(b"get g19999\r\n", b"VALUE g19999 0 1\r\nx\r\nEND\r\n")
            wait_for(lambda: grows.stats()["hash_power_level"] == "14", 20, 0.05,
                     "the other table to grow")
            st = fixed.stats()
            assert (st["hash_power_level"], st["hash_is_expanding"]) == ("13", "0"), binary
            assert st["curr_items"] == "20000"



# lru_crawler lines whose answer memcached gives the same every time: its
# crawler thread starts synchronously, but stops (and runs crawls) in its
# own time, so nothing here follows a disable or asks for a crawl while the
# crawler is on.
CRAWLER_SYNTAX = [
    b"lru_crawler", b"lru_crawler bogus", b"lru_crawler crawl", b"lru_crawler crawl all extra",
    b"lru_crawler sleep 100", b"lru_crawler sleep 1000001", b"lru_crawler sleep -1",
    b"lru_crawler sleep x", b"lru_crawler tocrawl 7", b"lru_crawler tocrawl -1",
    b"lru_crawler enable now",
]


def _crawler_transcript(binary, args, lines):
    """Each line's reply; at every None, the crawler lines of stats settings
    and the names of the crawler counters `stats` lists."""
    out = []
    with Server(binary, args=args) as srv:
        with srv.conn() as c:
            for line in lines:
                if line is None:
                    out.append(sorted((k, v) for k, v in c.stats("settings").items()
                                      if "crawler" in k))
                    out.append(sorted(k for k in c.stats() if "crawler" in k))
                else:
                    out.append((line, c.call(line + b"\r\n")))
    return out


def test_lru_crawler_command_matches_memcached():
    """Same lines to cellard and memcached, with the crawler running and
    with it off at start (-o no_lru_crawler, then enabled): every reply,
    the crawler settings and the crawler counters listed agree."""
    cases = [
        ([], CRAWLER_SYNTAX + [None, b"lru_crawler enable", None]),
        (["-o", "no_lru_crawler"],
         [b"lru_crawler crawl all", b"lru_crawler metadump all"] + CRAWLER_SYNTAX +
         [None, b"lru_crawler enable", None, b"lru_crawler enable"]),
    ]
    for args, lines in cases:
        want = _crawler_transcript("/usr/bin/memcached", args, lines)
        got = _crawler_transcript(CELLARD, args, lines)
        for w, g in zip(want, got):
            assert g == w, "%s: cellard %r, memcached %r" % (args, g, w)


def test_no_crawler_and_no_maintainer_leave_expired_items():
    """With neither the crawler nor the LRU maintainer, nothing reaps an
    expired item in the background; `lru_crawler enable` and a crawl (which
    memcached needs asking for; cellard's crawl runs once enabled) do."""
    with Server(args=["-o", "no_lru_crawler,no_lru_maintainer"]) as srv:
        with srv.conn() as c:
            c.expect(b"set gone 0 1 1\r\nx\r\n", b"STORED\r\n")
            t0 = int(c.stats()["time"])
            wait_for(lambda: int(c.stats()["time"]) >= t0 + 2, 10, 0.05, "the item to expire")
            st = c.stats()
            assert (st["curr_items"], st["crawler_reclaimed"]) == ("1", "0"), st
            c.expect(b"lru_crawler enable\r\n", b"OK\r\n")
            c.expect(b"lru_crawler crawl all\r\n", b"OK\r\n")
            wait_for(lambda: c.stats()["crawler_reclaimed"] == "1", 10, 0.05,
                     "the crawler to reclaim the expired item")
            assert c.stats()["curr_items"] == "0"


def test_lru_crawler_crawl_reaps_expired_items_now():
    """`lru_crawler crawl all` has the crawl look at every item now, not
    after its rest between passes: an expired item soon leaves curr_items
    (memcached's LRU maintainer may take it first; either will do)."""
    with Server() as srv:
        with srv.conn() as c:
            c.expect(b"set gone 0 1 1\r\nx\r\n", b"STORED\r\n")
            t0 = int(c.stats()["time"])
            wait_for(lambda: int(c.stats()["time"]) >= t0 + 2, 10, 0.05, "the item to expire")
            reply = c.call(b"lru_crawler crawl all\r\n")
            assert reply in (b"OK\r\n", b"BUSY currently processing crawler request\r\n"), reply
            wait_for(lambda: c.stats()["curr_items"] == "0", 10, 0.05,
                     "the expired item to be reaped")


# slabs and lru: every form memcached checks, then the settings they change.
TUNE_LINES = [
    b"slabs", b"slabs bogus", b"slabs reassign", b"slabs reassign 1", b"slabs reassign 1 2 3",
    b"slabs reassign x y", b"slabs reassign 1 x", b"slabs reassign 1 1", b"slabs reassign -5 70",
    b"slabs reassign 2 1", b"slabs reassign 0 1", b"slabs reassign -1 1", b"slabs reassign 1 -1",
    b"slabs reassign 1 0", b"slabs reassign 99 1", b"slabs reassign 99999999999 1",
    b"slabs automove", b"slabs automove 0", b"slabs automove 2", b"slabs automove 3",
    b"slabs automove -1", b"slabs automove x", b"slabs automove 1 2", b"slabs automove ratio 0.5",
    b"slabs automove freeratio 0.1", b"slabs automove ratio x", b"slabs automove bogus 1",
    b"lru", b"lru bogus", b"lru mode", b"lru mode flat", b"lru mode bogus", b"lru temp_ttl 10",
    b"lru temp_ttl x", b"lru tune 10 20 0.1 2", b"lru tune 10 20 0.1", b"lru tune x 20 0.1 2",
    b"lru tune 10 20 x 2", b"lru tune 50 40 0.1 2", b"lru tune 10 20 0 2", b"lru tune 5 6 0.3 1.5 9",
]
TUNED = ["hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor", "lru_segmented",
         "temp_lru", "temporary_ttl", "slab_automove", "slab_automove_ratio", "slab_reassign"]


def test_slabs_and_lru_commands_match_memcached():
    """Each line's reply, and the settings they leave in stats settings, as
    memcached gives them; with the modern defaults and with no_modern."""
    for args in ([], ["-o", "no_modern"]):
        outs = []
        for binary in ("/usr/bin/memcached", CELLARD):
            with Server(binary, args=args) as srv, srv.conn() as c:
                c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
                replies = [c.call(line + b"\r\n") for line in TUNE_LINES]
                c.expect(b"lru temp_ttl -1 noreply\r\nslabs automove 1 noreply\r\nmn\r\n",
                         b"MN\r\n")
                st = c.stats("settings")
                outs.append((replies, {k: st[k] for k in TUNED}))
        assert outs[1] == outs[0], (args, outs)
    assert outs[0][1]["slab_reassign"] == "no" and outs[0][1]["slab_automove"] == "1"


def _proc_field(pid, name, line_start):
    with open("/proc/%d/%s" % (pid, name)) as f:
        for line in f:
            if line.startswith(line_start):
                return line.split()
    raise AssertionError("%s not in /proc/%d/%s" % (line_start, pid, name))


def test_core_limit_and_locked_memory():
    """-r raises the core file limit as far as the hard limit goes; -k locks
    the server's pages (mlockall).  memcached 1.6.18 shows the same in /proc."""
    seen = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary, args=["-r", "-k", "-m", "8"]) as srv:
            srv.stats()
            core = _proc_field(srv.pid, "limits", "Max core file size")
            locked = int(_proc_field(srv.pid, "status", "VmLck:")[1])
            with open("/proc/%d/maps" % srv.pid) as f:
                asan = "libasan" in f.read()            # AddressSanitizer makes mlockall a no-op
            seen.append((core[4:6], locked > 1024 or asan))
            assert srv.stderr_text() == "", srv.stderr_text()
        with Server(binary, args=["-m", "8"]) as srv:
            assert int(_proc_field(srv.pid, "status", "VmLck:")[1]) == 0
    assert seen[1] == seen[0] == (["unlimited", "unlimited"], True), seen


def _read_twice_survives(tune):
    """Whether an item read twice outlives 30 later stores in a 2 MB cache."""
    big = b"x" * 100000
    with Server(CELLARD, args=["-m", "2"]) as srv, srv.conn() as c:
        if tune:
            c.expect(b"lru tune " + tune + b"\r\n", b"OK\r\n")
        for i in range(12):
            c.expect(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(big), big), b"STORED\r\n")
        for _ in range(2):
            c.expect(b"mg k0 v\r\n", b"VA 100000\r\n")
            c.read_to(b"\r\n")
        for i in range(12, 42):
            c.expect(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(big), big), b"STORED\r\n")
        assert int(c.stats()["evictions"]) >= 20     # the cache holds 16 such items
        return c.call(b"mg k0\r\n") == b"HD\r\n"


def test_lru_tune_steers_the_segmented_lru():
    """`lru tune <hot> <warm> <hot factor> <warm factor>` reaches the default
    policy (cellard's own check: memcached's maintainer thread juggles its
    LRUs asynchronously).  With WARM's share at 0 an active item is not kept."""
    if any("evict" in a for a in CELLARD_ARGS):
        return                                      # another policy: no knobs
    assert _read_twice_survives(None)
    assert not _read_twice_survives(b"20 0 0.2 2.0")
    assert _read_twice_survives(b"20 60 0.2 2.0")
