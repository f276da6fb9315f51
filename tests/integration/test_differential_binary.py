r"""Differential test of the binary protocol: the server under test against
Debian's memcached 1.6.18.

Both servers (-m 1024, `lru mode flat` sent first over a text connection
and its answer discarded on the server under test) get the same seeded
random stream of binary requests (DIFF_BIN_REQUESTS, default 30000; seed
DIFF_SEED, default below) over one connection each, in pipelined batches
of 1-20 requests.  Each request carries its own opaque.  After each batch
a NOOP with a fresh opaque is sent as the sentinel and answers are read
until the NOOP's answer, so replies are compared batch by batch.  The
first batch whose answers differ fails the test, printing the seed, the
batch's requests and both answers.

Answers are split into packets and compared field by field after:
  * CAS: every non-zero cas is replaced by its order of first appearance
    on that server (#0, #1, ...); a request that names "the n-th CAS this
    server answered for key K" (CasRef) is rendered with that server's own
    number.  Literal CAS values are only 0 or numbers no counter reaches,
    so they never match by accident.
  * VERSION: the body is not compared (nor its length).
  * STAT: a group's name/value packets are dropped; the terminator, and
    any error (an unknown group), are compared.

A batch may end with a request that closes the connection: a header
memcached refuses (wrong extras/key/body for the opcode, key > 250,
key + extras > body), QUIT/QUITQ, a bad magic (right after a NOOP, since
memcached drops answers still unsent when it sees a bad magic), or alone
in its batch a request whose header + extras + key exceed 16 KiB.  Such a
batch is read until the server closes, and both connections are opened
afresh.  Only the header, extras and key of a refused request are sent,
so the server never closes on unread bytes (which would reset the
connection and could lose answers).

Unknown opcodes (VERBOSITY included) and SASL requests (memcached built
without SASL) answer "Unknown command" and skip bytes; the stream sends
exactly the bytes memcached skips (for an unknown opcode: bodylen bytes
counted from the end of the key, i.e. extras + key more than the body),
so both servers stay in step.

Stream constraints that keep memcached a deterministic oracle (those of
test_differential.py, in binary form):
  * no arithmetic on stored numbers >= 2^63; initial values and stored
    numbers stay below 2^41 except on dedicated keys; deltas below 2^32;
    append/prepend data never holds digits; no stored value is only
    whitespace (see test_differential.py);
  * exptimes cannot expire during the run: 0, 1000 s .. 30 days relative,
    absolute far future (up to 0xffffffff) or absolute past;
  * FLUSH only immediate (no delay, or a delay of 0);
  * values <= ~100 KB, or > 1 MiB + 1 KiB (too large whatever the header);
  * no STAT group whose name is a prefix of another ("res" would make
    memcached compare bytes past the key) and no "detail dump".
  * no incr/decr of a key an earlier request of the same batch named
    (without_arith_after_read; ALLOW_LIST "incr-held"): memcached stores
    a new item of the exact digits, instead of padding the number in
    place, while an answer it has not yet written still references the
    item, so the result depends on its write points (src/protocol/mc_bin.h)
    and on how the batch was cut into reads.
"""

import collections
import os
import time

import binproto as bp
from test_differential import DIGITLESS, Gen, Side, exchange, not_all_whitespace, trunc
from statsdiff import StatsDiff
from util import CELLARD, MEMCACHED, ROUTED, Conn, Server

# Behaviours where cellard deliberately differs from memcached 1.6.18 over
# the binary protocol.  Each entry: name -> documentation of the difference
# and of the normalisation applied to both replies.  Empty: after the
# normalisation above, answers must be identical.
# Where cellard deliberately differs from memcached 1.6.18 (the README lists
# the same); entries are (why, normaliser).  The stream keeps these inputs
# out, so the normalisers are the identity: listed, not hiding anything.
def _same(unit):
    return unit


ALLOW_LIST = {
    "incr-held": ("incr/decr while an earlier answer still holds the item: always padded "
                  "to the old length; 1.6.18 stores the exact digits when its answer is "
                  "still unsent", _same),
}

