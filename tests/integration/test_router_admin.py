"""cellar-router's own admin answers: `stats servers` (every backend's
state and counters, summed over the workers), `stats` (servers_down,
failovers), the Prometheus text of --metrics over HTTP, `flush_all`
broadcast to every backend, and `version`.

Backends are plain cellard on free ports of 127.0.0.1, asked directly over
raw connections for what the router did; every wait is a bounded poll.
Every process is stopped by pid on the way out, also when a test fails.

CELLAR_ROUTER and CELLARD are required: a test fails, it is not skipped,
when one is unset.
"""

import hashlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time

import pytest

import binproto
import util
from router_util import Router, addrs, backend, need, restart

ROUTER = os.environ.get("CELLAR_ROUTER")


def pool_config(servers, **opts):
    pool = dict({"servers": addrs(servers)}, **opts)
    return json.dumps({"pools": {"main": pool}, "route": "PoolRoute|main"})


KEYS = ["admin:%d" % i for i in range(60)]


def traffic(port, keys=KEYS, conns=4):
    """A set and a get of every key through `conns` connections (so every
    worker sees them); returns {key: error line} for keys that failed."""
    failed = {}
    for n in range(conns):
        with util.Conn(port) as c:
            for k in keys[n::conns]:
                c.send(b"set %s 0 0 1\r\nv\r\nget %s\r\n" % (k.encode(), k.encode()))
                line = c.readline()
                if line != b"STORED\r\n":
                    failed[k] = line
                line = c.readline()
                if line.startswith(b"VALUE "):
                    c.read_exact(3)
                    line = c.readline()
                if line != b"END\r\n":
                    failed[k] = line
    return failed


def held(server, keys):
    """The keys this backend holds (one multi-get, asked directly)."""
    with server.conn() as c:
        c.send(("get %s\r\n" % " ".join(keys)).encode())
        return {k.decode() for k, _f, _v, _c in c.read_get_reply()}


# ---------------------------------------------------------------------------
# stats servers, stats
# ---------------------------------------------------------------------------

def test_stats_servers_up_down_and_back():
    """Every backend `up` after traffic, with its requests counted; a killed
    one `down` once a worker's reconnect is refused (TKO), its keys' errors
    counted, servers_down 1; restarted, the probes bring it back up."""
    b = [backend("be%d" % i) for i in range(3)]
    with b[0], b[1], b[2]:
        cfg = pool_config(b, server_timeout=200, tko_timeouts=2, probe_min_ms=20,
                          probe_max_ms=100)
        with Router(cfg) as r:
            names = addrs(b)
            before = r.servers()
            assert sorted(before) == sorted(names), before
            assert all(before[n]["state"] == "idle" for n in names), before
            assert traffic(r.port) == {}
            after = r.servers()
            for n in names:
                s = after[n]
                assert s["state"] == "up", (n, s)
                assert int(s["requests"]) > 0 and s["replies"] == s["requests"], (n, s)
                assert int(s["errors"]) == int(s["timeouts"]) == int(s["down_fails"]) == 0
                assert int(s["workers_down"]) == 0 and int(s["tko_events"]) == 0
                assert float(s["avg_latency_us"]) >= 0
                assert s["pending_reqs"] == s["inflight_reqs"] == "0", s
            total = sum(int(after[n]["requests"]) for n in names)
            assert total >= 2 * len(KEYS), after
            st = r.stats()
            assert st["servers_down"] == "0" and st["servers"] == "3"
            assert st["failovers"] == "0"
            assert int(st["cmd_get"]) == len(KEYS) and int(st["cmd_set"]) == len(KEYS)

            dead = b[1]
            dead_keys = sorted(held(dead, KEYS))
            assert dead_keys, "no key went to the second backend"
            dead.proc.kill()
            dead.proc.wait()

            def marked_down():
                traffic(r.port, dead_keys, conns=2)
                s = r.servers()
                return s if s[names[1]]["state"] == "down" else None
            s = util.wait_for(marked_down, 10, what="the killed backend to be marked down")
            gone = s[names[1]]
            assert int(gone["tko_events"]) >= 1 and int(gone["workers_down"]) >= 1, gone
            assert int(gone["errors"]) + int(gone["down_fails"]) > 0, gone
            for n in (names[0], names[2]):
                assert s[n]["state"] == "up", (n, s[n])
            assert r.stats()["servers_down"] == "1"
            failed = traffic(r.port, dead_keys, conns=1)
            assert sorted(failed) == dead_keys      # errors, the keys have nowhere else to go
            assert all(v.startswith(b"SERVER_ERROR") for v in failed.values()), failed
            assert int(r.stats()["errors"]) >= len(dead_keys)

            restart(dead)
            util.wait_for(lambda: r.servers()[names[1]]["state"] != "down", 10,
                          what="the probes to revive the backend")
            util.wait_for(lambda: traffic(r.port, dead_keys, conns=2) == {}, 10,
                          what="the revived backend's keys to work")
            util.wait_for(lambda: (r.servers()[names[1]]["state"] == "up"
                                   and r.stats()["servers_down"] == "0"), 10,
                          what="every worker to have the backend back")


