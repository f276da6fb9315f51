"""cellar-squeal against a real PostgreSQL 15 that each test starts (initdb
into a temp dir, as the postgres user when run as root; no TCP port, the
unix socket in that dir; wal_level=logical) and stops, also on failure.

The clusters are cellard processes; what reached them is read back from
them directly.  The daemon logs a line per commit with -v ("commit
<end_lsn>: key ..."), which the ordering test reads.  It is started with
--create-slot (a first start) unless a test says otherwise, and with
--metrics where a test reads /metrics.  A failing test prints the
daemon's log (less the per-commit lines).

CELLAR_SQUEAL (cellar-squeal) is required: the tests fail, not skip,
without it.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

import util

SQUEAL = os.environ.get("CELLAR_SQUEAL")
PGBIN = "/usr/lib/postgresql/15/bin"
HELPER = os.path.join(os.path.dirname(__file__), "..", "..", "src", "squeal",
                      "cellar_squeal.sql")


def need_squeal():
    assert SQUEAL, "CELLAR_SQUEAL is not set (make integration sets it)"
    return SQUEAL


class Postgres:
    """A throwaway cluster: initdb, a unix socket in its own dir, stopped and
    removed on exit."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cellar-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.port = 54329               # names the socket file only: no TCP
        self.started = False

    def _as_pg(self, argv):
        return (["runuser", "-u", "postgres", "--"] + argv) if os.getuid() == 0 else argv

    def __enter__(self):
        try:
            if os.getuid() == 0:
                shutil.chown(self.dir, "postgres", "postgres")
            subprocess.run(self._as_pg([PGBIN + "/initdb", "-D", self.data, "-U", "postgres",
                                        "-A", "trust", "-E", "UTF8", "--no-sync",
                                        "--no-instructions"]),
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
                f.write("listen_addresses = ''\nport = %d\nunix_socket_directories = '%s'\n"
                        "wal_level = logical\nmax_replication_slots = 8\nmax_wal_senders = 8\n"
                        "fsync = off\nfull_page_writes = off\n" % (self.port, self.dir))
            subprocess.run(self._as_pg([PGBIN + "/pg_ctl", "-D", self.data, "-l",
                                        os.path.join(self.dir, "server.log"), "-w", "-t", "30",
                                        "start"]),
                           check=True, capture_output=True, timeout=60)
            self.started = True
            return self
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        if self.started:
            subprocess.run(self._as_pg([PGBIN + "/pg_ctl", "-D", self.data, "-m", "immediate",
                                        "-w", "stop"]), capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def dsn(self):
        return "host=%s port=%d user=postgres dbname=postgres" % (self.dir, self.port)

    def sql(self, text, background=False):
        argv = [PGBIN + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-h", self.dir,
                "-p", str(self.port), "-U", "postgres", "-d", "postgres"]
        if background:      # the caller writes the script to its stdin
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        r = subprocess.run(argv, input=text, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def slot_caught_up(self, slot="cellar_squeal"):
        """The slot's confirmed position has reached the WAL's current end."""
        return self.sql("SELECT confirmed_flush_lsn >= pg_current_wal_lsn() FROM "
                        "pg_replication_slots WHERE slot_name = '%s'" % slot) == "t"


def server_list(servers):
    """A cluster's server list: one server, or a list of them."""
    if not isinstance(servers, (list, tuple)):
        servers = [servers]
    return ",".join("127.0.0.1:%d" % s.port for s in servers)


class Squeal:
    """cellar-squeal over pg to clusters {name: server or [servers]};
    stopped by pid with SIGTERM on exit (a crash, a bad exit or a needed
    SIGKILL fails the test).  create: --create-slot (a first start);
    metrics: --metrics on a free port, read with metrics()."""

    def __init__(self, pg, clusters, extra=(), create=True, metrics=False):
        self.argv = [need_squeal(), "--dsn", pg.dsn, "-v"] + [
            a for name, s in clusters.items() for a in ("--cluster", "%s=%s" %
                                                       (name, server_list(s)))] + list(extra)
        if create:
            self.argv.append("--create-slot")
        self.metrics_port = None
        if metrics:
            self.metrics_port = util.free_port()
            self.argv += ["--metrics", "127.0.0.1:%d" % self.metrics_port]
        self.errf = tempfile.NamedTemporaryFile(prefix="cellar-squeal-", suffix=".log",
                                                delete=False)
        self.proc = None

    def metrics(self):
        """/metrics as {name{labels}: value}, checked line by line against the
        text format (a HELP and a TYPE before each family's samples)."""
        with socket.create_connection(("127.0.0.1", self.metrics_port), timeout=10) as c:
            c.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            data = b""
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.decode().partition("\r\n\r\n")
        assert head.startswith("HTTP/1.0 200"), head
        assert "text/plain; version=0.0.4" in head, head
        out, typed = {}, set()
        for ln in body.splitlines():
            if ln.startswith("# TYPE "):
                typed.add(ln.split()[2])
                continue
            if ln.startswith("#") or not ln:
                continue
            name, value = ln.rsplit(" ", 1)
            family = re.sub(r"_(bucket|sum|count)$", "", name.split("{")[0])
            assert family in typed or name.split("{")[0] in typed, ln
            out[name] = float(value)
        return out

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self.errf,
                                     stderr=self.errf)
        try:
            util.wait_for(lambda: "following slot" in self.log() or self.proc.poll() is not None,
                          30, what="cellar-squeal to start")
            assert self.proc.poll() is None, self.log()
        except BaseException:       # __exit__ will not run: stop it here
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            raise
        return self

    def log(self):
        with open(self.errf.name, errors="replace") as f:
            return f.read()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, *exc):
        try:
            if exc_type is not None:    # shown with the failure: the lines that are not per commit
                print("cellar-squeal's log:\n" + "".join(
                    ln + "\n" for ln in self.log().splitlines()
                    if not re.match(r"cellar-squeal: (commit|confirmed) ", ln))[-6000:])
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    rc = self.proc.wait(15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
                    rc = "killed"
                if exc_type is None:
                    assert rc == 0, "cellar-squeal exit %s: %s" % (rc, self.log()[-2000:])
            elif exc_type is None and self.proc.returncode not in (0, -9):
                raise AssertionError("cellar-squeal died (%s): %s" % (self.proc.returncode,
                                                                     self.log()[-2000:]))
        finally:
            os.unlink(self.errf.name)


def set_keys(server, keys, value=b"cached"):
    with server.conn() as c:
        c.send(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k.encode(), len(value), value)
                        for k in keys))
        for k in keys:
            assert c.readline() == b"STORED\r\n", k


