"""-m above 4 GB, and -M's limit met by 400 KB values, against memcached
1.6.18 (what memcached's t/64bit.t checks, without its test hook).

t/64bit.t starts memcached with -m 4098 -M and T_MEMD_INITIAL_MALLOC=2**32+32,
a hook in memcached's slabs.c that makes it believe it has already taken
4 GB, so that five 400 KB sets meet the limit.  cellard does not read that
variable (see doc/cellard.md); here the same two things are checked apart:
a limit of 4098 MB is shown whole (no 32-bit truncation) on both servers,
and under a limit that can be filled (-m 8 -M) the same 400 KB sets are
stored and refused, in the same order, on both.  Passes with
CELLARD=/usr/bin/memcached.
"""

from util import CELLARD, MEMCACHED, Server

VALUE = b"a" * (400 * 1024)


def _run(binary, args, sets):
    with Server(binary, args=args) as srv, srv.conn() as c:
        out = [c.stats()["limit_maxbytes"], c.stats("settings")["maxbytes"],
               c.stats("slabs").get("active_slabs")]
        for i in range(sets):
            out.append(c.call(b"set big%d 0 0 %d\r\n%s\r\n" % (i, len(VALUE), VALUE)))
        out.append(c.stats("slabs").get("active_slabs"))
        return out


def test_limit_above_4gb_is_shown_whole():
    want = _run(MEMCACHED, ["-m", "4098", "-M"], 3)
    got = _run(CELLARD, ["-m", "4098", "-M"], 3)
    assert got == want, (got, want)
    assert want[:3] == ["4297064448", "4297064448", "0"], want


def test_400kb_sets_meet_the_limit_as_memcached():
    want = _run(MEMCACHED, ["-m", "8", "-M"], 30)
    got = _run(CELLARD, ["-m", "8", "-M"], 30)
    assert got == want, (got, want)
    refused = b"SERVER_ERROR out of memory storing object\r\n"
    assert want[3] == b"STORED\r\n" and want[-2] == refused and want[-1] == "1", want
