"""cellar-router under faults: a backend killed under load with a gutter
pool, a backend behind a cut link (real timeouts, netns), twenty reloads
under load then an invalid config, and clients that send garbage, stop
halfway, come by the thousand or never read their answers.

The router runs libcellar's route tree, one handle per worker: every
failure a handle sees (ECLOSED, ECONNECT, ETIMEDOUT, EDOWN) is a failover
error, so with FailoverWithExptimeRoute a failed normal server's requests
go on to the gutter at once, before and after TKO, and the client sees no
error at all, only misses; writes that land in the gutter carry an exptime
capped at failover_exptime.  What each route did is checked on the
backends themselves, over raw connections.

CELLAR_ROUTER (cellar-router) and CELLAR_BENCH (cellar-bench) are required:
a test fails, it is not skipped, when one is unset.
"""

import json
import os
import random
import resource
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time

import util
from router_util import Router, addrs, backend, need, restart

BENCH = os.environ.get("CELLAR_BENCH")
GUTTER_TTL = 10


def gutter_config(main, gutter, **pool_opts):
    pool = dict({"servers": main}, **pool_opts)
    return json.dumps({
        "pools": {"main": pool, "gutter": {"servers": gutter}},
        "route": {"type": "FailoverWithExptimeRoute", "normal": "PoolRoute|main",
                  "failover": ["PoolRoute|gutter"], "failover_exptime": GUTTER_TTL}})


def set_all(port, items):
    """Set every (key, value) through one connection, pipelined; all STORED."""
    with util.Conn(port) as c:
        c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k.encode(), len(v), v)
                        for k, v in items.items()))
        for k in items:
            assert c.readline() == b"STORED\r\n", k


def held(server, keys):
    """{key: value} of the keys this backend holds (one multi-get, asked directly)."""
    with server.conn() as c:
        c.send(("get %s\r\n" % " ".join(keys)).encode())
        return {k.decode(): v for k, _f, v, _c in c.read_get_reply()}


def homes(servers, keys):
    """Which backend holds each key: exactly one must."""
    where = {}
    for i, s in enumerate(servers):
        for k in held(s, keys):
            assert k not in where, "%s on backends %d and %d" % (k, where[k], i)
            where[k] = i
    assert sorted(where) == sorted(keys), set(keys) - set(where)
    return where


def ttl_on(server, key):
    with server.conn() as c:
        line = c.call(("mg %s t\r\n" % key).encode()).decode().split()
    assert line[0] == "HD", (key, line)
    return int(line[1][1:])


def delete_all(port, keys, answer):
    """Delete every key through one connection, pipelined; each answered so."""
    with util.Conn(port) as c:
        c.send(b"".join(b"delete %s\r\n" % k.encode() for k in keys))
        for k in keys:
            assert c.readline() == answer, k


def read_get(c):
    """One get reply: ({key: value}, None), or ({}, error line) when the
    router answered an error in its place."""
    got = {}
    while True:
        line = c.readline()
        if line == b"END\r\n":
            return got, None
        if not line.startswith(b"VALUE "):
            return got, line
        parts = line.split()
        got[parts[1].decode()] = c.read_exact(int(parts[3]) + 2)[:-2]