def present(server, keys):
    with server.conn() as c:
        c.send(("get %s\r\n" % " ".join(keys)).encode())
        return sorted(k.decode() for k, _f, _v, _c in c.read_get_reply())


@pytest.fixture
def pg():
    with Postgres() as p:
        p.sql("CREATE TABLE users (id int PRIMARY KEY, name text);\n" + open(HELPER).read() +
              "\nCREATE TRIGGER users_squeal AFTER INSERT OR UPDATE OR DELETE ON users "
              "FOR EACH ROW EXECUTE FUNCTION cellar_squeal_invalidate('user:', 'id');")
        yield p


def test_commits_reach_every_cluster_rollbacks_nothing_bad_keys_skipped(pg):
    """A committed update deletes its key from both clusters; a rolled-back
    one deletes nothing; a message with bad keys (over 250 bytes, a control
    byte) delivers its good keys, logs and skips the bad; another prefix and
    a non-transactional message deliver nothing."""
    with util.Server(name="cluster-a") as a, util.Server(name="cluster-b") as b, \
            Squeal(pg, {"a": a, "b": b}) as sq:
        pg.sql("INSERT INTO users SELECT g, 'n' FROM generate_series(1, 6) g")
        util.wait_for(lambda: pg.slot_caught_up(), 20, what="the inserts to be confirmed")
        keys = ["user:%d" % i for i in range(1, 7)] + ["other"]
        for s in (a, b):
            set_keys(s, keys)
        pg.sql("BEGIN; UPDATE users SET name = 'rolled' WHERE id = 2; ROLLBACK;")
        pg.sql("SELECT pg_logical_emit_message(true, 'elsewhere', 'user:5')")
        pg.sql("SELECT pg_logical_emit_message(false, 'squeal', 'user:6')")
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'user:3 ' || repeat('x', 251) "
               "|| ' bad' || chr(1) || 'key  user:4')")
        pg.sql("BEGIN; UPDATE users SET name = 'x' WHERE id = 1; COMMIT;")
        want = ["other", "user:2", "user:5", "user:6"]
        for s in (a, b):
            util.wait_for(lambda: present(s, keys) == want, 20,
                          what="user:1, 3, 4 deleted from %s" % s.name)
        util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot to be confirmed")
        for s in (a, b):
            assert present(s, keys) == want
        log = sq.log()
        assert log.count("skipping a bad key") == 2, log
        assert "ignoring a non-transactional message" in log, log


