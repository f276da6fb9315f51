"""mcrouter's LatencyInjectionRoute through cellar-router: a request goes
to its child late (before_latency_ms) and its answer comes back late
(after_latency_ms, or total_latency_ms since it came), while the worker
serves everyone else meanwhile."""

import json
import select
import time

import util
from router_util import Router, backend
from test_router_kinds import pool, run_router


def config(be, **delays):
    return json.dumps({
        "pools": {"a": pool(be)},
        "route": {
            "type": "PrefixSelectorRoute",
            "policies": {"slow:": dict({"type": "LatencyInjectionRoute",
                                        "child": "PoolRoute|a"}, **delays)},
            "wildcard": "PoolRoute|a",
        },
    })


def timed(c, line, want):
    t0 = time.monotonic()
    c.expect(line, want)
    return time.monotonic() - t0


def test_latency_before_after_and_total():
    with backend("be") as be:
        with Router(config(be, before_latency_ms=300, after_latency_ms=200), threads=1) as r, \
                r.conn() as c:
            # the value held through the wait after comes back whole
            assert timed(c, b"set slow:k 5 0 3\r\nabc\r\n", b"STORED\r\n") >= 0.5
            assert timed(c, b"get slow:k\r\n", b"VALUE slow:k 5 3\r\nabc\r\nEND\r\n") >= 0.5
            assert timed(c, b"delete slow:nope\r\n", b"NOT_FOUND\r\n") >= 0.5
            st = r.stats("all")
            assert st["before_latency_injected"] == st["after_latency_injected"] == "3"
            assert st["total_latency_injected"] == "0"
        with Router(config(be, total_latency_ms=400), threads=1) as r, r.conn() as c:
            assert timed(c, b"get slow:k\r\n", b"VALUE slow:k 5 3\r\nabc\r\nEND\r\n") >= 0.4
            assert r.stats("all")["total_latency_injected"] == "1"


def test_latency_waits_hold_up_no_one_else():
    """One worker: while a request waits out its 3 s, another client's
    requests are answered; the waiting one's answer comes after."""
    with backend("be") as be, Router(config(be, before_latency_ms=3000), threads=1) as r, \
            r.conn() as slow, r.conn() as quick:
        t0 = time.monotonic()
        slow.send(b"get slow:x\r\n")
        for i in range(20):
            quick.expect(b"set k%d 0 0 1\r\nv\r\n" % i, b"STORED\r\n")
        readable, _, _ = select.select([slow.sock], [], [], 0)
        assert not readable, "the delayed answer came before the others'"
        slow.expect(b"", b"END\r\n")
        assert time.monotonic() - t0 >= 3.0


def test_latency_client_gone_while_waiting():
    """A client that leaves while its request waits: the router lives on;
    and one that stops while requests wait, before and after, stops cleanly
    (a crash, a sanitizer's report or a bad exit fails the test)."""
    with backend("be") as be, Router(config(be, before_latency_ms=200, after_latency_ms=200),
                                     threads=1) as r:
        with r.conn() as c:
            c.send(b"get slow:a\r\nget slow:b\r\n")
        with r.conn() as c:
            c.expect(b"get slow:c\r\n", b"END\r\n")
            c.expect(b"get plain\r\n", b"END\r\n")
    with backend("be") as be, Router(config(be, before_latency_ms=5000), threads=1) as r, \
            r.conn() as c:
        c.send(b"get slow:waits\r\n")
        util.wait_for(lambda: r.stats("all")["before_latency_injected"] == "1", 10,
                      what="the request waiting")
    with backend("be") as be, Router(config(be, after_latency_ms=5000), threads=1) as r, \
            r.conn() as c:
        c.send(b"get slow:held\r\n")
        util.wait_for(lambda: r.stats("all")["after_latency_injected"] == "1", 10,
                      what="the answer held")


def test_latency_route_refuses_bad_settings():
    with backend("be") as be:
        cfg = json.loads(config(be, before_latency_ms=10))
        cfg["route"]["policies"]["slow:"] = {"type": "LatencyInjectionRoute",
                                             "child": "PoolRoute|a"}
        res = run_router(json.dumps(cfg))
        assert res.returncode == 1 and "needs before_latency_ms" in res.stderr, res.stderr
        cfg["route"]["policies"]["slow:"]["before_latency_ms"] = "ten"
        res = run_router(json.dumps(cfg))
        assert res.returncode == 1 and "before_latency_ms" in res.stderr, res.stderr
        cfg["route"]["policies"]["slow:"] = {"type": "LatencyInjectionRoute",
                                             "child": "PoolRoute|a", "after_latency_ms": 5,
                                             "request_payload_latency": True}
        res = run_router(json.dumps(cfg))
        assert res.returncode == 1 and "request_payload_latency" in res.stderr, res.stderr
