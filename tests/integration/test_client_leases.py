"""libcellar's leases and single-flight against cellard and memcached.

Leases: 50 threads, each with its own handle, read one hot key that is
missing; the one that wins the lease "queries the database" (a slow
function counting its calls) and fills the key; the others wait and read
what it stored: the database sees one query.  A delete between the win
and the fill voids the lease.  Single-flight: 50 threads read one key
through one group while the server is slow to answer (a large value
behind a shaped link); the server counts one get.
"""

import threading
import time

import pytest

import cellar_ffi as cf
import util

KINDS = {"cellard": lambda: util.CELLARD, "memcached": lambda: util.MEMCACHED}


def run_threads(n, fn, timeout=30):
    """fn(i) in n threads started together; returns their results (or raises theirs)."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def body(i):
        try:
            barrier.wait(timeout)
            results[i] = fn(i)
        except BaseException as e:      # reported below
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads still running"
    assert not errors, errors[0]
    return results


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fifty_threads_one_fill(kind):
    with util.Server(KINDS[kind]()) as srv:
        clients = [cf.Client([srv], lease_wait_ms=5000) for _ in range(50)]
        queries = []
        lock = threading.Lock()

        def database(key):
            with lock:
                queries.append(key)
            time.sleep(0.2)                 # a slow query
            return b"row-for-" + key

        def reader(i):
            c = clients[i]
            for _ in range(100):            # bounded: WAIT is retried by the library
                rc, state, token, stale, value = c.lease_get("hot", 10)
                assert rc == cf.OK, rc
                if state == cf.LEASE_HIT:
                    return value
                if state == cf.LEASE_WIN:
                    v = database(b"hot")
                    assert c.lease_set("hot", v, token, exptime=300) == cf.OK
                    return v
                assert state == cf.LEASE_WAIT, state
            raise AssertionError("no value after 100 lease-gets")
        try:
            values = run_threads(50, reader)
        finally:
            for c in clients:
                c.close()
        assert queries == [b"hot"]
        assert values == [b"row-for-hot"] * 50
        assert srv.client().get("hot") == b"row-for-hot"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_lease_states_and_a_delete_voids_the_lease(kind):
    with util.Server(KINDS[kind]()) as srv, cf.Client([srv], lease_wait_ms=50) as a, \
            cf.Client([srv], lease_wait_ms=50) as b:
        rc, state, token, stale, value = a.lease_get("k", 10)
        assert (rc, state, value) == (cf.OK, cf.LEASE_WIN, b"") and token > 0
        # Another reader is told to wait, and gives up after lease_wait_ms.
        t = time.monotonic()
        rc, state, *_ = b.lease_get("k", 10)
        assert (rc, state) == (cf.OK, cf.LEASE_WAIT)
        assert 0.04 <= time.monotonic() - t < 1.0
        # A delete between the win and the fill voids the lease.
        assert b.delete("k") == cf.OK
        assert a.lease_set("k", "late", token) in (cf.NOT_FOUND, cf.EXISTS)
        assert a.get("k")[0] == cf.NOT_FOUND
        # A fresh lease fills; then everyone hits.
        rc, state, token, stale, value = a.lease_get("k", 10)
        assert state == cf.LEASE_WIN
        assert a.lease_set("k", "v1", token) == cf.OK
        assert b.lease_get("k", 10)[1:] == (cf.LEASE_HIT, 0, False, b"v1")
        # A token used once is spent: a second fill with it fails.
        assert a.lease_set("k", "v2", token) == cf.EXISTS
        assert a.get("k")[1] == b"v1"


def test_leases_need_meta():
    with util.Server(util.CELLARD) as srv:
        for proto in ("text", "binary"):
            with cf.Client([srv], protocol=proto) as c:
                assert c.lease_get("k", 10)[0] == cf.ENOTSUP
                assert c.lease_set("k", "v", 1) == cf.ENOTSUP


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_single_flight_fifty_threads_one_get(netns, kind):
    (addr,) = netns.start_servers(KINDS[kind](), 1)
    big = b"x" * (512 * 1024)
    with cf.Client([addr]) as c:
        assert c.set("slow", big) == cf.OK
    # 512 KB at 16 Mbit/s: about a quarter second per get.
    netns.shape(rate="16mbit", burst="32kb", limit="256kb")
    clients = [cf.Client([addr], server_timeout_ms=5000) for _ in range(50)]
    try:
        with cf.Flight() as group:
            before = int(util.Conn(addr[1], host=addr[0]).stats()["cmd_get"])
            got = run_threads(50, lambda i: clients[i].get_flight(group, "slow"))
            after = int(util.Conn(addr[1], host=addr[0]).stats()["cmd_get"])
    finally:
        for c in clients:
            c.close()
    assert all(g[0] == cf.OK and g[1] == big for g in got)
    assert after - before == 1, (before, after)


def test_lease_fill_example_computes_once():
    """examples/lease_fill: three processes started together on a missing key;
    one wins the lease and computes, the others print what it stored."""
    import os
    import subprocess
    exe = os.path.join(os.environ.get("CELLAR_EXAMPLES") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "examples"), "lease_fill")
    with util.Server(util.CELLARD) as srv:
        servers = "127.0.0.1:%d" % srv.port
        procs = [subprocess.Popen([exe, servers, "user:42"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(3)]
        outs = []
        try:
            for p in procs:
                out, err = p.communicate(timeout=20)
                assert p.returncode == 0, err
                outs.append(out.decode())
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        computed = [o for o in outs if o.startswith("computed user:42")]
        assert len(computed) == 1, outs
        value = computed[0].split(": ", 1)[1].rsplit(" (", 1)[0]
        assert all(o == "user:42: %s\n" % value for o in outs if o not in computed), outs