def test_markers_deleted_with_their_keys(pg):
    """With --markers a committed key's remote marker (r:<key>, as
    libcellar's cellar_remote_mark sets it) is deleted with it; other
    markers stay."""
    with util.Server(name="cluster") as c, Squeal(pg, {"c": c}, ["--markers"]):
        set_keys(c, ["user:7", "r:user:7", "r:user:8"])
        pg.sql("INSERT INTO users VALUES (7, 'n')")
        util.wait_for(lambda: present(c, ["user:7", "r:user:7", "r:user:8"]) == ["r:user:8"],
                      20, what="the key and its marker deleted")


def test_delivered_in_commit_order(pg):
    """Transaction A emits first and commits second; B emits second and
    commits first: B's keys are delivered before A's, at increasing LSNs."""
    with util.Server(name="cluster") as c, Squeal(pg, {"c": c}) as sq:
        a = pg.sql("", background=True)
        a.stdin.write("BEGIN;\nSELECT pg_logical_emit_message(true, 'squeal', 'order:a');\n"
                      "SELECT pg_sleep(1);\nCOMMIT;\n")
        a.stdin.close()
        try:
            util.wait_for(lambda: pg.sql("SELECT count(*) FROM pg_stat_activity WHERE "
                                         "query LIKE '%pg_sleep(1)%' AND state = 'active' AND "
                                         "pid <> pg_backend_pid()") == "1",
                          20, what="A to be inside its transaction")
            pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'order:b')")
        finally:
            a.wait(30)
        assert a.returncode == 0
        lines = util.wait_for(lambda: [m for m in re.findall(r"commit ([0-9A-F]+)/([0-9A-F]+): "
                                                            r"(order:\w)", sq.log())]
                              if "order:a" in sq.log() else None, 20, what="both commits")
        assert [k for _hi, _lo, k in lines] == ["order:b", "order:a"], lines
        lsns = [(int(hi, 16) << 32) | int(lo, 16) for hi, lo, _k in lines]
        assert lsns == sorted(lsns) and lsns[0] < lsns[1], lines


OUTAGE_S = 20
COMMITS = 500


def deleted_from_cluster(servers, keys):
    """Every key was set on each server of the cluster; a key deleted from
    the cluster is gone from the server it hashes to, so none may be left
    on all of them."""
    left = set(keys)
    for s in servers:
        left &= set(present(s, keys))
    return not left


def lag_buckets(m, cluster, before=None):
    """The lag histogram of a cluster from /metrics as [(le, count)], less
    the counts of an earlier scrape."""
    out = []
    for name, v in m.items():
        g = re.match(r'cellar_squeal_delete_lag_seconds_bucket\{cluster="%s",le="([^"]+)"\}$'
                     % cluster, name)
        if g:
            out.append((float(g.group(1)), v - (before or {}).get(name, 0.0)))
    return sorted(out)