DEFAULT_SEED = 1602
N_REQUESTS = int(os.environ.get("DIFF_BIN_REQUESTS", "30000"))
BATCH_TIMEOUT = 20.0
TOTAL_TIMEOUT = 120.0
ITEM_MAX = 1 << 20
NEVER_ISSUED = (2 ** 64 - 1, 9223372036854775000, 2 ** 63 + 12345)
EXP_ABS_FUTURE = (2000000000, 2147483647, 0x80000000, 0xfffffffe, 0xffffffff)
EXP_ABS_PAST = (2592001, 1000000000, 1600000000, 3000000)
STAT_GROUPS = (b"", b"settings", b"items", b"slabs", b"sizes", b"reset", b"bogus", b"conns",
               b"detail on", b"detail off", b"settings_and_more")


class CasRef:
    """The `idx`-th CAS a server answered for `key` (-1 = latest)."""

    def __init__(self, key, idx):
        self.key, self.idx = key, idx

    def render(self, hist):
        seen = hist.get(self.key)
        if not seen:
            return NEVER_ISSUED[1]
        return seen[max(-len(seen), min(self.idx, len(seen) - 1))]

    def __repr__(self):
        return "<cas %r[%d]>" % (self.key[:20], self.idx)


class Req:
    """One binary request; rendered per server (its cas may be a CasRef)
    with the opaque the batch gives it.  `tail` is sent after it (bytes
    the server skips); `closes` marks a request after which the server
    closes the connection."""

    def __init__(self, op, key=b"", ext=b"", value=b"", cas=0, tail=b"", closes=False,
                 send_value=True, **hdr):
        self.op, self.key, self.ext, self.value, self.cas = op, key, ext, value, cas
        self.tail, self.closes, self.send_value, self.hdr = tail, closes, send_value, hdr
        self.opaque = 0

    def render(self, hist):
        cas = self.cas.render(hist) if isinstance(self.cas, CasRef) else self.cas
        data = bp.req(self.op, self.key, self.ext, self.value, opaque=self.opaque, cas=cas,
                      **self.hdr)
        if not self.send_value:
            data = data[:24 + len(self.ext) + len(self.key)]
        return data + self.tail

    def describe(self):
        s = "op=%#04x opq=%#x" % (self.op, self.opaque)
        for k, v in sorted(self.hdr.items()):
            s += " %s=%r" % (k, v)
        if self.key:
            s += " key=%s" % trunc(self.key, 60)
        if self.ext:
            s += " ext=%s" % self.ext.hex()
        if self.value:
            s += " val=%s" % trunc(self.value, 60)
        if self.cas:
            s += " cas=%r" % (self.cas,)
        if self.tail:
            s += " +%d skipped bytes" % len(self.tail)
        if not self.send_value:
            s += " (head only)"
        return s


