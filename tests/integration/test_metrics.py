"""cellard --metrics: `stats` as Prometheus text (doc/metrics.md).

A known sequence of commands, then `stats`, `stats items` and `stats
slabs`, /metrics, and the three again on the same quiet connection: every
exported value must equal what `stats` said (a value `stats` itself moves,
such as bytes_written or uptime, must lie between the two readings).  The
page is parsed with Debian's python3-prometheus-client.  Also: other paths
and methods, the option's refusals, -o metrics=, and no port when off.
"""

import os
import socket
import subprocess

from prometheus_client.parser import text_string_to_metric_families

import util
from util import CELLARD, HOST, Server


def connect(port):
    """The listener starts a moment after the memcache port accepts: wait for it."""
    return util.wait_for(lambda: _try_connect(port), 5, what="the metrics port")


def _try_connect(port):
    try:
        return socket.create_connection((HOST, port), timeout=10)
    except ConnectionRefusedError:
        return None


def http(port, method="GET", path="/metrics"):
    with connect(port) as s:
        s.sendall(("%s %s HTTP/1.0\r\n\r\n" % (method, path)).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return status, head.decode(), body.decode()


def samples(body):
    """{(sample name, frozenset of labels): value}, and {family: type}."""
    out, types = {}, {}
    for fam in text_string_to_metric_families(body):
        types[fam.name] = fam.type
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, key
            out[key] = s.value
    return out, types


def num(v):
    return float(v)


# memcached_exporter's names for `stats` lines (no labels)
EXPORTER_GENERAL = {
    "memcached_uptime_seconds": "uptime",
    "memcached_time_seconds": "time",
    "memcached_process_user_cpu_seconds_total": "rusage_user",
    "memcached_process_system_cpu_seconds_total": "rusage_system",
    "memcached_read_bytes_total": "bytes_read",
    "memcached_written_bytes_total": "bytes_written",
    "memcached_current_connections": "curr_connections",
    "memcached_max_connections": "max_connections",
    "memcached_connections_total": "total_connections",
    "memcached_connections_rejected_total": "rejected_connections",
    "memcached_connections_yielded_total": "conn_yields",
    "memcached_connections_listener_disabled_total": "listen_disabled_num",
    "memcached_accepting_connections": "accepting_conns",
    "memcached_current_bytes": "bytes",
    "memcached_limit_bytes": "limit_maxbytes",
    "memcached_current_items": "curr_items",
    "memcached_items_total": "total_items",
    "memcached_items_evicted_total": "evictions",
    "memcached_items_reclaimed_total": "reclaimed",
    "memcached_item_too_large_total": "store_too_large",
    "memcached_item_no_memory_total": "store_no_memory",
    "memcached_lru_crawler_items_checked_total": "crawler_items_checked",
    "memcached_lru_crawler_reclaimed_total": "crawler_reclaimed",
    "memcached_lru_crawler_moves_to_cold_total": "moves_to_cold",
    "memcached_lru_crawler_moves_to_warm_total": "moves_to_warm",
    "memcached_lru_crawler_moves_within_lru_total": "moves_within_lru",
    "memcached_direct_reclaims_total": "direct_reclaims",
}

# per class, from `stats items`
EXPORTER_ITEMS = {
    "memcached_slab_current_items": "number",
    "memcached_slab_hot_items": "number_hot",
    "memcached_slab_warm_items": "number_warm",
    "memcached_slab_cold_items": "number_cold",
    "memcached_slab_hot_age_seconds": "age_hot",
    "memcached_slab_warm_age_seconds": "age_warm",
    "memcached_slab_items_age_seconds": "age",
    "memcached_slab_mem_requested_bytes": "mem_requested",
    "memcached_slab_items_evicted_total": "evicted",
    "memcached_slab_items_evicted_nonzero_total": "evicted_nonzero",
    "memcached_slab_items_evicted_time_seconds": "evicted_time",
    "memcached_slab_items_outofmemory_total": "outofmemory",
    "memcached_slab_items_tailrepairs_total": "tailrepairs",
    "memcached_slab_items_reclaimed_total": "reclaimed",
    "memcached_slab_items_expired_unfetched_total": "expired_unfetched",
    "memcached_slab_items_evicted_unfetched_total": "evicted_unfetched",
    "memcached_slab_items_crawler_reclaimed_total": "crawler_reclaimed",
    "memcached_slab_items_moves_to_cold": "moves_to_cold",
    "memcached_slab_items_moves_to_warm": "moves_to_warm",
    "memcached_slab_items_moves_within_lru": "moves_within_lru",
}

# per class, from `stats slabs`
EXPORTER_SLABS = {
    "memcached_slab_chunk_size_bytes": "chunk_size",
    "memcached_slab_chunks_per_page": "chunks_per_page",
    "memcached_slab_current_pages": "total_pages",
    "memcached_slab_current_chunks": "total_chunks",
    "memcached_slab_chunks_used": "used_chunks",
    "memcached_slab_chunks_free": "free_chunks",
    "memcached_slab_chunks_free_end": "free_chunks_end",
}


def expect_between(got, name, s1, s2, what):
    a, b = num(s1[name]), num(s2[name])
    assert min(a, b) <= got <= max(a, b), (what, name, got, s1[name], s2[name])


def run_commands(c):
    c.expect(b"set a 0 0 1\r\n1\r\n", b"STORED\r\n")
    c.expect(b"set big 0 0 3000\r\n%s\r\n" % (b"x" * 3000), b"STORED\r\n")
    c.expect(b"add a 0 0 1\r\n2\r\n", b"NOT_STORED\r\n")
    c.expect(b"set n 0 0 2\r\n10\r\n", b"STORED\r\n")
    c.send(b"get a big nosuch\r\n")
    c.read_to(b"END\r\n")
    c.expect(b"get nosuch2\r\n", b"END\r\n")
    c.expect(b"incr n 5\r\n", b"15\r\n")
    c.expect(b"incr nosuch 1\r\n", b"NOT_FOUND\r\n")
    c.expect(b"decr n 1\r\n", b"14\r\n")
    c.expect(b"decr nosuch 1\r\n", b"NOT_FOUND\r\n")
    c.expect(b"touch a 100\r\n", b"TOUCHED\r\n")
    c.expect(b"touch nosuch 100\r\n", b"NOT_FOUND\r\n")
    c.send(b"gets a\r\n")
    cas = int(c.read_to(b"END\r\n").split(b"\r\n")[0].split()[4])
    c.expect(b"cas a 0 0 1 %d\r\n3\r\n" % (cas + 1), b"EXISTS\r\n")
    c.expect(b"cas a 0 0 1 %d\r\n3\r\n" % cas, b"STORED\r\n")
    c.expect(b"cas nosuch 0 0 1 1\r\n3\r\n", b"NOT_FOUND\r\n")
    c.expect(b"delete big\r\n", b"DELETED\r\n")
    c.expect(b"delete nosuch\r\n", b"NOT_FOUND\r\n")
    c.expect(b"flush_all\r\n", b"OK\r\n")
    c.expect(b"get a\r\n", b"END\r\n")
    c.expect(b"set after 0 0 1\r\n1\r\n", b"STORED\r\n")
    c.expect(b"get after\r\n", b"VALUE after 0 1\r\n1\r\nEND\r\n")


def test_metrics_equal_stats():
    mport = util.free_port()
    with Server(args=["-t", "2", "--metrics", "%s:%d" % (HOST, mport)]) as srv, \
            srv.conn() as c:
        run_commands(c)
        s1, i1, l1 = c.stats(), c.stats("items"), c.stats("slabs")
        status, head, body = http(mport)
        s2, i2, l2 = c.stats(), c.stats("items"), c.stats("slabs")
    assert status == 200 and "text/plain; version=0.0.4" in head, head
    m, types = samples(body)

    lines = body.splitlines()

    def get(name, **labels):
        key = (name, frozenset(labels.items()))
        if key not in m and not name.endswith("_total"):
            # the parser names a counter's sample <name>_total; the page itself
            # keeps the exporter's name (memcached_uptime_seconds...)
            assert any(l.startswith((name + " ", name + "{")) for l in lines), name
            key = (name + "_total", key[1])
        assert key in m, (key, sorted(k for k in m if k[0] == name))
        return m[key]

    assert get("memcached_up") == 1
    assert get("memcached_version", version=s1["version"]) == 1
    for name, stat in EXPORTER_GENERAL.items():
        expect_between(get(name), stat, s1, s2, "stats")
    # the commands, by outcome, as the exporter derives them
    for op in ("get", "delete", "incr", "decr", "cas", "touch"):
        assert get("memcached_commands_total", command=op, status="hit") == num(s1[op + "_hits"])
        assert get("memcached_commands_total", command=op, status="miss") == \
            num(s1[op + "_misses"])
    assert get("memcached_commands_total", command="cas", status="badval") == \
        num(s1["cas_badval"])
    assert get("memcached_commands_total", command="flush", status="hit") == \
        num(s1["cmd_flush"]) == 1
    cas_all = sum(num(s1[k]) for k in ("cas_misses", "cas_hits", "cas_badval"))
    assert get("memcached_commands_total", command="set", status="hit") == \
        num(s1["cmd_set"]) - cas_all
    # the sequence did what it says, so the comparison is not between zeros
    assert num(s1["get_hits"]) == 4 and num(s1["get_misses"]) == 3
    assert num(s1["cas_badval"]) == 1 and num(s1["touch_misses"]) == 1
    # a few of cellard's own
    assert get("cellard_commands_total", command="get") == num(s1["cmd_get"])
    assert get("cellard_commands_total", command="meta") == num(s1["cmd_meta"])
    assert get("cellard_get_flushed_total") == num(s1["get_flushed"])
    assert get("cellard_threads") == num(s1["threads"]) == 2
    assert get("cellard_hash_power_level") == num(s1["hash_power_level"])
    # per worker: they add up to the totals
    for fam, stat in (("cellard_worker_read_bytes_total", "bytes_read"),
                      ("cellard_worker_written_bytes_total", "bytes_written")):
        total = sum(v for (n, _), v in m.items() if n == fam)
        expect_between(total, stat, s1, s2, fam)
    wget = sum(v for (n, lab), v in m.items()
               if n == "cellard_worker_commands_total" and ("command", "get") in lab)
    assert wget == num(s1["cmd_get"])
    # per slab class: stats items and stats slabs
    classes = {k.split(":")[1] for k in i1}
    assert classes, i1
    for cls in classes:
        for name, field in EXPORTER_ITEMS.items():
            key = "items:%s:%s" % (cls, field)
            expect_between(get(name, slab=cls), key, i1, i2, "stats items")
        for lru, field in (("hot", "hits_to_hot"), ("warm", "hits_to_warm"),
                           ("cold", "hits_to_cold"), ("temporary", "hits_to_temp")):
            assert get("memcached_slab_lru_hits_total", slab=cls, lru=lru) == \
                num(i1["items:%s:%s" % (cls, field)])
    sclasses = {k.split(":")[0] for k in l1 if ":" in k}
    assert sclasses, l1
    for cls in sclasses:
        for name, field in EXPORTER_SLABS.items():
            expect_between(get(name, slab=cls), "%s:%s" % (cls, field), l1, l2, "stats slabs")
        for op in ("get", "delete", "incr", "decr", "cas", "touch"):
            assert get("memcached_slab_commands_total", slab=cls, command=op, status="hit") == \
                num(l1["%s:%s_hits" % (cls, op)])
        assert get("memcached_slab_commands_total", slab=cls, command="set", status="hit") == \
            num(l1[cls + ":cmd_set"]) - num(l1[cls + ":cas_hits"]) - num(l1[cls + ":cas_badval"])
    assert get("memcached_malloced_bytes") == num(l1["total_malloced"])
    # every numeric stat is somewhere: a named family or cellard_<stat>
    values = set(m.values())
    for k, v in s1.items():
        if k in ("pid", "pointer_size", "version", "libevent"):
            continue
        try:
            f = float(v)
        except ValueError:
            continue
        if s1[k] == s2[k]:
            assert f in values, (k, v)
    # names follow the conventions: counters end in _total but the exporter's own
    for fam, typ in types.items():
        assert fam.startswith(("memcached_", "cellard_")), fam


def test_metrics_paths_and_methods():
    mport = util.free_port()
    with Server(args=["--metrics", "%s:%d" % (HOST, mport)]):
        assert http(mport)[0] == 200
        assert http(mport, path="/metrics?x=1")[0] == 200
        assert http(mport, "HEAD")[0] == 200
        assert http(mport, path="/")[0] == 404
        assert http(mport, path="/metricsx")[0] == 404
        assert http(mport, "POST")[0] == 405
        # a client that sends half a request holds nobody else for long
        s = connect(mport)
        s.sendall(b"GET /metrics HTTP/1.0\r\n")
        assert http(mport)[0] == 200
        s.close()


def test_metrics_suboption():
    mport = util.free_port()
    with Server(args=["-o", "metrics=%s:%d" % (HOST, mport)]) as srv:
        status, _, body = http(mport)
        assert status == 200
        m, _ = samples(body)
        assert m[("memcached_limit_bytes", frozenset())] == \
            num(srv.stats()["limit_maxbytes"])


def run_bad(*args):
    return subprocess.run([CELLARD, "-p", "0", "-U", "0"] + util.root_args() + list(args),
                          capture_output=True, text=True, timeout=10)


def test_metrics_bad_address_refused():
    for spec in ("nonsense", "127.0.0.1:", "127.0.0.1:notaport", "127.0.0.1:99999",
                 "127.0.0.1:0", "::1:80", "[::1:80"):
        for argv in (["--metrics", spec], ["--metrics=" + spec], ["-o", "metrics=" + spec]):
            r = run_bad(*argv)
            assert r.returncode == 1 and "--metrics" in r.stderr and spec in r.stderr, (argv, r)
    r = run_bad("--metrics")
    assert r.returncode == 1 and "'--metrics' requires an argument" in r.stderr, r
    # a well-formed address that cannot be bound: refused at start
    with socket.socket() as held:
        held.bind((HOST, 0))
        held.listen(1)
        r = run_bad("--metrics", "%s:%d" % (HOST, held.getsockname()[1]))
        assert r.returncode == 71 and "--metrics" in r.stderr, r
    r = run_bad("--metrics", "no.such.host.invalid:9150")
    assert r.returncode == 71 and "--metrics" in r.stderr, r


def listening_ports(pid):
    """The TCP ports pid listens on, from /proc."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                p = line.split()
                if p[3] == "0A" and p[9] in inodes:
                    ports.add(int(p[1].rsplit(":", 1)[1], 16))
    return ports


def test_metrics_off_by_default_and_in_help():
    out = subprocess.run([CELLARD, "-h"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0 and "--metrics=<host:port>" in out.stdout
    assert "- metrics:" in out.stdout
    with Server() as srv:
        assert listening_ports(srv.proc.pid) == {srv.port}
    mport = util.free_port()
    with Server(args=["--metrics", ":%d" % mport]) as srv:
        assert http(mport)[0] == 200
        assert listening_ports(srv.proc.pid) == {srv.port, mport}