class Loader(threading.Thread):
    """Client load over one connection, bounded in rounds and time: each
    round pipelines a set of each of `batch` keys (its own, round robin, a
    fresh value each time) and one multi-get of them, then checks every
    answer.  Counts requests, errors, misses and wrong values; `last` is the
    value each key was last stored with."""

    def __init__(self, port, keys, batch=8, max_rounds=20000, max_s=60.0):
        super().__init__(daemon=True)
        self.port, self.keys, self.batch = port, keys, batch
        self.max_rounds, self.max_s = max_rounds, max_s
        self.halt = threading.Event()
        self.rounds = self.sets = self.gets = 0
        self.set_errors, self.get_errors, self.wrong = [], [], []
        self.misses = []
        self.last = {}
        self.exc = None

    def run(self):
        try:
            end = time.monotonic() + self.max_s
            with util.Conn(self.port, timeout=10) as c:
                while (not self.halt.is_set() and self.rounds < self.max_rounds
                       and time.monotonic() < end):
                    self.one_round(c)
        except Exception as e:          # reported by stop()
            self.exc = e

    def one_round(self, c):
        r = self.rounds
        keys = [self.keys[(r * self.batch + i) % len(self.keys)] for i in range(self.batch)]
        vals = {k: b"%s-%d" % (k.encode(), r) for k in keys}
        c.send(b"".join(b"set %s 0 3600 %d\r\n%s\r\n" % (k.encode(), len(v), v)
                        for k, v in vals.items()) + ("get %s\r\n" % " ".join(keys)).encode())
        for k in keys:
            line = c.readline()
            self.sets += 1
            if line == b"STORED\r\n":
                self.last[k] = vals[k]
            else:
                self.set_errors.append((k, line))
        got, err = read_get(c)
        self.gets += len(keys)
        if err is not None:
            self.get_errors.append((keys, err))
        else:
            for k in keys:
                if k not in got:
                    self.misses.append(k)
                elif got[k] != vals[k]:
                    self.wrong.append((k, vals[k], got[k]))
        self.rounds += 1

    def stop(self, timeout=20):
        self.halt.set()
        self.join(timeout)
        assert not self.is_alive(), "loader did not stop within %ds" % timeout
        assert self.exc is None, "loader failed after %d rounds: %r" % (self.rounds, self.exc)


def halt(loaders):
    """Stop the loaders, raising nothing (for finally: blocks)."""
    for ld in loaders:
        ld.halt.set()
    for ld in loaders:
        ld.join(20)


def stop_all(loaders):
    halt(loaders)
    for ld in loaders:
        ld.stop()


def rounds(loaders):
    return sum(ld.rounds for ld in loaders)


