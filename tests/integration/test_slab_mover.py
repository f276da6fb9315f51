"""The slab page mover: `slabs reassign`, the global page pool, automove.

Two moves whose outcome is fixed are run on cellard and on memcached 1.6.18
and must give the same counters and the same items: values just under the
largest chunk (two to a 1 MiB page on both servers, whatever their smaller
classes), so that which items share a page is the same.  Then a load whose
sizes shift, under the default automover: every item is either intact or
counted as evicted.  Passes with CELLARD=/usr/bin/memcached too.
"""

from util import CELLARD, MEMCACHED, Server, wait_for

BIG = 450000            # one chunk of the largest class (524288), two per page
MOVER = ["slab_reassign_rescues", "slab_reassign_chunk_rescues",
         "slab_reassign_evictions_nomem", "slab_reassign_busy_deletes", "slabs_moved",
         "slab_global_page_pool", "curr_items", "evictions"]


def _value(i, n):
    return (b"%08d" % i) * (n // 8) + b"x" * (n % 8)


def _big_class(c):
    slabs = c.stats("slabs")
    return [k.split(":")[0] for k, v in slabs.items()
            if k.endswith(":chunk_size") and v == "524288"][0]


def _move(c, src, dst):
    assert c.call(b"slabs reassign %s %s\r\n" % (src.encode(), dst.encode())) == b"OK\r\n"
    wait_for(lambda: c.stats()["slab_reassign_running"] == "0" and
             c.stats()["slabs_moved"] != "0", 10, 0.05, "the move to end")


def _scenario(binary, delete):
    """Six big items in three pages; with delete, the middle page's two go
    first.  The oldest page then moves to the pool."""
    with Server(binary, args=["-o", "slab_automove=0"]) as srv, srv.conn() as c:
        for i in range(6):
            c.expect(b"set k%d 0 0 %d\r\n%s\r\n" % (i, BIG, _value(i, BIG)), b"STORED\r\n")
        for i in delete:
            c.expect(b"delete k%d\r\n" % i, b"DELETED\r\n")
        cls = _big_class(c)
        pages = c.stats("slabs")["%s:total_pages" % cls]
        _move(c, cls, "0")
        st = c.stats()
        got = {k: st[k] for k in MOVER}
        got["pages"] = (pages, c.stats("slabs")["%s:total_pages" % cls])
        got["items"] = {}
        for i in range(6):
            v = c.get(b"k%d" % i)
            got["items"][i] = None if v is None else v == _value(i, BIG)
        # the pool's page serves another class before anything is evicted
        c.expect(b"set small 0 0 100\r\n%s\r\n" % (b"s" * 100), b"STORED\r\n")
        st = c.stats()
        got["after"] = (st["slab_global_page_pool"], st["evictions"])
        return got


def test_rescue_matches_memcached():
    """The oldest page's items fit in the freed middle page: both rescued."""
    want, got = _scenario(MEMCACHED, [2, 3]), _scenario(CELLARD, [2, 3])
    assert got == want, (got, want)
    assert want["slab_reassign_rescues"] == "2" and want["slab_global_page_pool"] == "1"
    assert want["items"] == {0: True, 1: True, 4: True, 5: True, 2: None, 3: None}


def test_no_room_evicts_like_memcached():
    """No free chunk in the class: the oldest page's two items are evicted."""
    want, got = _scenario(MEMCACHED, []), _scenario(CELLARD, [])
    assert got == want, (got, want)
    assert want["slab_reassign_evictions_nomem"] == "2" and want["curr_items"] == "4"


def test_answers_match_memcached():
    """The answers before and after a move (-1: the class with spare pages)."""
    lines = [b"slabs reassign 1 1", b"slabs reassign 0 1", b"slabs reassign 100 1",
             b"slabs reassign 1 0", b"slabs reassign 1 -2", b"slabs reassign -1 0"]
    outs = []
    for binary in (MEMCACHED, CELLARD):
        with Server(binary, args=["-o", "slab_automove=0"]) as srv, srv.conn() as c:
            for i in range(6):
                c.expect(b"set k%d 0 0 %d\r\n%s\r\n" % (i, BIG, _value(i, BIG)), b"STORED\r\n")
            out = [c.call(line + b"\r\n") for line in lines]
            wait_for(lambda: c.stats()["slab_reassign_running"] == "0" and
                     c.stats()["slabs_moved"] == "1", 10, 0.05, "the move to end")
            out.append(c.call(b"slabs reassign 0 1\r\n"))       # one pool page: no spare
            out.append(c.stats()["slab_global_page_pool"].encode())
            outs.append(out)
    assert outs[1] == outs[0], outs
    assert outs[0][0] == b"SAME src and dst class are identical\r\n"
    assert outs[0][1] == b"NOSPARE source class has no spare pages\r\n"
    assert outs[0][5] == b"OK\r\n" and outs[0][7] == b"1"


def test_shifting_sizes_lose_nothing_unaccounted():
    """11000-byte items, half deleted, then 7000-byte ones: the automover
    gives the first class's free pages to the pool and the second takes
    them.  Every key never deleted is intact or was evicted (by the LRU or
    by a move), and the counters say how many."""
    n = 3000
    with Server(CELLARD, args=["-m", "32", "-o", "slab_automove_window=3"]) as srv, \
            srv.conn() as c:
        for i in range(n):
            c.send(b"set a%d 0 0 11000 noreply\r\n%s\r\n" % (i, _value(i, 11000)))
        c.expect(b"mn\r\n", b"MN\r\n")
        for i in range(0, n, 2):
            c.send(b"delete a%d\r\n" % i)
        gone = sum(c.readline() == b"NOT_FOUND\r\n" for _ in range(0, n, 2))
        wait_for(lambda: int(c.stats()["slab_global_page_pool"]) > 3, 30, 0.2,
                 "free pages to reach the pool")
        for i in range(n):
            c.send(b"set b%d 0 0 7000 noreply\r\n%s\r\n" % (i, _value(i, 7000)))
        c.expect(b"mn\r\n", b"MN\r\n")
        wait_for(lambda: c.stats()["slab_reassign_running"] == "0", 10, 0.05, "moves to end")
        st = c.stats()
        assert int(st["slabs_moved"]) > 3 and int(st["slab_reassign_rescues"]) > 0, st
        missing = 0
        for key, size in [(b"a%d" % i, 11000) for i in range(1, n, 2)] + \
                         [(b"b%d" % i, 7000) for i in range(n)]:
            v = c.get(key)
            if v is None:
                missing += 1
            else:
                assert v == _value(int(key[1:]), size), key
        st = c.stats()
        lost = (int(st["evictions"]) + int(st["slab_reassign_evictions_nomem"]) +
                int(st["slab_reassign_busy_deletes"]))
        assert missing + gone == lost, (missing, gone, {k: st[k] for k in MOVER})
