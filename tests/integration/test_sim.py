"""cellar-sim's trace readers and its miss ratios on traces written here.

The three libCacheSim formats are written by this file from their
definitions (oracleGeneral: packed little-endian records of uint32 time,
uint64 id, uint32 size, int64 next access), not by cellar-sim, so a reader
that got a field's width or order wrong fails.  The miss ratios of a
short trace are worked out by hand for FIFO and LRU.
"""
import csv
import io
import os
import random
import struct
import subprocess
import tempfile

from util import CELLARD

SIM = os.path.join(os.path.dirname(CELLARD), "cellar-sim")


def sim(*args):
    out = subprocess.run([SIM, "-q", "--no-opt", "-j", "1", "--csv", "-"] + list(args),
                         check=True, capture_output=True, text=True, timeout=60).stdout
    rows = [r for r in csv.DictReader(io.StringIO(out[out.index("trace,"):]))]
    return {(r["policy"], int(r["capacity"])): r for r in rows}


def write_all(d, reqs):
    """reqs: (time, id, size).  Writes txt, csv (with a header, ';') and oracleGeneral."""
    paths = {k: os.path.join(d, "t." + k) for k in ("txt", "csv", "bin")}
    with open(paths["txt"], "w") as f:
        f.writelines("%d\n" % i for _, i, _ in reqs)
    with open(paths["csv"], "w") as f:
        f.write("size;junk;id;time\n")
        f.writelines("%d;x;%d;%d\n" % (s, i, t) for t, i, s in reqs)
    with open(paths["bin"], "wb") as f:
        for t, i, s in reqs:
            f.write(struct.pack("<IQIq", t, i, s, -1))
    return paths


def test_sim_hand_computed_fifo_and_lru():
    # Cache of 2.  FIFO: 1 2 | 1 hit | 3 evicts 1 | 1 miss, evicts 2 | 2 miss,
    # evicts 3 -> 1 hit of 6.  LRU: 1 2 | 1 hit | 3 evicts 2 | 1 hit | 2 evicts 3
    # -> 2 hits of 6.
    reqs = [(t, i, 1) for t, i in enumerate([1, 2, 1, 3, 1, 2])]
    with tempfile.TemporaryDirectory() as d:
        p = write_all(d, reqs)
        r = sim("-t", p["txt"], "-c", "2", "-p", "fifo,lru-exact")
        assert int(r[("fifo", 2)]["misses"]) == 5, r[("fifo", 2)]
        assert int(r[("lru-exact", 2)]["misses"]) == 4, r[("lru-exact", 2)]


def test_sim_reads_the_three_formats_alike():
    rnd = random.Random(7)
    # Ids above 2^32 and sizes above 2^16 catch a reader that takes the
    # wrong width, and sizes shared by many objects one that reads the
    # wrong column; time advances once per 10 requests.
    ids = [(1 << 40) + int(rnd.paretovariate(1.2)) for _ in range(20000)]
    size = {}
    for i in ids:
        size.setdefault(i, rnd.choice([100, 300, 70000]))
    reqs = [(n // 10, i, size[i]) for n, i in enumerate(ids)]
    objects = len(set(ids))
    with tempfile.TemporaryDirectory() as d:
        p = write_all(d, reqs)
        pols = "lru-exact,s3fifo"
        txt = sim("-t", p["txt"], "-c", "50,500", "-p", pols)
        orc = sim("-t", p["bin"], "-F", "oracleGeneral", "-c", "50,500", "-p", pols)
        cs = sim("-t", p["csv"], "-F", "csv", "--csv-header", "--csv-delim", ";",
                 "--csv-cols", "time=4,id=3,size=1", "-c", "50,500", "-p", pols)
        for key, row in txt.items():
            assert int(row["requests"]) == len(reqs), row
            for other in (orc, cs):
                assert other[key]["misses"] == row["misses"], (key, row, other[key])
        # Byte mode sees the sizes: the byte miss ratio differs from the object one.
        b1 = sim("-t", p["bin"], "-b", "-c", "8MiB", "-p", "lru-exact")
        b2 = sim("-t", p["csv"], "-F", "csv", "--csv-header", "--csv-delim", ";",
                 "--csv-cols", "time=4,id=3,size=1", "-b", "-c", "8MiB", "-p", "lru-exact")
        (k1, r1), = b1.items()
        (k2, r2), = b2.items()
        assert r1["misses"] == r2["misses"] and r1["byte_miss_ratio"] == r2["byte_miss_ratio"]
        assert r1["byte_miss_ratio"] != r1["miss_ratio"]
        assert int(r1["misses"]) >= objects


def test_sim_segments_at_equal_memory():
    """seg-fifo runs the segment back end in byte mode; at equal total memory
    (--count-meta: index or hash table inside the capacity) FIFO on segments
    holds more small objects than FIFO on slabs, so it misses less.  Without
    --bytes a segment policy is refused."""
    spec = "zipf:alpha=0.9,objects=100K,requests=1M,size=50-300"
    r = sim("-g", spec, "-b", "--count-meta", "-c", "0.1", "-p", "fifo,seg-fifo")
    (cap,) = {c for _, c in r}
    slab, seg = r[("fifo", cap)], r[("seg-fifo", cap)]
    assert float(seg["miss_ratio"]) < float(slab["miss_ratio"]) - 0.01, (slab, seg)
    p = subprocess.run([SIM, "-q", "--no-opt", "-g", spec, "-c", "0.1", "-p", "seg-fifo"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "segments hold bytes" in p.stdout + p.stderr, p