def test_cluster_stopped_20s_others_unaffected_and_it_gets_every_delete(pg):
    """Two clusters of two cellard.  Both servers of b are stopped (SIGSTOP:
    connections accepted, nothing answered) for 20 s while 500 transactions
    commit, one key each.  a's deletes do not wait for b: a's commit-to-
    delete lag during the outage stays within 10 ms at p99 (/metrics'
    histogram; --report's exact distribution is printed).  b's deletes go to
    its spool, the slot is confirmed past them, the log and /metrics say b
    stopped answering and is spooled; once b runs again (SIGCONT) its spool
    is replayed (log and /metrics) and every key is gone from b too."""
    spool = tempfile.mkdtemp(prefix="cellar-squeal-spool-")
    report = os.path.join(spool, "report.json")
    keys = ["out:%d" % i for i in range(COMMITS)]
    try:
        with util.Server(name="a1") as a1, util.Server(name="a2") as a2, \
                util.Server(name="b1") as b1, util.Server(name="b2") as b2:
            for s in (a1, a2, b1, b2):
                set_keys(s, keys)
            sq = Squeal(pg, {"a": [a1, a2], "b": [b1, b2]},
                        ["--async-dir", spool, "--report", report], metrics=True)
            with sq:
                m0 = sq.metrics()
                for s in (b1, b2):
                    s.proc.send_signal(signal.SIGSTOP)
                stopped = time.monotonic()
                try:
                    w = pg.sql("", background=True)
                    w.stdin.write("".join("SELECT pg_logical_emit_message(true, 'squeal', '%s');"
                                          "\nSELECT pg_sleep(0.034);\n" % k for k in keys))
                    w.stdin.close()
                    assert w.wait(OUTAGE_S + 30) == 0, w.stderr.read()
                    util.wait_for(lambda: deleted_from_cluster([a1, a2], keys), 20,
                                  what="a's 500 deletes")
                    util.wait_for(lambda: pg.slot_caught_up(), 30,
                                  what="the slot confirmed past b's spooled deletes")
                    # the outage's length is the scenario, not a synchronisation
                    time.sleep(max(0.0, stopped + OUTAGE_S - time.monotonic()))
                    m1 = sq.metrics()
                    assert time.monotonic() - stopped >= OUTAGE_S
                finally:
                    for s in (b1, b2):
                        s.proc.send_signal(signal.SIGCONT)
                outage_s = time.monotonic() - stopped
                lag = lag_buckets(m1, "a", m0)
                total = lag[-1][1]
                within_10ms = dict(lag)[0.01]
                print("a's lag during b's %.1f s outage (/metrics, %d transactions): %s" %
                      (outage_s, total, ", ".join("<=%gs %d" % (le, n) for le, n in lag
                                                  if le <= 1.0)))
                assert total >= COMMITS, lag
                assert within_10ms >= 0.99 * total, lag
                assert m1['cellar_squeal_cluster_up{cluster="b"}'] == 0, m1
                assert m1['cellar_squeal_cluster_up{cluster="a"}'] == 1, m1
                assert m1['cellar_squeal_outages_total{cluster="b"}'] >= 1, m1
                assert m1['cellar_squeal_spooled_total{cluster="b"}'] > 0, m1
                assert m1['cellar_squeal_spool_depth{cluster="b"}'] > 0, m1
                assert m1['cellar_squeal_spool_bytes{cluster="b"}'] > 0, m1
                assert m1['cellar_squeal_spooled_total{cluster="a"}'] == 0, m1
                assert m1['cellar_squeal_deletes_total{cluster="a"}'] >= COMMITS, m1
                assert m1['cellar_squeal_errors_total{cluster="b"}'] > 0, m1
                assert m1["cellar_squeal_confirmed_lsn"] >= m1["cellar_squeal_received_lsn"] > 0
                log = sq.log()
                assert "cluster b stopped answering" in log, log
                assert "cluster b: spooling its deletes" in log, log
                assert "cluster a stopped answering" not in log, log

                util.wait_for(lambda: deleted_from_cluster([b1, b2], keys), 30,
                              what="the spooled deletes to reach b")
                # (the spool's depth drops a moment before its replayed count rises)
                m2 = util.wait_for(lambda: (lambda m: m if m['cellar_squeal_spool_depth'
                                                             '{cluster="b"}'] == 0 and
                                            m['cellar_squeal_replayed_total{cluster="b"}'] >=
                                            m1['cellar_squeal_spooled_total{cluster="b"}'] and
                                            m['cellar_squeal_cluster_up{cluster="b"}'] == 1
                                            else None)(sq.metrics()), 20,
                                   what="b's spool replayed and b up in /metrics")
                assert m2['cellar_squeal_replays_total{cluster="b"}'] >= 1, m2
                util.wait_for(lambda: "cluster b: replay done" in sq.log(), 20,
                              what="the replay's end in the log")
                log = sq.log()
                print("".join(ln + "\n" for ln in log.splitlines() if "cluster b" in ln))
                assert "cluster b: replay started" in log and "cluster b answers again" in log, log
                # the outage, then its end, each said once
                assert log.count("cluster b stopped answering") == 1, log
                assert log.count("cluster b answers again") == 1, log
                for s in (a1, a2, b1, b2):      # nothing but deletes happened
                    assert len(present(s, keys)) < COMMITS
            with open(report) as f:
                rep = json.load(f)["per_cluster"]
            print("--report, cluster a: p50 %d us, p90 %d us, p99 %d us, max %d us, within 1 ms "
                  "%.1f%%, within 10 ms %.1f%% (%d transactions)" %
                  (rep["a"]["p50_us"], rep["a"]["p90_us"], rep["a"]["p99_us"],
                   rep["a"]["max_us"], 100 * rep["a"]["within_1ms"],
                   100 * rep["a"]["within_10ms"], rep["a"]["measured"]))
            assert rep["a"]["measured"] >= COMMITS and rep["a"]["p99_us"] <= 10000, rep
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def lose_the_slot(pg, c):
    """A slot that was followed (one commit confirmed to cluster c), then
    dropped as a failover loses it; c holds a key "stale" meanwhile."""
    with Squeal(pg, {"c": c}):
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'first')")
        util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot confirmed")
    pg.sql("SELECT pg_drop_replication_slot('cellar_squeal')")
    set_keys(c, ["stale"])