def test_stats_servers_binary_and_unknown_groups():
    """The binary STAT with key "servers" gives the same lines; another
    group is an ERROR (text) or not found (binary)."""
    b = [backend("be%d" % i) for i in range(2)]
    with b[0], b[1]:
        with Router(pool_config(b), threads=1) as r:
            assert traffic(r.port, KEYS[:10], conns=1) == {}
            with binproto.BinConn(r.port) as c:
                got = c.stats(b"servers")           # the same lines as text's
                text = r.stats("servers")
                assert sorted(got) == sorted(text) and len(got) == 2, (got, text)
                for n in addrs(b):
                    line = got[n + ":ascii:plain:notcompressed-1000"].decode()
                    assert " up:1" in line and r.servers()[n]["state"] == "up", line
                    assert int(r.servers()[n]["requests"]) > 0
                general = c.stats()
                assert general["servers"] == b"2" and general["servers_down"] == b"0"
                with pytest.raises(KeyError):
                    c.stats(b"slabs")
            with util.Conn(r.port) as c:
                c.expect(b"stats slabs\r\n", b"ERROR\r\n")
                c.expect(b"stats servers now\r\n", b"ERROR\r\n")
                c.expect(b"bogus\r\n", b"ERROR\r\n")         # memcached's words, by default
                c.expect(b"version\r\n", b"VERSION 1.6.18\r\n")
                # mcrouter's groups
                c.send(b"stats version\r\n")
                assert c.read_to(b"END\r\n").startswith(b"STAT mcrouter-version cellar-router ")
                c.send(b"stats cmd-error\r\n")
                got = c.read_to(b"END\r\n")
                assert b"STAT result_error_count 0\r\n" in got and b"cmd_" not in got, got
                c.send(b"stats count\r\n")
                got = c.read_to(b"END\r\n")
                assert b"STAT cmd_get_count " in got and b"result_" not in got, got
                for g in (b"detailed", b"ods"):
                    c.send(b"stats " + g + b"\r\n")
                    assert b"STAT cmd_get_count " in c.read_to(b"END\r\n")
                c.expect(b"stats suspect_servers\r\n", b"END\r\n")      # none down
                c.expect(b"stats external\r\n", b"END\r\n")
        # --mcrouter-errors: mcrouter's words; a line it cannot parse stops the connection
        with Router(pool_config(b), threads=1, args=["--mcrouter-errors"]) as r:
            with util.Conn(r.port) as c:
                c.expect(b"stats slabs\r\n", b"CLIENT_ERROR bad stats command\r\n")
                c.expect(b"bogus\r\n", b"CLIENT_ERROR malformed request\r\n")
                assert not c._fill(time.monotonic() + 5), "the connection should have closed"
            with util.Conn(r.port) as c:
                c.expect(b"get\r\n", b"CLIENT_ERROR malformed request\r\n")