def test_kill9_backend_under_load_gutter_takes_its_keys():
    """Four normal cellard and one gutter; four clients set and multi-get
    through the router while one normal backend is SIGKILLed.  Asserted:
    not one error answer, on sets or gets, before, during or after the
    kill (every failure fails over, TKO or not) and no wrong value; misses
    only on the dead backend's keys; after the kill its keys are stored in
    the gutter only, each with the value last set and a TTL <= 10, on no
    other normal backend, and no live backend's key is in the gutter.
    Deletes of its keys while it is dead are answered NOT_FOUND (no error)
    and spooled (--async-dir).  Restarted on its port, probes bring it
    back: the spooled deletes are replayed to it, every one, and its keys
    are read from it again, on every worker."""
    with backend("main0") as m0, backend("main1") as m1, backend("main2") as m2, \
            backend("main3") as m3, backend("gutter") as g:
        main = [m0, m1, m2, m3]
        cfg = gutter_config(addrs(main), addrs([g]), probe_min_ms=200, probe_max_ms=400)
        with Router(cfg, threads=2, spool=True) as rt:
            keys = ["kill:%d:%d" % (t, i) for t in range(4) for i in range(80)]
            set_all(rt.port, {k: b"pre" for k in keys})
            home = homes(main, keys)
            victim = 1
            mine = [k for k in keys if home[k] == victim]
            assert mine and len(set(home.values())) == 4 and not held(g, keys)

            loaders = [Loader(rt.port, keys[t * 80:(t + 1) * 80]) for t in range(4)]
            try:
                for ld in loaders:
                    ld.start()
                util.wait_for(lambda: rounds(loaders) >= 200, 20, what="200 rounds of load")
                main[victim].proc.send_signal(signal.SIGKILL)
                main[victim].proc.wait()
                # Five full passes over every loader's keys after the kill.
                at_kill = [ld.rounds for ld in loaders]
                util.wait_for(lambda: all(ld.rounds >= n + 5 * 80 // ld.batch + 1
                                          for ld, n in zip(loaders, at_kill)),
                              30, what="load to go on after the kill")
            finally:
                halt(loaders)
            stop_all(loaders)
            for ld in loaders:
                assert not ld.set_errors and not ld.get_errors, (ld.set_errors[:5],
                                                                 ld.get_errors[:5])
                assert not ld.wrong, ld.wrong[:5]
                assert all(home[k] == victim for k in ld.misses), ld.misses[:5]
            assert rt.stat("errors") == 0
            last = {k: v for ld in loaders for k, v in ld.last.items()}

            in_gutter = held(g, keys)
            assert sorted(in_gutter) == sorted(mine), set(in_gutter) ^ set(mine)
            for k in mine:
                assert in_gutter[k] == last[k], (k, in_gutter[k], last[k])
                assert 0 < ttl_on(g, k) <= GUTTER_TTL
            for i, s in enumerate(main):
                if i != victim:
                    there = held(s, keys)
                    assert not set(there) & set(mine), (i, set(there) & set(mine))
                    assert all(there[k] == last[k] for k in there), i

            # Deletes it cannot take are spooled, answered as mcrouter answers
            # them; a live backend's deletes are not.
            gone, mine = mine[:len(mine) // 3], mine[len(mine) // 3:]
            alive = [k for k in keys if home[k] != victim][:10]
            delete_all(rt.port, gone, b"NOT_FOUND\r\n")
            delete_all(rt.port, alive, b"DELETED\r\n")
            assert (rt.stat("spool_depth"), rt.stat("spool_appended")) == (len(gone), len(gone))
            assert rt.stat("spool_servers") == 1
            spooled = rt.servers()
            assert int(spooled[addrs([main[victim]])[0]]["spool_depth"]) == len(gone)
            assert all(int(spooled[a]["spool_depth"]) == 0
                       for i, a in enumerate(addrs(main)) if i != victim)

            # Back on its port, empty: the spool is replayed to it; what we put
            # there directly comes back through the router, from every worker.
            restart(main[victim])
            util.wait_for(lambda: rt.stat("spool_depth") == 0, 10,
                          what="the spooled deletes to be replayed")
            assert rt.stat("spool_replayed") == len(gone)
            assert rt.stat("spool_replay_errors") == 0 and rt.stat("spool_dropped") == 0
            assert not held(main[victim], gone)
            set_all(main[victim].port, {k: b"back:" + k.encode() for k in mine})

            def all_back():
                conns = [rt.conn() for _ in range(4)]     # round robin over 2 workers
                try:
                    for c in conns:
                        c.send(("get %s\r\n" % " ".join(mine)).encode())
                    return all(read_get(c) == ({k: b"back:" + k.encode() for k in mine}, None)
                               for c in conns)
                finally:
                    for c in conns:
                        c.close()
            util.wait_for(all_back, 10, interval=0.05, what="probes to revive the backend")
            assert rt.stat("errors") == 0


TIMEOUT_MS, TKO = 300, 3
FAST = TIMEOUT_MS / 2000        # an answer that waited for no timeout (a loaded CI box's margin)


def test_cut_link_times_out_then_tko_then_gutter(netns):
    """Three normal backends here and one in a namespace whose link is cut;
    router in the root namespace (-t 1: one handle, one TKO count).  Asked
    one victim key at a time: exactly tko_timeouts gets each wait one
    server_timeout (then connect_timeout) and are answered by the gutter (a
    miss, no error); from then on the victim's gets answer at once, within
    tko_timeouts x timeout + 1 s of the cut, while the other backends' keys
    are served throughout.  Sets land in the gutter with a capped TTL.
    Deletes of the victim's keys during the cut are spooled (answered
    NOT_FOUND).  Link back: a probe revives the backend, the spooled deletes
    reach it (those keys gone from it, the rest kept) and its (older) values
    are read from it again."""
    (far,) = netns.start_servers(util.CELLARD, 1)
    with backend("near0") as n0, backend("near1") as n1, backend("near2") as n2, \
            backend("gutter") as g:
        main = addrs([n0, n1, n2]) + ["%s:%d" % far]
        cfg = gutter_config(main, addrs([g]), server_timeout=TIMEOUT_MS,
                            connect_timeout=TIMEOUT_MS, tko_timeouts=TKO,
                            probe_min_ms=200, probe_max_ms=400)
        with Router(cfg, threads=1, spool=True) as rt, rt.conn(timeout=10) as c:
            keys = ["cut:%d" % i for i in range(200)]
            set_all(rt.port, {k: b"orig:" + k.encode() for k in keys})
            mine = sorted(set(keys) - set(held(n0, keys)) - set(held(n1, keys))
                          - set(held(n2, keys)))
            others = [k for k in keys if k not in mine]
            assert len(mine) >= 10 and others

            def timed_get(k):
                t = time.monotonic()
                c.send(("get %s\r\n" % k).encode())
                got, err = read_get(c)
                return got, err, time.monotonic() - t

            netns.link_down()
            cut_at = time.monotonic()
            slow, fast_at = [], None
            for n in range(30):
                k = mine[n % len(mine)]
                got, err, took = timed_get(k)
                assert err is None and got == {}, (n, k, got, err)    # gutter: a miss
                if took >= TIMEOUT_MS / 1000:
                    assert fast_at is None, "slow again after TKO: %d %.3f" % (n, took)
                    assert took < TIMEOUT_MS / 1000 + 1.0, (n, took)
                    slow.append(took)
                else:
                    assert took < FAST, (n, took)
                    if fast_at is None:
                        fast_at = time.monotonic() - cut_at
                o = others[n % len(others)]
                got, err, took = timed_get(o)
                assert (got, err) == ({o: b"orig:" + o.encode()}, None) and took < 0.2, \
                    (o, got, err, took)
                if fast_at is not None and n >= TKO + 3:
                    break
            assert len(slow) == TKO, slow
            assert fast_at is not None and fast_at <= TKO * TIMEOUT_MS / 1000 + 1.0, fast_at

            set_all(rt.port, {k: b"gut:" + k.encode() for k in mine})
            assert sorted(held(g, keys)) == mine
            assert all(0 < ttl_on(g, k) <= GUTTER_TTL for k in mine)
            c.send(("get %s\r\n" % " ".join(mine)).encode())
            assert read_get(c) == ({k: b"gut:" + k.encode() for k in mine}, None)
            gone, mine = mine[-5:], mine[:-5]
            delete_all(rt.port, gone, b"NOT_FOUND\r\n")
            assert rt.stat("spool_depth") == len(gone)

            netns.link_up()

            def revived():
                _got, err, _took = timed_get(mine[0])
                assert err is None, err
                return _got == {mine[0]: b"orig:" + mine[0].encode()}
            util.wait_for(revived, 10, interval=0.05, what="a probe to revive the backend")
            util.wait_for(lambda: rt.stat("spool_depth") == 0, 10,
                          what="the spooled deletes to be replayed")
            assert rt.stat("spool_replayed") == len(gone)
            with util.Conn(far[1], host=far[0]) as d:
                d.send(("get %s\r\n" % " ".join(gone + mine)).encode())
                there = {k.decode(): v for k, _f, v, _c in d.read_get_reply()}
            assert there == {k: b"orig:" + k.encode() for k in mine}, sorted(there)
            c.send(("get %s\r\n" % " ".join(mine + gone)).encode())
            assert read_get(c) == ({k: b"orig:" + k.encode() for k in mine}, None)
            assert rt.stat("errors") == 0


def test_twenty_reloads_under_load_then_an_invalid_config():
    """cellar-bench (preloaded, 1:9 sets:gets) and two checking clients run
    through the router while its config is rewritten 20 times, between a
    server list and the same pool as JSON under a one-child FailoverRoute
    (the same ch3 ring: each key goes where it went), half the rewrites
    followed by a SIGHUP.  Asserted: config_reloads == the reloads logged ==
    30 (a rewrite, plus one per SIGHUP); no error, miss, wrong value or
    dropped request for the clients, none for the bench (exit 0, errors 0,
    hits == keys).  Then an invalid config: refused ("refusing" on stderr,
    config_reload_errors 1), and the router serves on with the old one."""
    need(BENCH, "CELLAR_BENCH")
    with backend("b0") as b0, backend("b1") as b1, backend("b2") as b2, backend("b3") as b3:
        servers = addrs([b0, b1, b2, b3])
        plain = ",".join(servers)
        wrapped = json.dumps({"pools": {"main": {"servers": servers}},
                              "route": {"type": "FailoverRoute",
                                        "children": ["PoolRoute|main"]}}, indent=1)
        assert len(plain) != len(wrapped)
        with Router(plain, threads=2) as rt:
            keys = ["rl:%d" % i for i in range(160)]
            loaders = [Loader(rt.port, keys[:80], batch=10), Loader(rt.port, keys[80:], batch=10)]
            benchf = tempfile.TemporaryFile()
            bench = subprocess.Popen(
                [BENCH, "-s", util.HOST, "-p", str(rt.port), "-t", "1", "-c", "4", "-d", "4",
                 "-r", "1:9", "-k", "2000", "-v", "64", "--preload", "-D", "20",
                 "--stall", "5", "--json", "--no-progress"],
                stdin=subprocess.DEVNULL, stdout=benchf, stderr=subprocess.STDOUT)
            try:
                for ld in loaders:
                    ld.start()
                util.wait_for(lambda: rounds(loaders) >= 20 and rt.stat("cmd_get") > 5000,
                              20, what="load through the router")
                want = 0
                for n in range(20):
                    rt.write_config(wrapped if n % 2 == 0 else plain)
                    want += 1
                    if n % 2:
                        rt.proc.send_signal(signal.SIGHUP)
                        want += 1
                    util.wait_for(lambda: rt.stat("config_reloads") >= want, 5,
                                  what="reload %d (%d)" % (n, want))
                    assert bench.poll() is None, "the bench ended before the reloads did"
                done = rounds(loaders)
                util.wait_for(lambda: rounds(loaders) >= done + 20, 10, what="load after")
                stop_all(loaders)
                bench.wait(40)
            finally:
                halt(loaders)
                if bench.poll() is None:
                    bench.kill()
                    bench.wait()
            benchf.seek(0)
            out = benchf.read().decode(errors="replace")
            assert bench.returncode == 0, out[-2000:]
            run = json.loads(out[out.index("{"):])["run"]
            assert run["requests"] > 0 and run["errors"] == 0, run
            assert run["hits"] == run["keys"], run
            for ld in loaders:
                assert not (ld.set_errors or ld.get_errors or ld.misses or ld.wrong), (
                    ld.set_errors[:3], ld.get_errors[:3], ld.misses[:3], ld.wrong[:3])
            logged = rt.stderr_text().count("cellar-router: reloaded ")
            assert rt.stat("config_reloads") == logged == want == 30, (logged, want)
            assert rt.stat("config_reload_errors") == 0 and rt.stat("errors") == 0

            rt.write_config('{"pools": {"main": {"servers": %s}}, "route": "PoolRoute|nope"'
                            % json.dumps(servers))
            util.wait_for(lambda: rt.stat("config_reload_errors") == 1, 5,
                          what="the invalid config to be refused")
            assert "refusing" in rt.stderr_text()
            assert rt.stat("config_reloads") == 30
            with rt.conn() as c:
                c.send(("get %s\r\n" % " ".join(keys)).encode())
                last = dict(loaders[0].last, **loaders[1].last)
                assert read_get(c) == (last, None)
                c.expect(b"set after 0 0 1\r\nx\r\n", b"STORED\r\n")
                assert c.get("after") == b"x"


def test_bad_clients_leave_the_others_served():
    """While a checking client keeps setting and reading: garbage bytes (text
    and binary), requests cut off by a disconnect, a 3 MB line without a
    newline, 1,000 connections at once (-c 1100: each answered correctly),
    and a client that pipelines gets of a 256 KB value and never reads
    (the router stops reading it: its RSS stays within 128 MB of where it
    started, not the gigabytes asked for).  The checking client sees no
    error, miss or wrong value, and the router stays up."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2200:     # 1,000 of our sockets, and the router raises its own
        assert hard == resource.RLIM_INFINITY or hard >= 2200, "open files limit %d" % hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (2200, hard))
    with backend("b0") as b0, backend("b1") as b1, backend("b2") as b2, backend("b3") as b3:
        with Router(",".join(addrs([b0, b1, b2, b3])), threads=2, conns=1100) as rt:
            keys = ["bad:%d" % i for i in range(40)]
            # Bounded by time (120 s) before count: a fast router finished the
            # default 20,000 rounds before the last phase, which then read as
            # starvation (seen with batched gets).
            watch = Loader(rt.port, keys, batch=4, max_rounds=1000000, max_s=120)
            watch.start()
            rng = random.Random(7)
            try:
                util.wait_for(lambda: watch.rounds >= 20, 10, what="the checking client")

                # Garbage: whatever the router answers, it stays up.
                for junk in (bytes(rng.getrandbits(8) for _ in range(65536)),
                             b"\x80" + bytes(rng.getrandbits(8) for _ in range(65535)),
                             b"get\x00\xff\r\nset k 0 0 -1\r\nbogus a b c\r\n" * 200,
                             b"a" * (3 << 20)):
                    with rt.conn() as c:
                        try:
                            c.send(junk)
                        except OSError:
                            pass                # closed on us: fine
                        c.wait_closed(0.5)
                    assert rt.alive()
                # Half a request, then gone.
                for half in (b"set half 0 0 1000\r\n" + b"x" * 500, b"get half",
                             b"mg half v", b"ms half 100\r\nabc",
                             b"\x80\x01\x00\x04\x08\x00\x00\x00\x00\x00\x00\x10"):
                    with rt.conn() as c:
                        c.send(half)
                with rt.conn() as c:
                    assert c.get("half") is None

                # 1,000 connections at once, each answered.
                set_all(rt.port, {"many": b"many-value"})
                socks = []
                try:
                    for _ in range(1000):
                        socks.append(util.Conn(rt.port, timeout=20))
                    for s in socks:
                        s.send(b"get many\r\n")
                    for s in socks:
                        assert s.read_get_reply() == [(b"many", 0, b"many-value", None)]
                    assert rt.stat("curr_connections") >= 1000
                finally:
                    for s in socks:
                        s.close()
                util.wait_for(lambda: rt.stat("curr_connections") < 10, 10,
                              what="the 1,000 connections to close")

                # A client that never reads: the router must stop reading it.
                set_all(rt.port, {"big": b"B" * (256 << 10)})
                base, starved = rt.rss_kb(), None
                peak = [base]
                lazy = socket.create_connection((util.HOST, rt.port))
                lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                lazy.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
                lazy.setblocking(False)
                # First one read buffer's worth (net's 16 KB) in one segment,
                # so that the router reads it whole; then on until it stops.
                first = b"get big\r\n" * (16384 // 9)
                lazy.setblocking(True)
                lazy.sendall(first)
                lazy.setblocking(False)
                line, asked, stalled = b"get big\r\n" * 1024, len(first) // 9, None
                end = time.monotonic() + 20
                try:
                    while asked < 2000000 and time.monotonic() < end:
                        peak.append(rt.rss_kb())
                        _r, w, _x = select.select([], [lazy], [], 0.05)
                        if not w:
                            stalled = stalled or time.monotonic()
                            if time.monotonic() - stalled > 2.0:
                                break           # the router stopped reading us
                            continue
                        stalled = None
                        try:
                            asked += lazy.send(line) // len(b"get big\r\n")
                        except BlockingIOError:
                            pass
                    assert stalled is not None, "the router read %d gets unanswered" % asked
                    # Served meanwhile; RSS watched for 8 s after the stall (it plateaus
                    # within 2 s of the stall).
                    rounds_now = watch.rounds
                    try:
                        util.wait_for(lambda: (peak.append(rt.rss_kb()), watch.rounds)[1]
                                      >= rounds_now + 20 and time.monotonic() - stalled > 8.0,
                                      12, interval=0.05, what="the checking client meanwhile")
                    except AssertionError:
                        starved = ("checking client: %d rounds in 12 s beside the one that"
                                   " does not read" % (watch.rounds - rounds_now))
                finally:
                    lazy.close()
                assert rt.alive()
            finally:
                halt([watch])
            # 256 requests waiting at most (proxy.c's QUEUE_MAX) x 256 KB = 64 MB.
            grown_mb = (max(peak) - base) / 1024
            problems = [starved] if starved else []
            if grown_mb >= 128:
                problems.append("router grew %.0f MB; %d gets of 256 KB sent, none read"
                                % (grown_mb, asked))
            if watch.exc is not None:
                problems.append("checking client failed after %d rounds: %r"
                                % (watch.rounds, watch.exc))
            if watch.set_errors or watch.get_errors or watch.misses or watch.wrong:
                problems.append("checking client: %r" % ((watch.set_errors[:3],
                                watch.get_errors[:3], watch.misses[:3], watch.wrong[:3]),))
            assert not problems, problems
            watch.stop()
