"""Transient items (-o temporary_ttl, `lru temp_ttl`: memcached's TEMP LRU),
`lru mode`, and `lru_crawler crawl`, each against memcached 1.6.18.

What is compared is what memcached makes deterministic: the answers, the
names `stats items` prints in each mode, how many items sit in TEMP, and
what has been reclaimed once a background pass is done.  Which pass takes
an expired item (the LRU maintainer: reclaimed; the crawler:
crawler_reclaimed) is a race in memcached, so where both run their sum is
compared.  Every wait polls a condition (the server's stats, or the clock
passing an item's expiry); nothing sleeps a fixed time.
"""

import time

from util import CELLARD, MEMCACHED, Server, wait_for


def _both(fn):
    """fn(binary) for the server under test and memcached: (ours, theirs)."""
    return fn(CELLARD), fn(MEMCACHED)


def _same(fn):
    ours, ref = _both(fn)
    assert ours == ref, "under test %r\nmemcached  %r" % (ours, ref)
    return ref


def _class_names(st, cls):
    prefix = "items:%d:" % cls
    return [k[len(prefix):] for k in st if k.startswith(prefix)]


def _wait_clock_past(t):
    wait_for(lambda: time.time() > t, 10, interval=0.05, what="the clock to pass %.1f" % t)


def test_stats_items_names_in_each_mode():
    # number_hot/warm/cold and age_hot/warm come with the LRU maintainer,
    # number_temp only with temp_lru, as memcached prints them.
    for args in ([], ["-o", "temporary_ttl=61"], ["-o", "no_modern"],
                 ["-o", "no_lru_maintainer"]):
        def names(binary):
            with Server(binary, args=args) as srv, srv.conn() as c:
                c.expect(b"set k 0 0 1\r\nx\r\n", b"STORED\r\n")
                return _class_names(c.stats("items"), 1)
        ref = _same(names)
        assert ("number_temp" in ref) == (args == ["-o", "temporary_ttl=61"]), (args, ref)


def test_short_ttl_items_live_in_temp_and_are_reclaimed():
    def run(binary):
        with Server(binary, args=["-o", "temporary_ttl=61"]) as srv, srv.conn() as c:
            t0 = time.time()
            c.expect(b"set t1 0 1 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"set t2 0 61 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"set l 0 62 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"set n 0 0 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"get t2\r\n", b"VALUE t2 0 1\r\nx\r\nEND\r\n")
            st = c.stats("items")
            first = {k: st["items:1:" + k] for k in ("number", "number_temp")}
            general = c.stats()
            first["hits_to_temp"] = st["items:1:hits_to_temp"]
            first["temp_lru"] = c.stats("settings")["temp_lru"]
            _wait_clock_past(t0 + 2.1)
            wait_for(lambda: c.stats()["curr_items"] == "3", 10, interval=0.05,
                     what="%s to reclaim t1" % binary)
            st = c.stats("items")
            general = c.stats()
            after = {k: st["items:1:" + k] for k in ("number", "number_temp", "expired_unfetched")}
            after["reaped"] = int(general["reclaimed"]) + int(general["crawler_reclaimed"])
            c.expect(b"get t1\r\n", b"END\r\n")
            after["get_expired"] = c.stats()["get_expired"]
            return first, after
    first, after = _same(run)
    assert first == {"number": "4", "number_temp": "2", "hits_to_temp": "1",
                     "temp_lru": "yes"}, first
    assert after["number_temp"] == "1" and after["reaped"] == 1, after


def test_lru_commands_answer_and_steer_as_memcached():
    cmds = [b"lru mode flat\r\n", b"lru mode segmented\r\n", b"lru mode other\r\n",
            b"lru temp_ttl abc\r\n", b"lru temp_ttl 10\r\n", b"lru temp_ttl -1\r\n",
            b"lru temp_ttl 10\r\n", b"lru mode\r\n", b"lru temp_ttl\r\n"]

    def run(binary):
        out = []
        with Server(binary) as srv, srv.conn() as c:
            for cmd in cmds:
                c.send(cmd)
                out.append(c.read_until(lambda b: b.find(b"\r\n") + 2 if b"\r\n" in b else 0))
            st = c.stats("settings")
            out.append((st["temp_lru"], st["temporary_ttl"], st["lru_segmented"]))
            c.expect(b"set a 0 10 1\r\nx\r\n", b"STORED\r\n")
            c.expect(b"set b 0 11 1\r\nx\r\n", b"STORED\r\n")
            out.append(c.stats("items")["items:1:number_temp"])
        with Server(binary, args=["-o", "no_lru_maintainer"]) as srv, srv.conn() as c:
            for cmd in (b"lru mode flat\r\n", b"lru temp_ttl 10\r\n"):
                c.send(cmd)
                out.append(c.read_until(lambda b: b.find(b"\r\n") + 2 if b"\r\n" in b else 0))
        return out
    ref = _same(run)
    assert ref[4] == b"OK\r\n" and ref[-3] == "1", ref


def test_lru_crawler_crawl_answers():
    cmds = [b"lru_crawler crawl 0\r\n", b"lru_crawler crawl 64\r\n", b"lru_crawler crawl x\r\n",
            b"lru_crawler crawl hash\r\n", b"lru_crawler crawl ,\r\n",
            b"lru_crawler crawl 1,2\r\n", b"lru_crawler crawl all\r\n",
            b"lru_crawler crawl 63\r\n"]

    def run(binary):
        out = []
        with Server(binary) as srv, srv.conn() as c:
            for cmd in cmds:
                # one at a time: a crawl still running answers BUSY
                wait_for(lambda: c.stats()["lru_crawler_running"] == "0", 10, interval=0.02,
                         what="%s's crawl to end" % binary)
                c.send(cmd)
                out.append(c.read_until(lambda b: b.find(b"\r\n") + 2 if b"\r\n" in b else 0))
        with Server(binary, args=["-o", "no_lru_crawler"]) as srv, srv.conn() as c:
            c.send(b"lru_crawler crawl 1\r\n")
            out.append(c.read_until(lambda b: b.find(b"\r\n") + 2 if b"\r\n" in b else 0))
        return out
    _same(run)


def test_crawl_reclaims_expired_items_of_the_class():
    # t/lru-crawler.t's case: no maintainer, the crawler started by hand,
    # a crawl of class 1 reclaims its 30 expired items and counts them there.
    def run(binary):
        with Server(binary, args=["-o", "no_modern"]) as srv, srv.conn() as c:
            t0 = time.time()
            for i in range(30):
                c.expect(b"set i%d 0 0 2\r\nok\r\n" % i, b"STORED\r\n")
                c.expect(b"set s%d 0 1 2\r\nok\r\n" % i, b"STORED\r\n")
            c.expect(b"lru_crawler enable\r\n", b"OK\r\n")
            _wait_clock_past(t0 + 2.1)
            c.expect(b"lru_crawler crawl 1\r\n", b"OK\r\n")
            wait_for(lambda: c.stats()["lru_crawler_running"] == "0", 10, interval=0.02,
                     what="%s's crawl to end" % binary)
            items, slabs = c.stats("items"), c.stats("slabs")
            return {"crawler_reclaimed": items["items:1:crawler_reclaimed"],
                    "reclaimed": items["items:1:reclaimed"],
                    "expired_unfetched": items["items:1:expired_unfetched"],
                    "used_chunks": slabs["1:used_chunks"],
                    "curr_items": c.stats()["curr_items"]}
    ref = _same(run)
    assert ref["crawler_reclaimed"] == "30" and ref["used_chunks"] == "30", ref
