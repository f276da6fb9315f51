"""A backend that accepts and never answers (SIGSTOPped), beside healthy
ones: its first timeouts cost only the requests sent to it.

- libcellar: a multi-get over two servers, one of them stopped, with the
  default window (256 requests in flight).  The stopped server's requests
  stop counting against the window once it has not answered for a moment,
  so the healthy server's keys are all answered, and the call takes one
  server timeout, not one per window's worth of the stopped server's keys.
- cellar-router: a client asking only for keys of the healthy backend is
  answered at once while another client's gets wait on the stopped one.

The stopped servers are always sent SIGCONT before they are stopped for
good, also when a test fails.
"""

import json
import os
import signal
import threading
import time

import cellar_ffi as cf
import util
from router_util import Router, backend

TIMEOUT_MS = 300


def stop(server):
    """SIGSTOP, and wait until every thread of it has stopped."""
    server.proc.send_signal(signal.SIGSTOP)

    def stopped():
        tasks = "/proc/%d/task" % server.pid
        for t in os.listdir(tasks):
            with open("%s/%s/stat" % (tasks, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "T":
                    return False
        return True
    util.wait_for(stopped, 10, interval=0.001, what="%s to stop" % server.name)


def test_libcellar_multiget_with_a_stopped_server_costs_one_timeout():
    with backend("b0") as b0, backend("b1") as b1:
        addrs = ["%s:%d" % (util.HOST, s.port) for s in (b0, b1)]
        with cf.Client(addrs, server_timeout_ms=TIMEOUT_MS, tko_timeouts=100) as c:
            keys = ["hung%d" % i for i in range(1200)]
            home = {k: c.server_of(k) for k in keys}
            assert 400 < sum(1 for k in keys if home[k] == 1) < 800
            for k in keys:
                assert c.set(k, "v" + k) == cf.OK
            try:
                stop(b1)
                t = time.monotonic()
                got = c.mget(keys)
                took = time.monotonic() - t
            finally:
                b1.proc.send_signal(signal.SIGCONT)
            for g, k in zip(got, keys):
                if home[k] == 0:
                    assert g[0] == cf.OK and g[1] == b"v" + k.encode(), (k, g)
                else:
                    assert g[0] == cf.ETIMEDOUT, (k, g)
            # one timeout (and the stall that lets the others by), not two or more
            assert took < 2 * TIMEOUT_MS / 1000, took
            assert c.stats()["timeouts"] == sum(1 for k in keys if home[k] == 1)


def test_router_serves_the_healthy_backend_while_another_hangs():
    with backend("b0") as b0, backend("b1") as b1:
        cfg = json.dumps({"pools": {"A": {"servers": ["%s:%d" % (util.HOST, s.port)
                                                      for s in (b0, b1)],
                                          "server_timeout": 1000}},
                          "route": "PoolRoute|A"})
        with Router(cfg, threads=1) as rt:
            # which keys live where, asked of the backends themselves
            keys = ["rk%d" % i for i in range(200)]
            with util.Conn(rt.port) as c:
                for k in keys:
                    c.send(b"set %s 0 0 1\r\nx\r\n" % k.encode())
                    assert c.readline() == b"STORED\r\n"
            with util.Conn(b1.port) as c:
                on1 = [k for k in keys if c.get(k) is not None]
            on0 = [k for k in keys if k not in on1]
            assert on0 and on1
            waiting = []
            try:
                stop(b1)
                def hung_gets():
                    with util.Conn(rt.port, timeout=30) as c:
                        c.send(b"".join(b"get %s\r\n" % k.encode() for k in on1[:50]))
                        for _ in range(50):
                            waiting.append(c.readline(timeout=30))
                th = threading.Thread(target=hung_gets, daemon=True)
                th.start()
                lat = []
                with util.Conn(rt.port) as c:
                    for i in range(300):
                        k = on0[i % len(on0)]
                        t = time.monotonic()
                        c.send(b"get %s\r\n" % k.encode())
                        assert c.read_get_reply() == [(k.encode(), 0, b"x", None)]
                        lat.append(time.monotonic() - t)
                lat.sort()
                assert lat[int(len(lat) * 0.99)] < 0.1, lat[-5:]
                th.join(30)
            finally:
                b1.proc.send_signal(signal.SIGCONT)
            assert len(waiting) == 50 and all(l.startswith(b"SERVER_ERROR") for l in waiting), \
                waiting[:3]