class BinGen:
    """The request stream.  Values, flags and numbers come from the text
    differential's generator (same seed discipline); keys add binary-only
    shapes (spaces, CR/LF, NUL)."""

    def __init__(self, seed):
        self.g = Gen(seed)
        self.r = self.g.r
        self.binkeys = [b"sp ace %d" % i for i in range(3)] + [b"crlf\r\n%d" % i for i in range(3)] + \
                       [b"nul\0%d" % i for i in range(3)] + [b"\x80\x81\xff%d" % i for i in range(3)]
        self.fresh = 0
        self.small = False

    # -- pieces ----------------------------------------------------------
    def key(self):
        return self.r.choice(self.binkeys) if self.r.random() < 0.06 else self.g.key()

    def num_key(self):
        return self.r.choice(self.g.nums) if self.r.random() < 0.7 else self.key()

    def flags(self):
        return int(self.g.flags())

    def exptime(self):
        r = self.r
        x = r.random()
        if x < 0.65:
            return 0
        if x < 0.80:
            return r.randrange(1000, 2592001)
        if x < 0.90:
            return r.choice(EXP_ABS_FUTURE)
        return r.choice(EXP_ABS_PAST)

    def value(self):
        v = self.g.value()
        if self.small:
            v = v[:200]
        return not_all_whitespace(v)

    def cas(self, key, p_ref=0.10, p_bad=0.05):
        x = self.r.random()
        if x < p_ref:
            k = key if self.r.random() < 0.8 else self.key()
            return CasRef(k, -1 if self.r.random() < 0.7 else self.r.randrange(-4, 0))
        if x < p_ref + p_bad:
            return self.r.choice(NEVER_ISSUED)
        return 0

    def odd_header(self):
        """Fields memcached ignores, now and then."""
        if self.r.random() < 0.03:
            return {"datatype": self.r.randrange(1, 256), "vbucket": self.r.randrange(1, 65536)}
        return {}

    # -- requests --------------------------------------------------------
    def storage(self):
        r = self.r
        op = r.choice((bp.SET,) * 4 + (bp.SETQ, bp.SETQ, bp.ADD, bp.ADDQ, bp.REPLACE, bp.REPLACEQ))
        key = self.num_key() if r.random() < 0.2 else self.key()
        val = self.g.number() if key in self.g.nums and r.random() < 0.8 else self.value()
        val = not_all_whitespace(val)
        return Req(op, key, bp.set_ext(self.flags(), self.exptime()), val, cas=self.cas(key),
                   **self.odd_header())

    def concat(self):
        r = self.r
        op = r.choice((bp.APPEND, bp.PREPEND, bp.APPENDQ, bp.PREPENDQ))
        key = self.key()
        val = not_all_whitespace(self.value()[:2000].translate(DIGITLESS))
        return Req(op, key, value=val, cas=self.cas(key, 0.05, 0.03))

    def retrieval(self):
        r = self.r
        if r.random() < 0.25:
            # A multiget as clients send it: quiet gets, then a NOOP.
            op = r.choice((bp.GETKQ, bp.GETKQ, bp.GETQ))
            out = [Req(op, self.key()) for _ in range(r.randrange(2, 12))]
            return out + [Req(bp.NOOP)]
        op = r.choice((bp.GET, bp.GET, bp.GETK, bp.GETQ, bp.GETKQ))
        return [Req(op, self.key(), **self.odd_header())]

    def touch(self):
        op = self.r.choice((bp.TOUCH, bp.TOUCH, bp.GAT, bp.GATQ, bp.GATK, bp.GATKQ))
        return Req(op, self.key(), bp.exp_ext(self.exptime()))

    def delete(self):
        key = self.key()
        return Req(self.r.choice((bp.DELETE, bp.DELETE, bp.DELETEQ)), key,
                   cas=self.cas(key, 0.15, 0.05))

    def arith(self):
        r = self.r
        op = r.choice((bp.INCR, bp.DECR, bp.INCR, bp.DECR, bp.INCRQ, bp.DECRQ))
        x = r.random()
        delta = r.randrange(0, 100) if x < 0.5 else r.randrange(0, 1 << 32)
        initial = r.randrange(0, 100) if r.random() < 0.5 else r.randrange(0, 1 << 41)
        y = r.random()
        if y < 0.4:
            exp = bp.NO_CREATE
        elif y < 0.7:
            exp = 0
        else:
            exp = self.exptime()
        key = self.num_key()
        return Req(op, key, bp.incr_ext(delta, initial, exp), cas=self.cas(key, 0.08, 0.04))

    def big_arith(self):
        """Large deltas on a fresh key, every result below 2^63 (as in the
        text differential)."""
        r = self.r
        self.fresh += 1
        key = b"big:%d" % self.fresh
        base = r.randrange(0, 1000)
        d1 = r.randrange(1 << 61, (1 << 63) - 2000)
        top = base + d1
        d3 = r.randrange(0, (1 << 63) - top)
        return [Req(bp.INCR, key, bp.incr_ext(d1, base, 0)),    # creates `base`
                Req(bp.INCR, key, bp.incr_ext(d1, 0, 0)),
                Req(bp.DECR, key, bp.incr_ext(r.randrange(0, 1 << 64), 0, 0)),
                Req(bp.INCRQ, key, bp.incr_ext(d3, 0, 0)),
                Req(bp.DECR, key, bp.incr_ext(r.randrange(0, 1 << 63), 0, bp.NO_CREATE)),
                Req(bp.GET, key),
                Req(bp.GETK, key),
                Req(bp.DELETE, key)]

    def too_large(self):
        r = self.r
        n = r.randrange(ITEM_MAX + 1024, ITEM_MAX + 8192)
        key = self.key()
        # Through the router a meta backend drops the item when an ms is too
        # large, where memcached's binary append and add keep it (README:
        # router exceptions), so routed streams send only sets too large.
        op = r.choice((bp.SET, bp.SETQ) if ROUTED else (bp.SET, bp.SETQ, bp.APPEND, bp.ADD))
        ext = b"" if op == bp.APPEND else bp.set_ext(0, 0)
        return [Req(op, key, ext, r.randbytes(n)), Req(bp.GET, key)]

    def admin(self):
        r = self.r
        x = r.random()
        if x < 0.4:
            return Req(bp.NOOP)
        if x < 0.6:
            return Req(bp.VERSION)
        if x < 0.85 and not ROUTED:     # the router's stats are its own (README)
            return Req(bp.STAT, r.choice(STAT_GROUPS))
        return Req(r.choice((bp.FLUSH, bp.FLUSHQ)), ext=r.choice((b"", bp.exp_ext(0))))

    def skipped(self):
        """Requests answered "Unknown command" whose skipped bytes we send."""
        r = self.r
        x = r.random()
        if x < 0.2:
            return Req(bp.SASL_LIST)
        if x < 0.4:
            return Req(r.choice((bp.SASL_AUTH, bp.SASL_STEP)), b"PLAIN",
                       value=r.randbytes(r.randrange(0, 20)))
        op = r.choice((bp.VERBOSITY, 0x1f, 0x25, 0x30, 0x3d, 0x48, 0x80, 0xfe, 0xff))
        ext = r.randbytes(r.choice((0, 0, 4, 8)))
        key = r.randbytes(r.randrange(0, 6))
        val = r.randbytes(r.randrange(0, 12))
        # memcached skips bodylen bytes after the key: extras + key more.
        return Req(op, key, ext, val, tail=b"\0" * (len(ext) + len(key)))

    def closer(self):
        """A request after which the server closes the connection; the
        list may start with a NOOP (see the module docstring)."""
        r = self.r
        x = r.random()
        k = self.key()
        if x < 0.12:
            return [Req(r.choice((bp.QUIT, bp.QUITQ)), closes=True)]
        if x < 0.24:
            magic = r.choice((0x00, 0x81, 0x7f, 0xff, ord("g")))
            return [Req(bp.NOOP), Req(bp.NOOP, magic=magic, closes=True)]
        if x < 0.36:
            n = r.randrange(251, 400)
            op = r.choice((bp.GET, bp.SETQ, bp.DELETE, 0x50, bp.NOOP))
            ext = bp.set_ext() if op == bp.SETQ else b""
            return [Req(op, b"K" * n, ext, b"v", closes=True, send_value=False)]
        if x < 0.50:
            # keylen + extlen > bodylen: Unknown command, then close.
            op = r.choice((bp.GET, bp.SET, bp.INCR, bp.FLUSH, 0x50))
            ext = r.randbytes(r.choice((0, 4, 8, 20)))
            key = k if r.random() < 0.8 else b""
            if not ext and not key:
                key = b"x"
            body = r.randrange(0, len(ext) + len(key))
            return [Req(op, key, ext, bodylen=body, closes=True)]
        # A shape memcached refuses: Invalid arguments, then close.
        shapes = [
            (bp.GET, b"", 0, 0), (bp.GETQ, k, 4, 0), (bp.GETK, k, 0, 3), (bp.GETKQ, b"", 0, 0),
            (bp.SET, k, 0, 3), (bp.SETQ, k, 4, 2), (bp.ADD, b"", 8, 1), (bp.REPLACE, k, 12, 0),
            (bp.APPEND, k, 8, 1), (bp.PREPENDQ, b"", 0, 2), (bp.DELETE, k, 4, 0),
            (bp.DELETEQ, k, 0, 1), (bp.INCR, k, 8, 0), (bp.DECR, k, 20, 4), (bp.INCRQ, b"", 20, 0),
            (bp.QUIT, b"", 0, 1), (bp.QUITQ, k, 0, 0), (bp.FLUSH, b"", 8, 0), (bp.FLUSH, b"", 4, 1),
            (bp.FLUSHQ, k, 0, 0), (bp.NOOP, b"", 4, 0), (bp.VERSION, b"", 0, 5),
            (bp.STAT, k, 4, 0), (bp.TOUCH, k, 0, 0), (bp.GAT, b"", 4, 0), (bp.GATQ, k, 8, 0),
            (bp.GATK, k, 2, 0), (bp.GATKQ, b"", 4, 0), (bp.SASL_LIST, b"", 0, 2),
            (bp.SASL_AUTH, b"", 0, 3), (bp.SASL_STEP, b"PLAIN", 4, 0),
        ]
        op, key, el, vl = r.choice(shapes)
        return [Req(op, key, r.randbytes(el), r.randbytes(vl), closes=True, send_value=False)]

    def oversize(self):
        r = self.r
        el = r.choice((0, 8, 255))
        kl = r.randrange(16385 - 24 - el, 16385 - 24 - el + 3000)
        return [Req(bp.GET, b"O" * kl, b"\0" * el, closes=True)]

    def request(self):
        r = self.r
        x = r.random() * 100
        if x < 28:
            return [self.storage()]
        if x < 34:
            return [self.concat()]
        if x < 58:
            return self.retrieval()
        if x < 64:
            return [self.touch()]
        if x < 70:
            return [self.delete()]
        if x < 82:
            return [self.arith()]
        if x < 82.5:
            return self.big_arith()
        if x < 86:
            return [self.admin()]
        if x < 88:
            return [self.skipped()]
        if x < 88.15:
            return self.too_large()
        return self.retrieval() if r.random() < 0.5 else [self.storage()]

    def batch(self):
        """A list of requests; the last may close the connection."""
        r = self.r
        if r.random() < 0.003:
            return self.oversize()
        closing = r.random() < 0.05
        self.small = closing            # keep a closing batch's answers small
        n = r.randrange(1, 6 if closing else 21)
        out = []
        while len(out) < n:
            out.extend(self.request())
        if closing:
            out.extend(self.closer())
        self.small = False
        return without_arith_after_read(out)


