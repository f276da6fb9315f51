"""cellar-router beside clients that never read their answers: each costs
a bounded number of bytes, the others on the same worker are answered as
fast as without them, and the memory comes back when they go.

The router (-t 1, one worker, one cellard behind a PoolRoute) is given
eight clients that each pipeline 2,000 gets of a 512 KB value and never
read a byte, while one well-behaved client keeps asking for a small value.
What is asserted:

  - the well-behaved client's every answer is right and its p99 stays
    within a few milliseconds (the measured ratio against the same client
    alone is in bench/soak);
  - the router's resident memory grows by less than the documented bound,
    64 MB + clients x (--client-max-bytes + one answer), and `stats`
    shows the clients throttled and the bytes held for them;
  - once they disconnect, bytes_held and requests_inflight go back to 0
    and resident memory to within 10 % of where it was (after a warm-up
    that touched every receive buffer the worker has);
  - a client past --client-hard-max-bytes, and one whose output has not
    moved for --client-output-timeout seconds, is closed and counted,
    while a client that reads slowly is not.

CELLAR_ROUTER and CELLARD are required: a test fails, it is not skipped,
when one is unset.
"""

import socket
import threading
import time

import util
from router_util import Router, backend

BIG = 512 << 10
MB = 1 << 20


class Lazy:
    """A client that pipelines `count` copies of `line` from a thread and
    never reads; close() ends it (the thread's blocked send fails)."""

    def __init__(self, port, line, count):
        self.sock = socket.create_connection((util.HOST, port))
        self.data = line * count
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self):
        try:
            self.sock.sendall(self.data)
        except OSError:
            pass

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)


def timed_gets(port, n, key=b"small", value=b"hello"):
    """n gets of key on one connection, each checked: sorted latencies (s)."""
    lat = []
    with util.Conn(port, timeout=10) as c:
        for _ in range(n):
            t = time.monotonic()
            c.send(b"get " + key + b"\r\n")
            assert c.read_get_reply() == [(key, 0, value, None)]
            lat.append(time.monotonic() - t)
    lat.sort()
    return lat


def warm_up(port):
    """Touch what a worker keeps for any traffic: every receive buffer (full
    16 KB reads of pipelined gets), the reply blocks, the backend's buffers."""
    batch = b"get small\r\n" * 1600
    with util.Conn(port, timeout=10) as c:
        for _ in range(300):
            c.send(batch)
            got = b""
            while got.count(b"END\r\n") < 1600:
                got += c.sock.recv(1 << 20)
    timed_gets(port, 500)


