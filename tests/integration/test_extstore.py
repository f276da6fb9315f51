"""The flash tier (-o ext_path, memcached's extstore) against Debian's
memcached 1.6.18 run with the same options: values moved to the file come
back whole with the same replies; refusals on values that are on flash are
memcached's; a torn, lost or unreadable value is a counted miss and never
wrong bytes; a full device stops the tier and memory goes on serving; a
warm restart keeps what was in memory and none of the flash tier, as
memcached's -e keeps nothing with extstore.

Files lie under a fresh directory on the disk (tempfile's default), removed
at the end; the full-device test mounts a small tmpfs of its own.
"""

import os
import random
import shutil
import subprocess
import tempfile

import pytest

from test_restart import graceful
from util import CELLARD, MEMCACHED, Conn, Server, wait_for

# memcached's t/extstore.t settings, with items idle one second going to flash
EXT_OPTS = ("ext_page_size=8,ext_wbuf_size=2,ext_threads=1,ext_io_depth=2,ext_item_size=512,"
            "ext_item_age=1,ext_recache_rate=10000,ext_max_frag=0.9,slab_automove=0,"
            "ext_max_sleep=100000")


@pytest.fixture
def flash_dir():
    d = tempfile.mkdtemp(prefix="cellar-ext-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def value_of(i, n=20000):
    r = random.Random(i)
    return bytes(r.choice(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(n))


def in_big_classes(c):
    """Items in classes 3 and up: those whose values are still in memory
    (t/extstore.t's wait: headers live in classes 1 and 2)."""
    st = c.stats("items")
    return sum(int(v) for k, v in st.items()
               if k.startswith("items:") and k.endswith(":number") and int(k.split(":")[1]) >= 3)


def wait_flushed(c, target=0, timeout=60):
    wait_for(lambda: in_big_classes(c) <= target, timeout, interval=0.1, what="values on flash")


def fill(c, keys, prefix="k"):
    c.send(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix.encode(), i, len(value_of(i)),
                                                          value_of(i)) for i in keys))
    assert c.call(b"mn\r\n") == b"MN\r\n"


def get_all(c, keys, prefix="k"):
    """{i: value or None} for keys, one get each."""
    out = {}
    for i in keys:
        c.send(b"get %s%d\r\n" % (prefix.encode(), i))
        r = c.read_get_reply()
        out[i] = r[0][2] if r else None
    return out


def run_flushed_session(binary, path):
    """The same requests to a server with a flash tier: 300 values of 20 KB,
    all on flash before they are read; returns the replies and the stats."""
    with Server(binary=binary, args=["-m", "64", "-U", "0", "-o",
                                     EXT_OPTS + ",ext_path=%s:64m" % path]) as srv:
        with Conn(srv.port, timeout=30) as c:
            fill(c, range(300))
            wait_flushed(c)
            got = get_all(c, range(300))
            replies = [c.call(b"incr k1 1\r\n"),
                       c.call(b"append k2 0 0 2\r\nhi\r\n"),
                       c.call(b"prepend k3 0 0 2\r\nhi\r\n"),
                       c.call(b"set small 0 0 2\r\nhi\r\n"),
                       c.call(b"incr small 1\r\n")]
            return got, replies, c.stats()


def test_values_go_to_flash_and_come_back_as_from_memcached(flash_dir):
    ours, our_replies, st = run_flushed_session(CELLARD, os.path.join(flash_dir, "ours"))
    theirs, their_replies, mst = run_flushed_session(MEMCACHED, os.path.join(flash_dir, "theirs"))
    for i in range(300):
        assert ours[i] == value_of(i), "k%d" % i
        assert theirs[i] == value_of(i), "memcached k%d" % i
    assert our_replies == their_replies
    assert our_replies[0] == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert our_replies[1] == our_replies[2] == b"NOT_STORED\r\n"
    for s in (st, mst):
        assert int(s["extstore_objects_written"]) >= 300
        assert int(s["get_extstore"]) >= 300
        assert int(s["miss_from_extstore"]) == 0
        assert int(s["badcrc_from_extstore"]) == 0
        assert int(s["extstore_page_allocs"]) > 0