ARITH_OPS = (bp.INCR, bp.DECR, bp.INCRQ, bp.DECRQ)


def without_arith_after_read(reqs):
    """Drops an incr/decr whose key an earlier request of the same batch
    read.  Whether memcached rewrites the number in place then depends on
    whether its answer to the read has already left the socket (its pending
    answer pins the item), which depends on how the batch was cut into
    reads: two memcached processes differ there, so it cannot be compared.
    (ALLOW_LIST "incr-held" says what cellard does.)"""
    read, out = set(), []
    for q in reqs:
        key = getattr(q, "key", None)
        if getattr(q, "op", None) in ARITH_OPS and key in read:
            continue
        if getattr(q, "op", None) not in ARITH_OPS and key:
            read.add(key)
        out.append(q)
    return out


# -- comparing -------------------------------------------------------------

def normalise(side, raw, by_opaque):
    """A batch's answers as comparable units (see the module docstring).
    Records each CAS answered for a request's key, for later CasRefs."""
    pkts, rest = bp.parse_packets(raw)
    units = []
    for p in pkts:
        rq = by_opaque.get(p.opaque)
        if rq is not None and rq.op == bp.STAT and p.op == bp.STAT and p.status == bp.OK \
                and p.keylen:
            continue
        cas = "-"
        if p.cas:
            cas = "#%d" % side.cas_index.setdefault(p.cas, len(side.cas_index))
            if rq is not None and rq.key and p.status == bp.OK:
                hist = side.cas_hist.setdefault(rq.key, [])
                if not hist or hist[-1] != p.cas:
                    hist.append(p.cas)
        bodylen, value = p.bodylen, p.value
        if p.op == bp.VERSION and p.status == bp.OK:
            bodylen, value = "<version>", b"<version>"
        units.append((p.magic, p.op, p.keylen, p.extlen, p.datatype, p.status, bodylen,
                      p.opaque, cas, p.ext, p.key, value))
    if rest:
        units.append(("trailing bytes", rest))
    return units


