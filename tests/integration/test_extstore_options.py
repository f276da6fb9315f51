"""The flash tier's options, command and statistics (memcached's extstore)
against Debian's memcached 1.6.18, which is built with extstore.

- Bad -o ext_* options: the same exit status and the same words on
  stderr, both at parsing and where memcached's extstore_init() refuses
  the files taken together.
- `stats settings`: the ext_* lines (and slab_automove_freeratio), their
  values and their place, for the same options.
- The `extstore` command: the same reply to each line, valid or not, with
  a flash tier and without; what valid ones set shows in `stats settings`
  the same way.
- `stats`: without ext_path no extstore line (as memcached); with it the
  same names in the same places; `stats extstore`: the same lines per page.
- What cellard does where memcached has nothing to compare (storage=seg
  refused, a stop that does not wait out the writer's rest) or where it
  deliberately differs (files with no page).

The extstore files go in a temporary folder on a disk (/var/tmp, not
/dev/shm), removed at the end of each test.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from util import CELLARD, HOST, MEMCACHED, Server, free_port, root_args, wait_for

BINARIES = (MEMCACHED, CELLARD)
# cellard's own behaviour, which memcached does not have (CELLARD=memcached runs the rest)
cellard_only = pytest.mark.skipif(os.path.realpath(CELLARD) == os.path.realpath(MEMCACHED),
                                  reason="cellard's own behaviour")


@pytest.fixture
def extdir():
    """A folder for extstore files on a real disk, removed afterwards."""
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    d = tempfile.mkdtemp(prefix="cellar-ext-", dir=base)
    os.chmod(d, 0o777)          # memcached opens its files after -u
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def refusal(binary, opts, extra=()):
    """Run binary with -o opts (a list of -o arguments) expecting it to stop
    at start: (exit status, stderr).  A binary that starts instead is
    stopped and reported as exit status 'ran'."""
    argv = [binary, "-l", HOST, "-p", str(free_port()), "-U", "0"] + root_args() + list(extra)
    for o in opts:
        argv += ["-o", o]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=3)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=10)
        return "ran", err.decode(errors="replace")
    return p.returncode, err.decode(errors="replace")


def clean(d):
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))


# -o arguments ({d}: the test's folder) both servers refuse with the same words.
BAD = [
    ["ext_path"],
    ["ext_path="],
    ["ext_path={d}/f"],
    ["ext_path={d}/f:"],
    ["ext_path=:64m"],
    ["ext_path={d}/f:64m:compact"],
    ["ext_path={d}/f:64m:lowttl"],
    ["ext_path={d}/f:64m:chunked"],
    ["ext_path={d}/f:64m:bogus"],
    ["ext_page_size"],
    ["ext_page_size=abc"],
    ["ext_page_size=-1"],
    ["ext_page_size=12x"],
    ["ext_path={d}/f:64m,ext_page_size=32"],
    ["ext_path={d}/f:64m", "ext_page_size"],
    ["ext_wbuf_size"],
    ["ext_wbuf_size=abc"],
    ["ext_threads"],
    ["ext_threads=x"],
    ["ext_io_depth"],
    ["ext_io_depth=-2"],
    ["ext_item_size"],
    ["ext_item_size=x"],
    ["ext_item_size=-5"],
    ["ext_item_age"],
    ["ext_item_age=1.5"],
    ["ext_low_ttl"],
    ["ext_low_ttl=z"],
    ["ext_recache_rate"],
    ["ext_recache_rate=1e3"],
    ["ext_compact_under"],
    ["ext_compact_under=x"],
    ["ext_drop_under"],
    ["ext_drop_under=x"],
    ["ext_max_sleep"],
    ["ext_max_sleep=-1"],
    ["ext_max_frag"],
    ["ext_max_frag=x"],
    ["ext_max_frag=0.5x"],
    ["slab_automove_freeratio"],
    ["slab_automove_freeratio=x"],
    ["ext_bogus=1"],
    ["ext_item_size=10,ext_nonsense"],
    # storage_check_config(): exit 64
    ["ext_wbuf_size=0,ext_path={d}/f:64m"],
    ["ext_path={d}/f:64m", "-I", "8m"],
    ["ext_path={d}/f:64m", "-U", "11999"],
    # extstore_init(): exit 1
    ["ext_page_size=3,ext_path={d}/f:64m"],
    ["ext_wbuf_size=3,ext_path={d}/f:64m"],
    ["ext_wbuf_size=6,ext_path={d}/f:64m"],
    ["ext_wbuf_size=128,ext_path={d}/f:64m"],
    ["ext_wbuf_size=1,ext_path={d}/f:64m"],
    ["ext_page_size=1,ext_wbuf_size=1,ext_path={d}/f:64m"],
    ["ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:128g"],
    ["ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:100g,ext_path={d}/g:28g"],
    ["ext_path={d}/f:1p"],
    ["ext_path={d}/f:-64m"],
]


def _split(case, d):
    """A BAD row as (-o arguments, other arguments)."""
    opts, extra = [], []
    items = [x.format(d=d) for x in case]
    i = 0
    while i < len(items):
        if items[i].startswith("-"):
            extra += items[i:i + 2]
            i += 2
        else:
            opts.append(items[i])
            i += 1
    return opts, extra


def test_bad_ext_options_match_memcached(extdir):
    bad = []
    for case in BAD:
        opts, extra = _split(case, extdir)
        got = []
        for binary in BINARIES:
            clean(extdir)
            got.append(refusal(binary, opts, extra))
        if got[0][0] == "ran" or got[0] != got[1]:
            bad.append((case, got))
    assert not bad, "\n".join("%s:\n  memcached %r\n  cellard   %r" % (c, g[0], g[1])
                              for c, g in bad)


@cellard_only
def test_unopenable_ext_path_exits_1(extdir):
    """A file that cannot be opened: exit 1 from both (memcached's words are
    "failed to open file" and perror's; cellard names the path and why)."""
    path = os.path.join(extdir, "no", "such", "dir", "f")
    got = [refusal(b, ["ext_path=%s:64m" % path]) for b in BINARIES]
    assert got[0][0] == 1 and "failed to open file" in got[0][1], got[0]
    assert got[1][0] == 1 and path in got[1][1], got[1]


@cellard_only
def test_storage_seg_refuses_ext_path(extdir):
    rc, err = refusal(CELLARD, ["storage=seg,ext_path=%s/f:64m" % extdir])
    assert rc == 1, (rc, err)
    assert "storage=seg" in err and "ext_path" in err, err
    rc, err = refusal(CELLARD, ["ext_path=%s/f:64m" % extdir, "storage=seg"])
    assert rc == 1 and "storage=seg" in err, (rc, err)


@cellard_only
def test_files_without_a_page_are_refused(extdir):
    """memcached starts with a file whose size has no unit (or is under a
    page) and never stores anything there; cellard refuses it, exit 1."""
    for size in ("64", "64k", "64mb", "0m", "32m"):
        rc, err = refusal(CELLARD, ["ext_path=%s/f:%s" % (extdir, size)])
        assert rc == 1 and "no page" in err, (size, rc, err)
    rc, err = refusal(CELLARD, ["ext_page_size=0,ext_path=%s/f:64m" % extdir])
    assert rc == 1 and "ext_page_size" in err, (rc, err)


def settings_lines(srv):
    """`stats settings` as an ordered list of (name, value)."""
    with srv.conn() as c:
        c.send(b"stats settings\r\n")
        raw = c.read_to(b"END\r\n")
    out = []
    for line in raw.decode().split("\r\n"):
        if line.startswith("STAT "):
            _, k, v = line.split(" ", 2)
            out.append((k, v))
    return out


def ext_block(lines):
    """The lines from inline_ascii_response to ssl_enabled: where 1.6.18
    puts the ext_* settings."""
    names = [k for k, _ in lines]
    return lines[names.index("inline_ascii_response"):names.index("ssl_enabled") + 1]


SETTINGS_CASES = [
    [],
    ["ext_path={d}/f:64m"],
    ["ext_path={d}/f:1g"],
    ["ext_page_size=32,ext_wbuf_size=8,ext_path={d}/f:1g"],
    ["ext_item_size=1024,ext_item_age=30,ext_low_ttl=60,ext_recache_rate=5,"
     "ext_max_sleep=5000,ext_max_frag=0.5,ext_drop_unread,slab_automove_freeratio=0.125,"
     "ext_path={d}/f:512m"],
    ["ext_compact_under=3,ext_drop_under=2,ext_path={d}/f:1g,ext_path={d}/g:1g"],
    ["ext_threads=4,ext_io_depth=2,ext_path={d}/f:256m", "ext_compact_under=1,ext_drop_under=3"],
    # no flash tier: recorded and shown all the same
    ["ext_item_size=100,ext_wbuf_size=8,ext_max_frag=0.333,ext_compact_under=9"],
]


@pytest.mark.parametrize("case", range(len(SETTINGS_CASES)))
def test_stats_settings_match_memcached(extdir, case):
    got = []
    for binary in BINARIES:
        clean(extdir)
        args = []
        for o in SETTINGS_CASES[case]:
            args += ["-o", o.format(d=extdir)]
        with Server(binary, args=args) as srv:
            got.append(ext_block(settings_lines(srv)))
    assert got[1] == got[0], got


@cellard_only
def test_compact_under_defaults_to_a_quarter_of_all_pages(extdir):
    """memcached 1.6.18 takes a quarter of the last ext_path's pages (and
    sets ext_drop_under so only when ext_compact_under is 0); cellard takes
    a quarter of all of them, each left at 0 on its own, as memcached's -h
    says ("1/4th of the assigned storage")."""
    args = ["-o", "ext_path=%s/f:1g,ext_path=%s/g:512m" % (extdir, extdir)]
    with Server(CELLARD, args=args) as srv:
        st = dict(settings_lines(srv))
    assert (st["ext_compact_under"], st["ext_drop_under"]) == ("6", "6"), st
    clean(extdir)
    args += ["-o", "ext_drop_under=1"]
    with Server(CELLARD, args=args) as srv:
        st = dict(settings_lines(srv))
    assert (st["ext_compact_under"], st["ext_drop_under"]) == ("6", "1"), st


# `extstore` lines whose replies are compared; valid ones first, their
# settings compared after them.
VALID = [
    b"extstore item_size 100", b"extstore item_age 20", b"extstore low_ttl 30",
    b"extstore recache_rate 40", b"extstore compact_under 5", b"extstore drop_under 6",
    b"extstore max_sleep 70000", b"extstore max_frag 0.25", b"extstore drop_unread 2",
    b"extstore item_size 200 noreply", b"extstore  item_age  21", b"extstore low_ttl +31",
    b"extstore free_memchunks 1 2", b"extstore free_memchunks 63 2 3",
    b"extstore max_sleep 50000 extra words", b"extstore drop_unread 0",
    b"extstore max_frag 1e-1",
]
INVALID = [
    b"extstore", b"extstore item_size", b"extstore noreply", b"extstore item_size noreply",
    b"extstore bogus 1", b"extstore free_memchunks 1", b"extstore free_memchunks 64 2",
    b"extstore free_memchunks x 2", b"extstore free_memchunks 1 -2", b"extstore ITEM_SIZE 5",
    b"extstore item_size -5", b"extstore item_size x noreply",
    b"extstore item_age 1.5", b"extstore max_frag", b"extstore drop_unread x",
    b"extstore max_frag 0.5x", b"extstore max_sleep 99999999999999999999",
]


def replies(srv, lines):
    """Each line's reply (b"" for none), read up to a meta no-op after it."""
    out = []
    with srv.conn() as c:
        for line in lines:
            c.send(line + b"\r\nmn\r\n")
            out.append(c.read_to(b"MN\r\n")[:-4])
    return out


@pytest.mark.parametrize("with_tier", [False, True])
def test_extstore_command_matches_memcached(extdir, with_tier):
    got = []
    for binary in BINARIES:
        clean(extdir)
        args = ["-o", "ext_path=%s/f:256m" % extdir] if with_tier else []
        with Server(binary, args=args) as srv:
            valid = replies(srv, VALID)
            settings = ext_block(settings_lines(srv))
            invalid = replies(srv, INVALID)
        got.append((valid, settings, invalid))
    assert got[1] == got[0], got
    assert got[0][0][0] == b"OK\r\n" and got[0][2][0] == b"ERROR\r\n", got[0]


def general_stats(srv, sub=""):
    with srv.conn() as c:
        c.send(b"stats" + (b" " + sub.encode() if sub else b"") + b"\r\n")
        raw = c.read_to(b"END\r\n")
    return [tuple(l.split(" ", 2)[1:]) for l in raw.decode().split("\r\n")
            if l.startswith("STAT ")]


def test_no_extstore_lines_without_ext_path():
    for binary in BINARIES:
        with Server(binary) as srv:
            names = [k for k, _ in general_stats(srv)]
            assert not [n for n in names if "extstore" in n], (binary, names)
            assert general_stats(srv, "extstore") == [], binary


def around(names, first, last):
    return names[names.index(first):names.index(last) + 1]


def test_stats_lines_with_ext_path_match_memcached(extdir):
    """The extstore lines of `stats` sit where memcached's do, with the
    same zeros at start and the same size; `stats extstore` has the same
    four lines for each page."""
    got = []
    for binary in BINARIES:
        clean(extdir)
        args = ["-o", "ext_path=%s/f:256m,ext_path=%s/g:128m" % (extdir, extdir)]
        with Server(binary, args=args) as srv:
            st = general_stats(srv)
            pages = general_stats(srv, "extstore")
        names = [k for k, _ in st]
        values = dict(st)
        got.append({
            "gets": around(names, "get_flushed", "delete_misses"),
            "block": around(names, "log_watchers", "unexpected_napi_ids"),
            "zeros": [values[k] for k in names if k.endswith("_extstore")
                      or k.startswith("extstore_compact") or k == "extstore_io_queue"],
            "limit": values["extstore_limit_maxbytes"],
            "pages": [k for k, _ in pages],
            "free_bucket": {v for k, v in pages if k.endswith(":free_bucket")},
        })
    assert got[1] == got[0], got
    assert got[0]["limit"] == str(384 << 20) and len(got[0]["pages"]) == 6 * 4, got[0]


def test_values_go_to_flash_and_come_back(extdir):
    """With ext_item_age=0 large values move to flash; reading them back
    gives the same bytes and counts get_extstore (memcached does the same)."""
    for binary in BINARIES:
        clean(extdir)
        args = ["-m", "64", "-o", "ext_path=%s/f:256m,ext_item_age=0,ext_max_sleep=20000"
                % extdir]
        with Server(binary, args=args) as srv, srv.conn() as c:
            vals = {b"k%d" % i: (b"%d-" % i) * 2000 for i in range(200)}
            for k, v in vals.items():
                c.expect(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v), b"STORED\r\n")
            wait_for(lambda: int(c.stats()["extstore_objects_written"]) > 0, 30,
                     what="%s to write values to flash" % binary)
            for k, v in vals.items():
                assert c.get(k) == v, (binary, k)
            st = c.stats()
            assert int(st["get_extstore"]) > 0, (binary, st)
            assert st["get_aborted_extstore"] == "0", (binary, st)


@cellard_only
def test_stop_does_not_wait_out_the_writers_rest(extdir):
    """ext_max_sleep=30 s: after 6 s idle the flash writer rests some 0.75 s
    at a time (its rest grows by an eighth a round); a SIGTERM still stops
    the server at once (some 50 ms here, the rest of the server's stop)."""
    srv = Server(CELLARD, args=["-o", "ext_path=%s/f:64m,ext_max_sleep=30000000" % extdir])
    srv.start()
    try:
        time.sleep(6.0)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(10) == 0
        assert time.monotonic() - t0 < 0.5
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()
        srv._cleanup_file()