def slot_confirmed(pg, slot="cellar_squeal"):
    return pg.sql("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '%s'"
                  % slot)


def lsn_ge(pg, a, b):
    return pg.sql("SELECT '%s'::pg_lsn >= '%s'::pg_lsn" % (a, b)) == "t"


def test_full_spool_stops_confirmation_and_loses_nothing(pg):
    """b stops answering and its spool (--async-max-bytes 200: three
    records) fills: the log says SPOOL FULL, /metrics shows it, a still
    gets every delete, and the slot is not confirmed past what b could
    not take, however far the stream has been read.  Once b answers
    again its spool is replayed, the deletes held are sent, the slot is
    confirmed to the end, and every key is gone from b."""
    spool = tempfile.mkdtemp(prefix="cellar-squeal-spool-")
    keys = ["full:%d" % i for i in range(30)]
    try:
        with util.Server(name="cluster-a") as a, util.Server(name="cluster-b") as b:
            for s in (a, b):
                set_keys(s, keys + ["kept"])
            sq = Squeal(pg, {"a": a, "b": b},
                        ["--async-dir", spool, "--async-max-bytes", "200"], metrics=True)
            with sq:
                b.proc.send_signal(signal.SIGSTOP)
                try:
                    for k in keys[:20]:
                        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', '%s')" % k)
                    util.wait_for(lambda: present(a, keys[:20]) == [], 20,
                                  what="a's first 20 deletes")
                    util.wait_for(lambda: "SPOOL FULL" in sq.log(), 30, what="SPOOL FULL")
                    m = util.wait_for(lambda: (lambda m: m if m['cellar_squeal_spool_full'
                                                                 '{cluster="b"}'] == 1
                                               else None)(sq.metrics()), 10,
                                      what="spool_full in /metrics")
                    assert 0 < m['cellar_squeal_spool_bytes{cluster="b"}'] <= 200, m
                    held = slot_confirmed(pg)
                    for k in keys[20:]:
                        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', '%s')" % k)
                    end = pg.sql("SELECT pg_current_wal_lsn()")
                    util.wait_for(lambda: present(a, keys) == [], 20, what="all of a's deletes")
                    m = util.wait_for(lambda: (lambda m: m if m["cellar_squeal_received_lsn"] >=
                                               m["cellar_squeal_confirmed_lsn"] > 0 and
                                               m['cellar_squeal_taken_lsn{cluster="a"}'] >
                                               m["cellar_squeal_confirmed_lsn"] else None)(
                                                   sq.metrics()), 10,
                                      what="a ahead of the confirmed position")
                    # read and delivered to a, yet not confirmed: b holds it
                    assert not lsn_ge(pg, slot_confirmed(pg), end), (held, end)
                finally:
                    b.proc.send_signal(signal.SIGCONT)
                util.wait_for(lambda: present(b, keys) == [], 30, what="every delete at b")
                util.wait_for(lambda: lsn_ge(pg, slot_confirmed(pg), end), 30,
                              what="the slot confirmed past the held deletes")
                util.wait_for(lambda: "cluster b: replay done" in sq.log(), 20,
                              what="the replay's end")
                log = sq.log()
                assert "its spool takes deletes again" in log, log
                m = sq.metrics()
                assert m['cellar_squeal_spool_full{cluster="b"}'] == 0, m
                assert m['cellar_squeal_spool_full_total{cluster="b"}'] >= 1, m
                for s in (a, b):
                    assert present(s, keys + ["kept"]) == ["kept"]
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def test_sigkill_and_restart_lose_nothing(pg):
    """200 one-key transactions, 10 ms apart; the daemon is killed with
    SIGKILL once some of their deletes have arrived, and started again
    after the writer is done: every key is deleted (at least once)."""
    keys = ["kill:%d" % i for i in range(200)]
    with util.Server(name="cluster") as c:
        set_keys(c, keys)
        sq = Squeal(pg, {"c": c})
        with sq:
            w = pg.sql("", background=True)
            w.stdin.write("".join("BEGIN; SELECT pg_logical_emit_message(true, 'squeal', '%s'); "
                                  "COMMIT; SELECT pg_sleep(0.01);\n" % k for k in keys))
            w.stdin.close()
            try:
                util.wait_for(lambda: len(present(c, keys)) < 190, 30, what="some deletes")
                sq.kill9()
                assert present(c, keys), "every delete arrived before the kill: nothing tested"
            finally:
                w.wait(60)
            assert w.returncode == 0
            sq.start()
            util.wait_for(lambda: present(c, keys) == [], 30, what="every key after the restart")
            util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot confirmed")