def show_unit(u):
    if u is None:
        return "<none>"
    if u[0] == "trailing bytes":
        return "trailing bytes %s" % trunc(u[1])
    magic, op, kl, el, dt, st, bl, opq, cas, ext, key, val = u
    return "magic=%#x op=%#04x keylen=%d extlen=%d datatype=%d status=%#x bodylen=%s opaque=%#x " \
           "cas=%s ext=%s key=%s value=%s" % (magic, op, kl, el, dt, st, bl, opq, cas, ext.hex(),
                                             trunc(key, 80), trunc(val, 120))


def report(seed, bno, reqs, sides, units, raws, closed):
    a, b = units
    i = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
    lines = ["binary answers differ in batch %d (DIFF_SEED=%d)%s; first difference at packet %d"
             % (bno, seed, " (a closing batch)" if closed else "", i)]
    for s, u in zip(sides, units):
        lines.append("  %s packet %d: %s" % (s.name, i, show_unit(u[i] if i < len(u) else None)))
        if i > 0 and i - 1 < len(u):
            lines.append("    (packet before: %s)" % show_unit(u[i - 1]))
    lines.append("  requests of the batch:")
    lines += ["    %2d: %s" % (j, q.describe()) for j, q in enumerate(reqs)]
    for s, raw in zip(sides, raws):
        lines.append("  %s raw answer: %s" % (s.name, trunc(raw, 1500)))
    return "\n".join(lines)