def test_failovers_counted():
    """Requests a FailoverRoute sends on to its gutter count in `stats`'s
    failovers (and stay counted over a reload)."""
    main, gutter = backend("main"), backend("gutter")
    with main, gutter:
        cfg = json.dumps({
            "pools": {"main": {"servers": addrs([main])}, "gutter": {"servers": addrs([gutter])}},
            "route": {"type": "FailoverRoute", "children": ["PoolRoute|main", "PoolRoute|gutter"]}})
        with Router(cfg, threads=1) as r:
            assert traffic(r.port, KEYS[:10], conns=1) == {}
            assert r.stats()["failovers"] == "0"
            main.proc.kill()
            main.proc.wait()
            assert traffic(r.port, KEYS[:10], conns=1) == {}     # all from the gutter
            assert held(gutter, KEYS[:10]) == set(KEYS[:10])
            n = int(r.stats()["failovers"])
            assert n >= 20, n                  # each set and get, once
            assert r.servers()[addrs([main])[0]]["state"] == "down"
            with open(r.config, "a") as f:     # the same config, touched: a reload
                f.write("\n")
            util.wait_for(lambda: r.stats()["config_reloads"] == "1", 10, what="a reload")
            assert traffic(r.port, KEYS[:2], conns=1) == {}
            assert int(r.stats()["failovers"]) >= n + 4
            restart(main)


def test_requests_per_route():
    """`stats routes` counts the requests each route of the tree was given,
    summed over workers: the root (the routing prefixes' RootRoute, then the
    configuration's route) and the normal pool every key, the gutter only
    what failed over; /metrics says the same."""
    main, gutter = backend("main"), backend("gutter")
    with main, gutter:
        cfg = json.dumps({
            "pools": {"main": {"servers": addrs([main])}, "gutter": {"servers": addrs([gutter])}},
            "route": {"type": "FailoverWithExptimeRoute", "normal": "PoolRoute|main",
                      "failover": ["PoolRoute|gutter"], "failover_exptime": 10}})
        with Router(cfg, threads=2, metrics=True) as r:
            assert traffic(r.port, KEYS[:20]) == {}

            def by_label():
                st = r.stats("routes")
                return {k.split(":", 1)[1]: int(v) for k, v in st.items()
                        if k.startswith("route_")}
            got = by_label()
            assert got == {"RootRoute(default=/././)": 40, "FailoverRoute(exptime=10)": 40,
                           "PoolRoute(main)": 40, "PoolRoute(gutter)": 0}, got
            main.proc.kill()
            main.proc.wait()
            assert traffic(r.port, KEYS[:10]) == {}
            got = by_label()
            assert got == {"RootRoute(default=/././)": 60, "FailoverRoute(exptime=10)": 60,
                           "PoolRoute(main)": 60, "PoolRoute(gutter)": 20}, got
            _status, _ctype, body = r.http("GET", "/metrics")
            m = re.findall(r'cellar_router_route_requests_total\{id="\d+",route="([^"]+)"\} '
                           r'(\d+)', body)
            assert {k: int(v) for k, v in m} == got, m
            restart(main)


# ---------------------------------------------------------------------------
# flush_all, version
# ---------------------------------------------------------------------------