def test_synchronous_standby_does_not_deadlock(pg):
    """With synchronous_standby_names = '*' the daemon's walsender is the
    synchronous standby: a commit stays invisible until the daemon confirms
    it, so waiting for visibility before delivering would deadlock.  The
    wait is bounded: the key is deleted, the commit returns, and the daemon
    says why it did not wait."""
    with util.Server(name="cluster") as c, Squeal(pg, {"c": c}) as sq:
        set_keys(c, ["user:1"])
        pg.sql("ALTER SYSTEM SET synchronous_standby_names = '*'; SELECT pg_reload_conf();")
        try:
            util.wait_for(lambda: pg.sql("SELECT count(*) FROM pg_stat_replication WHERE "
                                         "application_name = 'cellar_squeal' AND "
                                         "sync_state = 'sync'") == "1", 20,
                          what="the daemon's walsender to be the synchronous standby")
            w = pg.sql("", background=True)
            w.stdin.write("INSERT INTO users VALUES (1, 'a');\n")
            w.stdin.close()
            assert w.wait(30) == 0, w.stderr.read()
            util.wait_for(lambda: present(c, ["user:1"]) == [], 20, what="user:1 deleted")
            assert "synchronous standby" in sq.log(), sq.log()
        finally:
            pg.sql("ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf();")


def test_stream_reconnects_after_a_server_restart(pg):
    """PostgreSQL restarts under the daemon: the stream ends, the daemon
    connects again (with a backoff), says so, counts it in /metrics, and
    delivers what commits afterwards."""
    with util.Server(name="cluster") as c, Squeal(pg, {"c": c}, metrics=True) as sq:
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'before')")
        util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot confirmed")
        subprocess.run(pg._as_pg([PGBIN + "/pg_ctl", "-D", pg.data, "-l",
                                  os.path.join(pg.dir, "server.log"), "-m", "fast", "-w",
                                  "restart"]), check=True, capture_output=True, timeout=60)
        util.wait_for(lambda: "following slot cellar_squeal again" in sq.log(), 30,
                      what="the daemon to follow the slot again")
        set_keys(c, ["after"])
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'after')")
        util.wait_for(lambda: present(c, ["after"]) == [], 20, what="a commit after it")
        m = sq.metrics()
        assert m["cellar_squeal_stream_reconnects_total"] >= 1, m


def test_second_daemon_on_the_slot_is_refused(pg):
    with util.Server(name="cluster") as c, Squeal(pg, {"c": c}):
        r = subprocess.run(Squeal(pg, {"c": c}).argv, capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, r
        assert "already followed by another process" in r.stderr, r.stderr


def test_bad_arguments():
    for argv, what in (([], "--dsn is required"), (["--dsn", "x"], "give at least one --cluster"),
                       (["--dsn", "x", "--cluster", "nameless"], "NAME=CONFIG"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--slot", "Bad-Slot"],
                        "--slot and --publication"),
                       (["--dsn", "x", "--cluster", "a/b=127.0.0.1:1"], "NAME=CONFIG"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--cluster",
                         "a=127.0.0.1:2"], "given twice"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--async-max-bytes",
                         "1k"], "give --async-dir"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--async-max-bytes",
                         "0"], "--async-max-bytes takes"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--on-lost-slot",
                         "ignore"], "--on-lost-slot takes fail or flush"),
                       (["--dsn", "x", "--cluster", "a=127.0.0.1:1", "--metrics", "nope"],
                        "--metrics expected HOST:PORT")):
        r = subprocess.run([need_squeal()] + argv, capture_output=True, text=True, timeout=10)
        assert r.returncode in (1, 64) and what in r.stderr, (argv, r)