def connect(name, port, old=None):
    s = Side(name, port)
    if old is not None:
        s.cas_index, s.cas_hist = old.cas_index, old.cas_hist
    return s


def kind_of(p):
    return "%02x/%02x" % (p[1], p[5]) if p[0] != "trailing bytes" else "trailing"


# (opcode, status) pairs the stream must have produced.
EXPECTED = {
    "01/00", "01/01", "01/02", "11/02", "02/02", "12/02", "03/01", "13/01", "03/02",
    "0e/00", "0e/05", "19/05", "0f/00", "1a/05", "00/00", "00/01", "0c/00", "0c/01", "09/00",
    "0d/00", "04/00", "04/01", "04/02", "14/01", "05/00", "05/01", "05/06", "06/00", "06/01",
    "15/01", "05/02", "0a/00", "0b/00", "10/00", "10/01", "08/00", "1c/00", "1c/01", "1d/00",
    "1d/01", "1e/00", "23/00", "23/01", "24/00", "1b/81", "20/81", "21/81", "07/00",
}


# Statuses the stream must have produced, from any opcode.
EXPECTED_STATUS = {"00", "01", "02", "03", "04", "05", "06", "81"}


def test_differential_binary_stream():
    seed = int(os.environ.get("DIFF_SEED", DEFAULT_SEED))
    print("differential (binary): DIFF_SEED=%d, %d requests, under test %s, oracle %s"
          % (seed, N_REQUESTS, CELLARD, MEMCACHED))
    gen = BinGen(seed)
    t0 = time.monotonic()
    with Server(CELLARD, args=["-m", 1024], name="under-test") as sut, \
            Server(MEMCACHED, args=["-m", 1024], name="oracle") as ora:
        # A flat LRU keeps memcached's incr/decr deterministic; the server
        # under test's answer is discarded, whatever it is.
        for srv in (sut, ora):
            with Conn(srv.port) as c:
                c.send(b"lru mode flat\r\n")
                line = c.readline(5)
                assert srv is sut or line == b"OK\r\n", "oracle answered lru mode flat: %r" % line
        ports = (sut.port, ora.port)
        sides = [connect("under-test", ports[0]), connect("oracle", ports[1])]
        exchange(sides, [bp.noop(1)] * 2, [bp.noop_reply(1)] * 2, 5)  # both taken by a worker
        counters = StatsDiff([s.name for s in sides], ports)
        try:
            sent = bno = closes = 0
            kinds = collections.Counter()
            slowest = (0.0, 0, "")
            while sent < N_REQUESTS:
                bno += 1
                reqs = gen.batch()
                base = gen.r.getrandbits(32) & 0xffff0000
                by_opaque = {}
                for j, q in enumerate(reqs):
                    q.opaque = (base | j) if j < 0xff00 else 0
                    by_opaque[q.opaque] = q
                closing = reqs[-1].closes
                payloads = [b"".join(q.render(s.cas_hist) for q in reqs) for s in sides]
                tb = time.monotonic()
                try:
                    if closing:
                        raws = bp.exchange_to_close(sides, payloads, BATCH_TIMEOUT)
                        tail = b""
                    else:
                        sentinel = base | 0xffff
                        payloads = [p + bp.noop(sentinel) for p in payloads]
                        tail = bp.noop_reply(sentinel)
                        raws = exchange(sides, payloads, [tail, tail], BATCH_TIMEOUT)
                except AssertionError as e:
                    raise AssertionError("batch %d (DIFF_SEED=%d): %s\n  requests:\n%s" % (
                        bno, seed, e, "\n".join("    %2d: %s" % (j, q.describe())
                                                for j, q in enumerate(reqs))))
                dt = time.monotonic() - tb
                if dt > slowest[0]:
                    slowest = (dt, bno, reqs[-1].describe())
                for i, raw in enumerate(raws):
                    counters.io(i, len(payloads[i]), len(raw) + len(tail))
                try:
                    counters.check("batch %d (DIFF_SEED=%d)" % (bno, seed), len(payloads[1]),
                                   reset=any(q.op == bp.STAT and q.key == b"reset"
                                             for q in reqs), closed=closing)
                except AssertionError as e:
                    raise AssertionError("%s\n  requests of the batch:\n%s" % (e, "\n".join(
                        "    %2d: %s" % (j, q.describe()) for j, q in enumerate(reqs))))
                units = [normalise(s, raw, by_opaque) for s, raw in zip(sides, raws)]
                if units[0] != units[1]:
                    raise AssertionError(report(seed, bno, reqs, sides, units, raws, closing))
                kinds.update(kind_of(u) for u in units[1])
                if closing:
                    closes += 1
                    for s in sides:
                        s.close()
                    sides = [connect(s.name, p, s) for s, p in zip(sides, ports)]
                sent += len(reqs)
                assert time.monotonic() - t0 < TOTAL_TIMEOUT, \
                    "binary differential run exceeded %.0fs at batch %d" % (TOTAL_TIMEOUT, bno)
            print("differential (binary): %d requests in %d batches (%d closed the connection), "
                  "%d CAS numbers seen, %.1fs; slowest batch %d, %.2fs, ending with %s"
                  % (sent, bno, closes, len(sides[1].cas_index), time.monotonic() - t0,
                     slowest[1], slowest[0], slowest[2][:100]))
            print("differential (binary): answers (opcode/status): %s" % ", ".join(
                "%s %d" % kv for kv in sorted(kinds.items())))
            print("differential (binary): counters compared after %d batches; moved on the "
                  "oracle: %s" % (counters.checks, " ".join(sorted(counters.moved))))
            if N_REQUESTS >= 20000:
                statuses = {k.split("/")[1] for k in kinds}
                expected = EXPECTED - ({"10/00", "10/01"} if ROUTED else set())  # no STAT routed
                missing = sorted(expected - set(kinds)) + sorted(EXPECTED_STATUS - statuses)
                assert not missing, "the stream produced no answer %s" % missing
                assert closes >= 10, "too few closing batches (%d)" % closes
                assert len(sides[1].cas_index) > 100, "too few CAS numbers seen"
        finally:
            counters.close()
            for s in sides:
                s.close()