def store(port, items):
    with util.Conn(port, timeout=10) as c:
        for k, v in items.items():
            c.send(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
            assert c.readline() == b"STORED\r\n"


def pct(lat, q):
    return lat[min(len(lat) - 1, int(len(lat) * q))]


def test_eight_clients_that_never_read_cost_bounded_bytes_and_delay_no_one():
    with backend("b0") as b0:
        store(b0.port, {b"big": b"B" * BIG, b"small": b"hello"})
        cfg = '{"pools":{"A":{"servers":["%s:%d"]}},"route":"PoolRoute|A"}' % (util.HOST, b0.port)
        with Router(cfg, threads=1, metrics=True) as rt:
            warm_up(rt.port)
            base = rt.rss_kb()
            alone = timed_gets(rt.port, 2000)
            lazies, peak = [], [base]
            stop = threading.Event()

            def watch():
                while not stop.is_set():
                    peak.append(rt.rss_kb())
                    time.sleep(0.005)
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            try:
                for _ in range(8):
                    lazies.append(Lazy(rt.port, b"get big\r\n", 2000))
                beside = timed_gets(rt.port, 2000)
                # every lazy client has been stopped from reading
                util.wait_for(lambda: rt.stat("clients_throttled") >= 8, 10,
                              what="all eight lazy clients throttled")
                held = rt.stat("bytes_held")
                # each lazy client holds at most its bound plus one answer
                assert held <= 8 * (1 * MB + BIG), held
                assert rt.stat("clients_closed_slow") == 0
                _st, _ct, body = rt.http("GET", "/metrics")
                assert "cellar_router_clients_throttled_total" in body
                assert "cellar_router_bytes_held" in body
                after_lazy = timed_gets(rt.port, 500)
            finally:
                for z in lazies:
                    z.close()
                stop.set()
                watcher.join(5)
            grown = (max(peak) - base) / 1024.0
            bound = 64 + 8 * (1 + BIG / MB)
            print("alone p50/p99 %.3f/%.3f ms; beside 8 lazy p50/p99/max %.3f/%.3f/%.3f ms;"
                  " RSS %d KB at start, grew %.1f MB (bound %.0f MB)"
                  % (pct(alone, .5) * 1e3, pct(alone, .99) * 1e3, pct(beside, .5) * 1e3,
                     pct(beside, .99) * 1e3, beside[-1] * 1e3, base, grown, bound))
            assert grown < bound, "router grew %.1f MB beside 8 lazy clients" % grown
            # no head-of-line blocking once they are throttled
            assert pct(after_lazy, .99) < 0.05, pct(after_lazy, .99)
            util.wait_for(lambda: rt.stat("curr_connections") <= 1, 10,
                          what="the lazy clients to be gone")
            util.wait_for(lambda: rt.stat("bytes_held") == 0 and
                          rt.stat("requests_inflight") == 0, 10,
                          what="bytes_held and requests_inflight back to 0")
            util.wait_for(lambda: rt.rss_kb() <= base * 1.1, 10,
                          what="RSS back within 10%% of %d KB (now %d KB)" % (base, rt.rss_kb()))
            timed_gets(rt.port, 100)


def test_past_the_hard_bound_a_client_is_closed():
    """A multi-get whose answer (8 x 512 KB) is over --client-hard-max-bytes
    (2 MB) closes its client; another client is served meanwhile."""
    with backend("b0") as b0:
        keys = [b"big%d" % i for i in range(8)]
        items = {k: b"H" * BIG for k in keys}
        items[b"small"] = b"hello"
        store(b0.port, items)
        cfg = '{"pools":{"A":{"servers":["%s:%d"]}},"route":"PoolRoute|A"}' % (util.HOST, b0.port)
        with Router(cfg, threads=1, args=["--client-hard-max-bytes", str(2 * MB)]) as rt:
            s = socket.create_connection((util.HOST, rt.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                s.sendall(b"get " + b" ".join(keys) + b"\r\n")
                util.wait_for(lambda: rt.stat("clients_closed_slow") == 1, 10,
                              what="the client over the hard bound closed")
                s.settimeout(10)
                got = 0
                while True:             # whatever was written, then the end
                    try:
                        b = s.recv(1 << 20)
                    except ConnectionResetError:
                        break
                    if not b:
                        break
                    got += len(b)
                assert got < len(keys) * BIG
            finally:
                s.close()
            timed_gets(rt.port, 50)
            util.wait_for(lambda: rt.stat("bytes_held") == 0, 10, what="bytes_held back to 0")


def test_output_timeout_closes_a_client_that_stopped_reading_not_a_slow_one():
    with backend("b0") as b0:
        store(b0.port, {b"big": b"T" * BIG, b"small": b"hello"})
        cfg = '{"pools":{"A":{"servers":["%s:%d"]}},"route":"PoolRoute|A"}' % (util.HOST, b0.port)
        with Router(cfg, threads=1, args=["--client-output-timeout", "2"]) as rt:
            stuck = Lazy(rt.port, b"get big\r\n", 200)
            slow = socket.create_connection((util.HOST, rt.port))
            try:
                slow.sendall(b"get big\r\n" * 12)
                t0 = time.monotonic()
                got, want = 0, 12 * (BIG + len(b"VALUE big 0 524288\r\n\r\nEND\r\n"))
                slow.settimeout(10)
                # 12 answers of 512 KB, read 256 KB every 0.2 s: about 5 s of
                # blocked output that keeps moving, past the 2 s timeout
                while got < want and time.monotonic() - t0 < 30:
                    if rt.stat("clients_closed_slow") == 1:
                        break
                    got += len(slow.recv(256 << 10))
                    time.sleep(0.2)
                util.wait_for(lambda: rt.stat("clients_closed_slow") == 1, 10,
                              what="the client that stopped reading closed")
                stuck.thread.join(10)
                assert not stuck.thread.is_alive(), "the stuck client's send still blocked"
                while got < want:       # the slow one is still served
                    b = slow.recv(1 << 20)
                    assert b, "the slow client was closed after %d bytes" % got
                    got += len(b)
                assert rt.stat("clients_closed_slow") == 1
            finally:
                stuck.close()
                slow.close()