def test_missing_slot_is_lost(pg):
    """The slot the daemon followed is gone at its next start (a failover
    to a standby, which has no copy of logical slots; here dropped): the
    invalidations since its position are lost.  Without --create-slot the
    daemon says so (SLOT ... IS LOST) and exits with status 3, making
    nothing; with --on-lost-slot flush it makes the slot again, flushes every
    cluster before any later delete, counts it in /metrics, and delivers
    what commits afterwards."""
    with util.Server(name="cluster") as c:
        lose_the_slot(pg, c)
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'stale')")   # lost with it

        r = subprocess.run(Squeal(pg, {"c": c}, create=False).argv, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 3, r
        assert "SLOT cellar_squeal IS LOST (missing)" in r.stderr, r.stderr
        assert pg.sql("SELECT count(*) FROM pg_replication_slots") == "0"
        assert present(c, ["stale"]) == ["stale"]

        with Squeal(pg, {"c": c}, ["--on-lost-slot", "flush"], create=False,
                    metrics=True) as sq:
            assert "SLOT cellar_squeal IS LOST (missing)" in sq.log(), sq.log()
            util.wait_for(lambda: "flushed cluster c" in sq.log(), 20, what="the flush")
            assert present(c, ["stale"]) == []
            m = sq.metrics()
            assert m["cellar_squeal_slot_lost_total"] == 1, m
            assert m['cellar_squeal_flushes_total{cluster="c"}'] == 1, m
            set_keys(c, ["after"])
            pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'after')")
            util.wait_for(lambda: present(c, ["after"]) == [], 20, what="a commit after it")


def test_lost_slot_made_again_and_clusters_flushed(pg):
    """The slot is invalidated while the daemon is stopped (WAL past
    max_slot_wal_keep_size, then a checkpoint): an invalidation inside the
    lost WAL can never arrive.  By default (--on-lost-slot fail) the daemon
    refuses to start, saying why, with status 3; with --on-lost-slot flush
    it makes the slot again, flushes every cluster (the stale key is gone),
    says so loudly, and delivers what commits afterwards."""
    with util.Server(name="cluster") as c:
        with Squeal(pg, {"c": c}):
            pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'first')")
            util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot confirmed")
        set_keys(c, ["stale", "after"])
        pg.sql("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'; SELECT pg_reload_conf();")
        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'stale')")

        def lost():
            pg.sql("CREATE TABLE IF NOT EXISTS filler (v text); "
                   "INSERT INTO filler SELECT repeat('x', 200) FROM generate_series(1, 20000); "
                   "SELECT pg_switch_wal(); CHECKPOINT;")
            return pg.sql("SELECT wal_status FROM pg_replication_slots "
                          "WHERE slot_name = 'cellar_squeal'") == "lost"
        util.wait_for(lost, 60, interval=0, what="the slot to be invalidated")

        r = subprocess.run(Squeal(pg, {"c": c}).argv, capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 3, r
        assert "SLOT cellar_squeal IS LOST (invalidated" in r.stderr, r.stderr
        assert present(c, ["stale", "after"]) == ["after", "stale"]

        with Squeal(pg, {"c": c}, ["--on-lost-slot", "flush"]) as sq:
            assert "IS LOST" in sq.log(), sq.log()
            util.wait_for(lambda: "flushed cluster c" in sq.log(), 20, what="the flush")
            assert present(c, ["stale", "after"]) == []
            set_keys(c, ["after"])
            pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'after')")
            util.wait_for(lambda: present(c, ["after"]) == [], 20, what="a commit after it")


def lookaside_driver():
    examples = os.environ.get("CELLAR_EXAMPLES")
    assert examples, "CELLAR_EXAMPLES is not set (make integration sets it)"
    return os.path.join(examples, "lookaside")


def cache_agrees_with_table(pg, server, rows):
    """Every row:<id> the cache holds has the table's version."""
    table = dict(ln.split("|") for ln in pg.sql("SELECT id, version FROM lookaside").split())
    with server.conn() as c:
        c.send(("get %s\r\n" % " ".join("row:%d" % i for i in range(1, rows + 1))).encode())
        cached = {k.decode()[4:]: v.decode().split(":")[0] for k, _f, v, _c in c.read_get_reply()}
    assert cached, "nothing cached"
    wrong = {k: (v, table[k]) for k, v in cached.items() if v != table[k]}
    assert not wrong, wrong