def test_torn_or_lost_values_are_counted_misses(flash_dir):
    path = os.path.join(flash_dir, "f")
    with Server(args=["-m", "64", "-U", "0", "-o", EXT_OPTS + ",ext_path=%s:64m" % path]) as srv:
        with Conn(srv.port, timeout=30) as c:
            fill(c, range(400))
            wait_flushed(c)
            # Every byte of the file's first 6 MB replaced: each record written there
            # reads torn; what is still in a write buffer reads from memory.
            fd = os.open(path, os.O_WRONLY)
            try:
                os.pwrite(fd, b"x" * (6 << 20), 0)
            finally:
                os.close(fd)
            got = get_all(c, range(400))
            torn = [i for i in range(400) if got[i] is None]
            assert all(got[i] == value_of(i) for i in range(400) if got[i] is not None)
            assert len(torn) > 100
            st = c.stats()
            assert int(st["badcrc_from_extstore"]) == len(torn)
            assert int(st["miss_from_extstore"]) == len(torn)
            # A miss unlinks its header: asked again, a plain miss, no new read.
            assert c.call(b"get k%d\r\n" % torn[0]) == b"END\r\n"
            assert int(c.stats()["get_extstore"]) == int(st["get_extstore"])

            # The file cut to nothing under it: short reads, counted, nothing torn served.
            fill(c, range(1000, 1200))
            wait_flushed(c)
            os.truncate(path, 0)
            got = get_all(c, range(1000, 1200))
            lost = [i for i in got if got[i] is None]
            assert all(got[i] == value_of(i) for i in got if got[i] is not None)
            assert len(lost) > 100
            st2 = c.stats()
            assert int(st2["miss_from_extstore"]) - int(st["miss_from_extstore"]) == len(lost)
            assert c.call(b"set after 0 0 2\r\nok\r\n") == b"STORED\r\n"
            assert c.get("after") == b"ok"


def test_a_full_device_stops_the_tier_and_memory_serves(flash_dir):
    mnt = os.path.join(flash_dir, "small")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mnt], check=True)
    try:
        path = os.path.join(mnt, "f")
        with Server(args=["-m", "64", "-U", "0", "-o",
                          EXT_OPTS + ",ext_path=%s:64m" % path]) as srv:
            with Conn(srv.port, timeout=30) as c:
                fill(c, range(600))                       # 12 MB for a 3 MB device
                # the tier takes what the device holds, then stops: values stay in memory
                wait_for(lambda: int(c.stats()["extstore_objects_written"]) > 50, 30,
                         interval=0.1, what="some values on flash")
                wait_for(lambda: in_big_classes(c) < 600 and
                         in_big_classes(c) == in_big_classes(c), 30, interval=0.2,
                         what="the tier to stop")
                got = get_all(c, range(600))
                assert all(got[i] == value_of(i) for i in range(600) if got[i] is not None)
                served = sum(got[i] is not None for i in range(600))
                assert served > 400, served           # the device's share and memory's
                assert in_big_classes(c) > 300        # memory kept what the device refused
                assert c.call(b"set after 0 0 2\r\nok\r\n") == b"STORED\r\n"
                assert c.get("after") == b"ok"
    finally:
        subprocess.run(["umount", mnt], check=False)


def test_warm_restart_keeps_memory_and_none_of_the_flash_tier(flash_dir):
    path = os.path.join(flash_dir, "f")
    mem = os.path.join(flash_dir, "mem")
    args = ["-m", "64", "-U", "0", "-e", mem, "-o", EXT_OPTS + ",ext_path=%s:64m" % path]
    with Server(args=args) as srv:
        with Conn(srv.port, timeout=30) as c:
            fill(c, range(100))
            wait_flushed(c)
            assert c.call(b"set small 0 0 5\r\nhello\r\n") == b"STORED\r\n"
        graceful(srv)                                      # SIGUSR1: the memory file is saved
    with Server(args=args) as srv:
        with Conn(srv.port, timeout=30) as c:
            assert c.get("small") == b"hello"
            got = get_all(c, range(100))
            assert all(v is None for v in got.values())
            assert int(c.stats()["get_extstore"]) == 0     # no header came back to read