def test_flush_all_reaches_every_backend_and_version():
    b = [backend("be%d" % i) for i in range(3)]
    with b[0], b[1], b[2]:
        with Router(pool_config(b), args=["--enable-flush-cmd"]) as r:
            for i, s in enumerate(b):       # directly: every backend holds something
                with s.conn() as c:
                    c.expect(b"set direct%d 0 0 1\r\nx\r\n" % i, b"STORED\r\n")
            assert traffic(r.port, KEYS[:30]) == {}
            assert all(held(s, KEYS[:30] + ["direct%d" % i]) for i, s in enumerate(b))
            with util.Conn(r.port) as c:
                c.expect(b"version\r\n", b"VERSION 1.6.18\r\n")
                c.expect(b"flush_all\r\n", b"OK\r\n")
                c.expect(b"flush_all noreply\r\nversion\r\n", b"VERSION 1.6.18\r\n")
            for i, s in enumerate(b):
                assert held(s, KEYS[:30] + ["direct%d" % i]) == set(), s.name
                assert int(s.stats()["cmd_flush"]) == 2, s.name
            assert r.stats()["cmd_flush"] == "2"
            # with a delay, as mcrouter: the answer once the delay is over and every
            # backend has flushed, in its place among the client's answers
            assert traffic(r.port, KEYS[:30]) == {}
            with util.Conn(r.port) as c:
                t0 = time.monotonic()
                c.expect(b"flush_all 1\r\nget %s\r\n" % KEYS[0].encode(), b"OK\r\nEND\r\n")
                assert time.monotonic() - t0 >= 0.9
            assert all(held(s, KEYS[:30]) == set() for s in b)


def test_flush_all_is_refused_without_enable_flush_cmd():
    """mcrouter's default: flush_all is not sent on (SERVER_ERROR Command
    disabled; binary: EINVAL) unless the router runs with --enable-flush-cmd."""
    b = backend("be")
    with b:
        with Router(pool_config([b])) as r, util.Conn(r.port) as c:
            assert traffic(r.port, KEYS[:10]) == {}
            c.expect(b"flush_all\r\n", b"SERVER_ERROR Command disabled\r\n")
            c.expect(b"flush_all 0 noreply\r\nversion\r\n", b"VERSION 1.6.18\r\n")
            assert r.stats()["cmd_flush"] == "2"
        with Router(pool_config([b])) as r, util.Conn(r.port) as c:  # (the first byte decides)
            text = binproto.TEXT[binproto.EINVAL]
            c.expect(binproto.req(binproto.FLUSH),
                     binproto.HDR.pack(binproto.RES_MAGIC, binproto.FLUSH, 0, 0, 0,
                                       binproto.EINVAL, len(text), 0, 0) + text)
            assert held(b, KEYS[:10]) == set(KEYS[:10])
            assert int(b.stats()["cmd_flush"]) == 0


# ---------------------------------------------------------------------------
# --metrics
# ---------------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                    r'(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
                    r'(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})?'
                    r' ([-+]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|NaN|[-+]Inf))$')
COMMENT = re.compile(r'^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$')


def parse_prometheus(text):
    """{(name, labels): float}; asserts every line is a sample or a HELP/TYPE
    line, each family typed once before its samples."""
    assert text.endswith("\n")
    types, samples = {}, {}
    for line in text[:-1].split("\n"):
        m = COMMENT.match(line)
        if m:
            if m.group(1) == "TYPE":
                assert m.group(2) not in types, "typed twice: %r" % line
                assert m.group(3) in ("counter", "gauge", "summary", "histogram", "untyped")
                types[m.group(2)] = m.group(3)
            continue
        m = SAMPLE.match(line)
        assert m, "not Prometheus text: %r" % line
        name = m.group(1)
        family = name
        for suffix in ("_sum", "_count"):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) == "summary":
                family = name[:-len(suffix)]
        assert family in types, "sample before (or without) its TYPE: %r" % line
        key = (name, m.group(2) or "")
        assert key not in samples, "sample twice: %r" % line
        samples[key] = float(m.group(3))
    return types, samples


