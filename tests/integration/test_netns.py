"""netns.Netns and the `netns` fixture: servers in a network namespace behind
a veth link, reachable from here; a link cut makes timeouts, never
refusals or resets; tc tbf shaping slows transfers to about its rate;
everything (namespace, veth, processes) is gone afterwards, also when the
body raised.  Needs root and iproute2; the whole file runs in a few seconds.
"""

import concurrent.futures
import errno
import json
import os
import socket
import subprocess
import time

import pytest
from pymemcache.client.base import Client

import netns as netns_mod
import util
from netns import Netns, NetnsError



def _client(addr, timeout):
    return Client(addr, connect_timeout=timeout, timeout=timeout, default_noreply=False)


def _route_dev(ip):
    r = json.loads(subprocess.run(["ip", "-j", "route", "get", ip], check=True,
                                  stdout=subprocess.PIPE).stdout)
    return r[0].get("dev"), r[0].get("gateway")


def _dead(pid):
    """No /proc/<pid>, or a zombie: a stray child that outlived its parent is
    reparented to init, which here reaps about once a second."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _assert_gone(ns, pids):
    assert ns.name not in netns_mod.namespaces()
    assert not netns_mod.link_exists(ns.veth), ns.veth
    for pid in pids:
        assert _dead(pid), "pid %d still runs" % pid
    out = subprocess.run(["ip", "-j", "addr", "show", "to", str(ns.subnet)], check=True,
                         stdout=subprocess.PIPE).stdout
    assert not any(e.get("addr_info") for e in json.loads(out or b"[]")), out
    dev, _gw = _route_dev(ns.host_ip)
    assert dev != ns.veth


def _timed(fn):
    t = time.monotonic()
    try:
        fn()
    except Exception as e:
        return e, time.monotonic() - t
    return None, time.monotonic() - t


def test_reachable_and_independent(netns_factory):
    a, b = netns_factory(), netns_factory()
    assert a.name != b.name and a.veth != b.veth and a.subnet != b.subnet
    addrs = a.start_servers(util.CELLARD, 2)
    (addr_b,) = b.start_servers(util.CELLARD, 1)
    assert len(set(addrs)) == 2 and all(ip == a.host_ip for ip, _ in addrs)
    assert _route_dev(a.host_ip) == (a.veth, None)
    assert _route_dev(b.host_ip) == (b.veth, None)
    clients = [_client(addr, 0.5) for addr in addrs + [addr_b]]
    for i, c in enumerate(clients):
        c.set("k", b"v%d" % i)
    for i, c in enumerate(clients):
        assert c.get("k") == b"v%d" % i
    # The servers really run inside: their own network namespace, not ours.
    mine = os.readlink("/proc/self/ns/net")
    for s in a.servers + b.servers:
        assert os.readlink("/proc/%d/ns/net" % s.pid) != mine
    # Link up, nobody listening: refused at once (the contrast to a cut link).
    err, took = _timed(lambda: socket.create_connection((a.host_ip, 1), timeout=5))
    assert isinstance(err, ConnectionRefusedError), err
    assert took < 1.0
    # Cutting a's link leaves b's alone.
    a.link_down()
    assert clients[2].get("k") == b"v2"
    err, _took = _timed(lambda: clients[0].get("k"))
    assert isinstance(err, socket.timeout), repr(err)
    a.link_up()
    assert clients[0].get("k") == b"v0"
    for c in clients:
        c.close()


def test_link_down_times_out_then_recovers(netns):
    (addr,) = netns.start_servers(util.CELLARD, 1)
    c = _client(addr, 0.5)
    c.set("k", b"before")
    assert c.get("k") == b"before"

    netns.link_down()
    # At once and side by side: an established connection (the request
    # vanishes, the read times out), and new connections, raw and through
    # pymemcache (the SYNs vanish, connect times out).  3.2 s is past when a
    # failed ARP resolution would have ended a connect with EHOSTUNREACH.
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        established = pool.submit(_timed, lambda: c.get("k"))
        raw = pool.submit(_timed, lambda: socket.create_connection(addr, timeout=3.2).close())
        fresh = pool.submit(_timed, lambda: _client(addr, 1.0).get("k"))
        for fut, lo, hi in ((established, 0.45, 1.5), (raw, 3.15, 4.5), (fresh, 0.95, 2.0)):
            err, took = fut.result()
            assert isinstance(err, socket.timeout), repr(err)
            assert not isinstance(err, (ConnectionRefusedError, ConnectionResetError))
            assert getattr(err, "errno", None) not in (errno.ECONNREFUSED, errno.EHOSTUNREACH,
                                                       errno.ENETUNREACH)
            assert lo <= took < hi, (took, lo, hi)

    netns.link_up()
    # The same client reconnects; the server and its data are still there.
    err, took = _timed(lambda: c.get("k"))
    assert err is None, repr(err)
    assert c.get("k") == b"before"
    assert took < 0.5
    c.close()


def test_shape_limits_rate(netns):
    (addr,) = netns.start_servers(util.CELLARD, 1)
    c = _client(addr, 10)
    value = b"x" * 500000
    keys = ["v%d" % i for i in range(8)]          # 8 x 500 kB = 4 MB back
    for k in keys:
        c.set(k, value)

    def fetch():
        t = time.monotonic()
        got = c.get_many(keys)
        took = time.monotonic() - t
        assert sorted(got) == keys and all(v == value for v in got.values())
        return took

    plain = fetch()
    rate_bps, burst = 64e6, 64 * 1024
    netns.shape(rate="64mbit", burst="64kb", limit="256kb")
    shaped = fetch()
    floor = (len(keys) * len(value) - burst) * 8 / rate_bps    # about 0.49 s
    assert shaped >= 0.9 * floor, (shaped, floor)
    assert shaped < 5.0, shaped
    # Faster than the shaped link could ever carry it: the shaping was not there.
    # (Not "half the shaped time": with other tests running beside this one an
    # unshaped fetch has taken 0.28 s against a shaped 0.52.)
    assert plain < 0.9 * floor, (plain, floor)
    (tbf,) = [q for q in netns.qdisc_stats() if q.get("kind") == "tbf"]
    assert tbf["bytes"] >= len(keys) * len(value), tbf

    netns.unshape()
    assert not [q for q in netns.qdisc_stats() if q.get("kind") == "tbf"]
    again = fetch()
    assert again < 0.9 * floor, (again, floor)
    c.close()


def test_gone_after_exit():
    with Netns() as ns:
        ns.start_servers(util.CELLARD, 2)
        other = ns.popen([util.MEMCACHED, "-l", ns.host_ip, "-p", "12000", "-U", "0"]
                         + util.root_args(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        pids = [s.pid for s in ns.servers] + [other.pid]
        assert ns.name in netns_mod.namespaces() and netns_mod.link_exists(ns.veth)
        assert all(os.path.exists("/proc/%d" % p) for p in pids)
    _assert_gone(ns, pids)


def test_gone_when_body_raises():
    with pytest.raises(RuntimeError, match="body failed"):
        with Netns() as ns:
            ns.start_servers(util.CELLARD, 2)
            pids = [s.pid for s in ns.servers]
            ns.shape(rate="10mbit")
            ns.link_down()            # and left down
            raise RuntimeError("body failed")
    _assert_gone(ns, pids)


def test_crash_and_stray_process_reported_and_cleaned():
    with pytest.raises(NetnsError) as info:
        with Netns() as ns:
            ns.start_servers(util.CELLARD, 1)
            server = ns.servers[0]
            server.proc.kill()
            server.proc.wait()
            # A child the tracked shell leaves behind when it is stopped.
            sh = ns.popen(["sh", "-c", "sleep 60 & wait"])

            def stray():
                pids = subprocess.run(["ip", "netns", "pids", ns.name], check=True,
                                      stdout=subprocess.PIPE).stdout.split()
                return [int(p) for p in pids if int(p) != sh.pid]
            (sleeper,) = util.wait_for(stray, 5.0, what="sleep inside the namespace")
    msg = str(info.value)
    assert "died before it was stopped" in msg, msg
    assert "pid %d was still in the namespace" % sleeper in msg, msg
    _assert_gone(ns, [server.pid, sh.pid, sleeper])