@pytest.mark.parametrize("invalidate", ["app", "squeal"])
def test_lookaside_example_serves_nothing_stale(pg, invalidate):
    """examples/lookaside's driver with leases, rows invalidated by the
    application or by the table's trigger and cellar-squeal: reads hit the
    cache, no read returns a version older than a commit by more than 2 s,
    no cache request fails, and once the slot has caught up every cached
    row holds the table's version."""
    rows = 100
    pg.sql("CREATE TABLE lookaside (id bigint PRIMARY KEY, version bigint NOT NULL, "
           "value text NOT NULL); INSERT INTO lookaside SELECT i, 1, 'row ' || i "
           "FROM generate_series(1, %d) i;" % rows)
    if invalidate == "squeal":
        pg.sql("CREATE TRIGGER lookaside_squeal AFTER UPDATE ON lookaside FOR EACH ROW "
               "EXECUTE FUNCTION cellar_squeal_invalidate('row:', 'id')")
    with util.Server(name="cache") as srv, Squeal(pg, {"main": srv}) as _sq:
        r = subprocess.run([lookaside_driver(), "--dsn", pg.dsn, "--config",
                            "127.0.0.1:%d" % srv.port, "--threads", "8", "--seconds", "2",
                            "--warmup", "0.5", "--rate", "2000", "--rows", str(rows),
                            "--write-fraction", "0.05", "--query-us", "1000", "--leases",
                            "--invalidate", invalidate, "--stale-bound-ms", "2000"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        import json
        res = json.loads(r.stdout)
        assert res["writes"] > 0 and res["hits"] > 0 and res["db_reads"] > 0, res
        assert res["hits"] + res["db_reads"] >= res["reads"], res
        assert res["stale_reads"] == 0 and res["cache_failures"] == 0, res
        assert res["invalidations"] == (res["writes"] if invalidate == "app" else 0), res
        util.wait_for(lambda: pg.slot_caught_up(), 20, what="the slot to be confirmed")
        cache_agrees_with_table(pg, srv, rows)


def test_a_spool_left_for_a_server_taken_out_holds_up_nothing(pg):
    """Deletes spooled for s2 while it was stopped, then the cluster is
    configured without s2: no server of it replays that file, so its depth
    never falls.  New deletes wait for the replay (commit order) only while
    it moves: within seconds they go on to s1, and the log says why."""
    spool = tempfile.mkdtemp(prefix="cellar-squeal-spool-")
    keys = ["gone:%d" % i for i in range(40)]
    try:
        with util.Server(name="s1") as s1, util.Server(name="s2") as s2:
            with Squeal(pg, {"c": [s1, s2]}, ["--async-dir", spool]) as sq:
                s2.proc.send_signal(signal.SIGSTOP)
                try:
                    for k in keys:
                        pg.sql("SELECT pg_logical_emit_message(true, 'squeal', '%s')" % k)
                    util.wait_for(lambda: "spooling its deletes" in sq.log(), 30,
                                  what="s2's deletes spooled")
                    util.wait_for(lambda: pg.slot_caught_up(), 30,
                                  what="the slot confirmed past them")
                finally:
                    s2.proc.send_signal(signal.SIGCONT)
            set_keys(s1, ["later"])
            with Squeal(pg, {"c": [s1]}, ["--async-dir", spool], create=False) as sq2:
                pg.sql("SELECT pg_logical_emit_message(true, 'squeal', 'later')")
                util.wait_for(lambda: present(s1, ["later"]) == [], 20,
                              what="the new delete to reach s1")
                assert "replay has not moved" in sq2.log(), sq2.log()
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def test_a_lost_slot_is_followed_only_after_every_cluster_flushed(pg):
    """--on-lost-slot flush with a cluster that cannot be flushed (nothing
    listens): the daemon stopped meanwhile drops the slot it made, so the
    next start finds the slot lost again and flushes; the stale value goes."""
    with util.Server(name="cluster") as c:
        lose_the_slot(pg, c)

        class Nobody:
            port = util.free_port()
        sq = Squeal(pg, {"c": Nobody}, ["--on-lost-slot", "flush"], create=False)
        # (started by hand, not with start(): it never says "following slot"
        # while it cannot flush; Squeal.__exit__ stops it, whatever happens)
        sq.proc = subprocess.Popen(sq.argv, stdin=subprocess.DEVNULL, stdout=sq.errf,
                                   stderr=sq.errf)
        try:
            util.wait_for(lambda: "flushing cluster c" in sq.log(), 20,
                          what="the flush failing and retried")
            assert pg.sql("SELECT count(*) FROM pg_replication_slots "
                          "WHERE slot_name = 'cellar_squeal'") == "1"
            log = sq.log()
            assert "following slot" not in log, log
            sq.proc.send_signal(signal.SIGTERM)
            util.wait_for(lambda: sq.proc.poll() is not None, 15, what="the daemon to stop")
            assert sq.proc.returncode == 0, sq.log()
            assert "dropping the new slot" in sq.log(), sq.log()
        finally:
            sq.__exit__(*sys.exc_info())
        assert pg.sql("SELECT count(*) FROM pg_replication_slots "
                      "WHERE slot_name = 'cellar_squeal'") == "0"
        with Squeal(pg, {"c": c}, ["--on-lost-slot", "flush"], create=False) as sq2:
            util.wait_for(lambda: present(c, ["stale"]) == [], 20,
                          what="the stale key flushed on the next start")
            assert "IS LOST (missing)" in sq2.log()