def test_metrics_endpoint():
    b = [backend("be%d" % i) for i in range(2)]
    with b[0], b[1]:
        with Router(pool_config(b), metrics=True) as r:
            assert traffic(r.port) == {}
            status, ctype, body = r.http("GET", "/metrics")
            assert status == 200 and ctype.startswith("text/plain; version=0.0.4"), ctype
            types, m = parse_prometheus(body)
            assert types["cellar_router_commands_total"] == "counter"
            assert m[("cellar_router_commands_total", '{cmd="get"}')] == len(KEYS)
            assert m[("cellar_router_commands_total", '{cmd="set"}')] == len(KEYS)
            assert m[("cellar_router_keys_sent_total", "")] == 2 * len(KEYS)
            assert m[("cellar_router_servers", "")] == 2
            assert m[("cellar_router_servers_down", "")] == 0
            assert m[("cellar_router_failovers_total", "")] == 0
            assert types["cellar_router_curr_connections"] == "gauge"
            assert types["cellar_router_server_latency_seconds"] == "summary"
            total = 0
            for n in addrs(b):
                label = '{server="%s"}' % n
                assert m[("cellar_router_server_up", label)] == 1
                assert m[("cellar_router_server_errors_total", label)] == 0
                reqs = m[("cellar_router_server_requests_total", label)]
                assert reqs > 0
                assert m[("cellar_router_server_latency_seconds_count", label)] == reqs
                assert m[("cellar_router_server_latency_seconds_sum", label)] > 0
                total += reqs
            assert total == 2 * len(KEYS)

            # the same numbers as `stats`, and they move with traffic
            st = r.stats()
            assert m[("cellar_router_commands_total", '{cmd="get"}')] == int(st["cmd_get"])
            assert traffic(r.port, KEYS[:10], conns=1) == {}
            _, m2 = parse_prometheus(r.http("GET", "/metrics")[2])
            assert m2[("cellar_router_commands_total", '{cmd="get"}')] == len(KEYS) + 10

            assert r.http("GET", "/metrics?x=1")[0] == 200
            assert r.http("HEAD", "/metrics")[0] == 200
            assert r.http("GET", "/")[0] == 404
            assert r.http("GET", "/metricsx")[0] == 404
            assert r.http("POST", "/metrics")[0] == 405

            # a request that never ends is dropped, and the listener goes on
            s = socket.create_connection((util.HOST, r.metrics_port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.0\r\n")
            s.settimeout(10)
            assert s.recv(100) == b""            # closed after its 1 s read timeout
            s.close()
            with socket.create_connection((util.HOST, r.metrics_port), timeout=10) as g:
                g.sendall(b"garbage\r\n\r\n")
                assert g.recv(100).startswith(b"HTTP/1.0 400 ")
            assert r.http("GET", "/metrics")[0] == 200


def test_metrics_off_by_default_and_in_help():
    out = subprocess.run([need(ROUTER, "CELLAR_ROUTER"), "--help"], capture_output=True,
                         text=True, timeout=10)
    assert out.returncode == 0 and "--metrics" in out.stdout
    with tempfile.NamedTemporaryFile("w", prefix="cellar-ra-", suffix=".conf") as f:
        f.write("127.0.0.1:1\n")
        f.flush()
        for spec in ("nonsense", "127.0.0.1:notaport", "127.0.0.1:"):
            bad = subprocess.run([ROUTER, "--config", f.name, "-p", "0", "--metrics", spec],
                                 capture_output=True, text=True, timeout=10)
            assert bad.returncode == 71 and "--metrics" in bad.stderr, (spec, bad)


def test_async_dir_flags_checked():
    """--async-dir must name a directory the router can write, and
    --async-max-bytes a size of at least 1 KiB: otherwise the router
    refuses to start, saying which flag."""
    out = subprocess.run([need(ROUTER, "CELLAR_ROUTER"), "--help"], capture_output=True,
                         text=True, timeout=10)
    assert "--async-dir" in out.stdout and "--async-max-bytes" in out.stdout
    with tempfile.NamedTemporaryFile("w", prefix="cellar-ra-", suffix=".conf") as f:
        f.write("127.0.0.1:1\n")
        f.flush()
        bad = subprocess.run([ROUTER, "--config", f.name, "-p", "0", "--async-dir",
                              "/nonexistent/spool"], capture_output=True, text=True, timeout=10)
        assert bad.returncode == 1 and "--async-dir /nonexistent/spool" in bad.stderr, bad
        bad = subprocess.run([ROUTER, "--config", f.name, "-p", "0", "--async-dir", f.name],
                             capture_output=True, text=True, timeout=10)
        assert bad.returncode == 1 and "--async-dir" in bad.stderr, bad
        for size in ("12", "-5", "lots"):
            bad = subprocess.run([ROUTER, "--config", f.name, "-p", "0", "--async-max-bytes",
                                  size], capture_output=True, text=True, timeout=10)
            assert bad.returncode == 64 and "--async-max-bytes" in bad.stderr, (size, bad)


# ---------------------------------------------------------------------------
# mcrouter's admin gets
# ---------------------------------------------------------------------------

def test_mcrouter_admin_gets():
    """`get __mcrouter__.route(OP,KEY)` names the servers a request would
    reach, `route_handles(OP,KEY)` the routes it goes through (the key may
    hold commas); hostid, version, config_file, config_md5_digest (of the
    file), config_age and pools (JSON); an unknown name misses.
    Nothing is sent to a backend."""
    b = [backend("be%d" % i) for i in range(2)]
    with b[0], b[1]:
        cfg = json.dumps({"pools": {"A": {"servers": addrs([b[0]])}, "B": {"servers": addrs([b[1]])}},
                          "route": {"type": "OperationSelectorRoute",
                                    "operation_policies": {"set": "AllSyncRoute|Pool|A",
                                                           "get": "PoolRoute|B"},
                                    "default_policy": "NullRoute"}})
        with Router(cfg) as r, util.Conn(r.port) as c:
            def get(key):
                c.send(b"get " + key.encode() + b"\r\n")
                items = c.read_get_reply()
                return items[0][2].decode() if items else None
            a, bb = addrs([b[0]])[0], addrs([b[1]])[0]
            assert get("__mcrouter__.route(set,x,y)") == a
            assert get("__mcrouter__.route(get,x,y)") == bb
            assert get("__mcrouter__.route(delete,x)") == ""
            assert get("__mcrouter__.route_handles(get,k)").split("\r\n") == [
                "root", "  RootRoute(default=/././)", "    OperationSelectorRoute",
                "      PoolRoute(B)", "        " + bb]
            hostid = get("__mcrouter__.hostid")
            assert hostid == str(int(hostid)) and get("__mcrouter__.hostid") == hostid
            assert get("__mcrouter__.version").startswith("cellar-router ")
            assert get("__mcrouter__.config_file") == r.config
            with open(r.config, "rb") as f:
                assert get("__mcrouter__.config_md5_digest") == hashlib.md5(f.read()).hexdigest()
            assert 0 <= int(get("__mcrouter__.config_age")) < 60
            assert json.loads(get("__mcrouter__.pools")) == {"A": [a], "B": [bb]}
            assert get("__mcrouter__.nope") is None
            assert get("__mcrouter__.route(nope,k)") is None
            for s in b:
                assert int(s.stats()["cmd_get"]) == 0, s.name


def test_suspect_servers_and_a_marked_down_server_gone_at_a_reload():
    """mcrouter's suspect_servers counts failures in a row: a refused
    connection is one, the request it failed another.  A reload that no
    longer has the server (same address, another timeout) says so in the log,
    and the new handle has nothing marked down."""
    dead = "%s:%d" % (util.HOST, util.free_port())
    cfg = {"pools": {"a": {"servers": [dead], "server_timeout": 500}}, "route": "PoolRoute|a"}
    with Router(json.dumps(cfg), threads=1) as r, util.Conn(r.port) as c:
        c.send(b"get k\r\n")
        assert c.read_to(b"\r\n").startswith(b"SERVER_ERROR"), "a refused backend"
        c.send(b"stats suspect_servers\r\n")
        assert c.read_to(b"END\r\n") == (
            b"STAT %s status:tko num_failures:2\r\nEND\r\n" % dead.encode())
        cfg["pools"]["a"]["server_timeout"] = 600
        r.write_config(json.dumps(cfg))
        util.wait_for(lambda: "%s was TKO, removed from config" % dead in r.stderr_text(), 10,
                      what="the log line")
        c.expect(b"stats suspect_servers\r\n", b"END\r\n")
