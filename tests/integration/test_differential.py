r"""Differential test: the server under test against Debian's memcached 1.6.18.

Both servers get the same seeded random stream of classic text commands
(DIFF_COMMANDS, default 40000; seed DIFF_SEED, default below) over one
connection each, in pipelined batches of 1-20 commands.  After each batch a
sentinel is sent,

    set __sentinel__ 0 0 <n>\r\n<unique token>\r\nget __sentinel__\r\n

and replies are read until the sentinel's reply ends the stream, so replies
are compared batch by batch.  The first batch whose replies differ fails the
test, printing the seed, the batch's commands and both replies.

The generator is abstract and rendered per server: CAS unique numbers differ
between servers by design, so a `gets`/`gats` reply's CAS is replaced by its
order of first appearance on that server (#0, #1, ...) before comparison, and
a `cas` command names "the n-th CAS this server issued for key K" and is
rendered with that server's own number.

Stream constraints that keep memcached 1.6.18 a deterministic oracle
(reference/memcached.md section 7, and observed):
  * both servers first get `lru mode flat` and its reply is discarded
    (memcached's segmented LRU makes incr/decr sometimes pad in place and
    sometimes reallocate; the server under test may be memcached itself);
  * no arithmetic on stored numbers >= 2^63; pool values stay below 2^41,
    deltas below 2^32; large deltas only on dedicated, fresh keys; the data
    of append/prepend never contains digits, so concatenation cannot build
    a big number;
  * no stored value consists only of whitespace (" \t\n\v\f\r"): 1.6.18's
    incr/decr runs strtoull() over the item, which skips the whitespace and
    the trailing \r\n and goes on reading whatever bytes follow the item in
    slab memory, so the answer (a number or "non-numeric") depends on
    leftover memory (found by this test: set " " after freeing chunks that
    held "12345678901234567890", then incr -> 45678901234567891);
  * a get-family line with a key over 250 bytes only first in a batch;
  * no TTLs that can expire during the run: exptime is 0, >= 1000 s
    relative, absolute far future or past, or negative;
  * no delayed flush_all (a later flush_all <delay> can resurrect items of an
    earlier immediate flush that have not been reaped yet, timing-dependent);
  * flags, bytes and exptime below 2^31/2^32 (1.6.18 truncates larger ones);
  * no value in the band where "too large" depends on the item header size
    (values are <= ~100 KB, or > 1 MiB + 1 KiB);
  * malformed storage commands and bad data chunks only carry data made of
    [A-Z0-9_-] lines shorter than 2048 bytes, so when the server parses
    the data as commands each line is an unknown command (ERROR) and never a
    line that closes the connection;
  * gat/gats lines stay under 2048 bytes (only get/gets may be longer).
No `version`, `stats`, `quit`, `shutdown` or meta commands are sent.
"""

import collections
import os
import random
import selectors
import socket
import time

from statsdiff import StatsDiff
from util import CELLARD, HOST, MEMCACHED, ROUTED, Server

# Behaviours where cellard deliberately differs from memcached 1.6.18.  Each
# entry: name -> (why cellard differs, function(reply unit bytes) -> bytes),
# the function being applied to every reply unit of both servers before they
# are compared.  Empty: after CAS numbering, replies must be identical byte
# for byte.
# Where cellard deliberately differs from memcached 1.6.18 (the README lists
# the same).  Each entry: (why, normaliser applied to both servers' reply
# units).  These differences need inputs the stream keeps out (flags or
# lengths past 32 bits, a long key after other keys on a get line, a number
# changed while another connection reads it), so their normalisers are the
# identity: they are here to be listed, not to hide anything.
def _same(unit):
    return unit


ALLOW_LIST = {
    "flags-32bit": ("flags > 2^32-1 and <bytes> >= 2^31 are CLIENT_ERROR; 1.6.18 keeps "
                    "their low 32 bits", _same),
    "get-long-key": ("a get line with a key > 250 bytes is refused before any lookup; "
                     "1.6.18 looks up (and gat touches) the keys before it", _same),
    "incr-held": ("incr/decr while another reader holds the item: always padded to the "
                  "old length; 1.6.18 then stores the exact digits", _same),
}

DEFAULT_SEED = 1601
N_COMMANDS = int(os.environ.get("DIFF_COMMANDS", "40000"))
BATCH_TIMEOUT = 20.0
TOTAL_TIMEOUT = 150.0 + N_COMMANDS / 1000.0   # ~2 s per 40000 commands on memcached

ITEM_MAX = 1 << 20
SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
EXP_ABS_FUTURE = (2000000000, 2147483647, 1900000000)
EXP_ABS_PAST = (2592001, 1000000000, 1600000000, 3000000)
# append/prepend data never contains digits, so no stored number can grow
# past 2^63 by concatenation (see the module docstring).
DIGITLESS = bytes.maketrans(b"0123456789", b"abcdefghij")


WHITESPACE = b" \t\n\v\f\r"


def not_all_whitespace(v):
    """Empty values are fine (incr rejects them); all-whitespace ones are not."""
    if v and not v.strip(WHITESPACE):
        return v[:-1] + b"w"
    return v


class CasRef:
    """The `idx`-th CAS a server returned for `key` (-1 = latest);
    rendered per server."""

    def __init__(self, key, idx):
        self.key, self.idx = key, idx

    def render(self, hist):
        seen = hist.get(self.key)
        if not seen:
            return b"9223372036854775000"   # never issued by either server
        return b"%d" % seen[max(-len(seen), min(self.idx, len(seen) - 1))]

    def __repr__(self):
        return "<cas %r[%d]>" % (self.key[:20], self.idx)


class Cmd:
    def __init__(self, *parts):
        self.parts = parts

    def render(self, hist):
        return b"".join(p.render(hist) if isinstance(p, CasRef) else p for p in self.parts)

    def describe(self, limit=160):
        s = "".join(repr(p) if isinstance(p, CasRef) else repr(p)[2:-1] for p in self.parts)
        return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        r = self.r
        self.plain = [b"k%d" % i for i in range(120)]
        self.nums = [b"num%d" % i for i in range(30)]
        self.long = [(b"L%d_" % i).ljust(250, b"x") for i in range(4)] + [b"M".ljust(249, b"y")]
        self.odd = [b"tab\t%d" % i for i in range(3)] + [b"hi\x80\xfe%d" % i for i in range(3)] + \
                   [b"ctl\x01\x7f%d" % i for i in range(3)]
        printable = bytes(c for c in range(33, 127))
        self.rand = [bytes(r.choice(printable) for _ in range(r.randrange(1, 60))) for _ in range(10)]
        self.too_long = [(b"T%d_" % i).ljust(251 + i, b"z") for i in range(3)]
        self.fresh = 0

    # -- pieces ----------------------------------------------------------
    def key(self):
        x = self.r.random()
        if x < 0.70:
            return self.r.choice(self.plain)
        if x < 0.85:
            return self.r.choice(self.nums)
        if x < 0.90:
            return self.r.choice(self.long)
        if x < 0.95:
            return self.r.choice(self.odd)
        return self.r.choice(self.rand)

    def num_key(self):
        return self.r.choice(self.nums) if self.r.random() < 0.7 else self.key()

    def flags(self):
        x = self.r.random()
        if x < 0.8:
            return b"0"
        if x < 0.95:
            return b"%d" % self.r.randrange(1, 1 << 32)
        return b"4294967295"

    def exptime(self):
        x = self.r.random()
        if x < 0.65:
            return b"0"
        if x < 0.80:
            return b"%d" % self.r.randrange(1000, 2592001)
        if x < 0.86:
            return b"%d" % self.r.choice(EXP_ABS_FUTURE)
        if x < 0.93:
            return b"-%d" % self.r.choice((1, 1, 100, 2147483647))
        return b"%d" % self.r.choice(EXP_ABS_PAST)

    def number(self):
        x = self.r.random()
        if x < 0.5:
            return b"%d" % self.r.randrange(0, 100)
        if x < 0.8:
            return b"%d" % self.r.randrange(0, 1 << 41)
        return self.r.choice((b"0", b"1", b"007", b" 12", b"12 ", b"+5", b"-3", b"-0", b"1a",
                              b"a1", b"5 x", b"\t7", b"\n8", b"0x10", b"", b" 9 ", b"99",
                              b"100", b"1000", b"0000000000000000000000000005", b"4611686018427387904"))

    def value(self):
        r = self.r
        x = r.random()
        if x < 0.70:
            n = r.randrange(0, 50)
        elif x < 0.90:
            n = r.randrange(50, 2000)
        elif x < 0.98:
            n = r.randrange(2000, 20000)
        else:
            n = r.randrange(20000, 100001)
        y = r.random()
        if y < 0.5:
            return r.randbytes(n)
        if y < 0.8:
            return bytes(r.choice(b"abcdefghij \r\n\0") for _ in range(min(n, 300))) + b"z" * max(0, n - 300)
        if y < 0.95:
            return self.number()
        return b"END\r\nVALUE k1 0 1\r\nx\r\n"[:n] if n < 30 else b"\r\n" * (n // 2)

    def safe_line(self, n):
        return bytes(self.r.choice(SAFE) for _ in range(n))

    def sp(self):
        """Separator: usually one space, sometimes a run of them."""
        return b" " if self.r.random() < 0.97 else b"  "

    def eol(self):
        x = self.r.random()
        return b"\r\n" if x < 0.95 else (b"\n" if x < 0.98 else b" \r\n")

    def noreply(self, p=0.12):
        return b" noreply" if self.r.random() < p else b""

    # -- commands --------------------------------------------------------
    def storage(self):
        r = self.r
        verb = r.choice((b"set",) * 5 + (b"add", b"replace", b"append", b"prepend"))
        key = self.num_key() if r.random() < 0.2 else self.key()
        val = self.number() if key in self.nums and r.random() < 0.8 else self.value()
        if verb in (b"append", b"prepend"):
            val = val.translate(DIGITLESS)
        val = not_all_whitespace(val)
        sp = self.sp()
        return Cmd(verb, b" ", key, sp, self.flags(), sp, self.exptime(), sp, b"%d" % len(val),
                   self.noreply(), self.eol(), val, b"\r\n")

    def cas(self):
        r = self.r
        key = self.key()
        x = r.random()
        if x < 0.55:
            ref = CasRef(key, -1)
        elif x < 0.75:
            ref = CasRef(key, r.randrange(-4, 0))
        elif x < 0.90:
            ref = CasRef(self.key(), -1)
        else:
            ref = None
        cas = ref if ref is not None else r.choice((b"0", b"1", b"18446744073709551615", b"9223372036854775000"))
        val = not_all_whitespace(self.value())
        return Cmd(b"cas ", key, b" ", self.flags(), b" ", self.exptime(), b" ", b"%d " % len(val),
                   cas, self.noreply(), b"\r\n", val, b"\r\n")

    def retrieval(self):
        r = self.r
        verb = r.choice((b"get", b"get", b"get", b"gets", b"gets", b"gat", b"gats", b"bget"))
        x = r.random()
        n = 1 if x < 0.5 else (r.randrange(2, 10) if x < 0.9 else r.randrange(10, 101))
        keys = [self.key() for _ in range(n)]
        if verb not in (b"get", b"gets"):
            # Only get/gets lines may exceed 2048 bytes.
            while len(b" ".join(keys)) > 1900:
                keys.pop()
        if verb.startswith(b"gat"):
            return Cmd(verb, b" ", self.exptime(), b" ", b" ".join(keys), self.eol())
        return Cmd(verb, b" ", self.sp().join(keys), self.eol())

    def too_long_retrieval(self):
        r = self.r
        verb = r.choice((b"get", b"gets", b"gat 0", b"gats 100000"))
        keys = [self.key() for _ in range(r.randrange(0, 3))]
        at = r.randrange(0, len(keys) + 1)
        keys.insert(at, r.choice(self.too_long))
        cmd = Cmd(verb, b" ", b" ".join(keys), b"\r\n")
        # ALLOW_LIST "get-long-key": memcached counts (and gat touches) the
        # keys before the long one; cellard looks none of them up.
        cmd.counters_differ = at > 0
        return cmd

    def touch(self):
        return Cmd(b"touch ", self.key(), b" ", self.exptime(), self.noreply(), self.eol())

    def delete(self):
        x = self.r.random()
        extra = b" 0" if x < 0.1 else b""
        return Cmd(b"delete ", self.key(), extra, self.noreply(), self.eol())

    def arith(self):
        r = self.r
        verb = r.choice((b"incr", b"decr"))
        x = r.random()
        if x < 0.5:
            delta = b"%d" % r.randrange(0, 100)
        elif x < 0.9:
            delta = b"%d" % r.randrange(0, 1 << 32)
        else:
            delta = r.choice((b"-1", b"abc", b"18446744073709551616", b"1.5", b"0x5", b"+3", b"007"))
        return Cmd(verb, b" ", self.num_key(), b" ", delta, self.noreply(), self.eol())

    def big_arith(self):
        """Large deltas on a fresh key; every stored result stays below 2^63
        (incr only ever adds up to what is left below 2^63, decr never grows)."""
        r = self.r
        self.fresh += 1
        key = b"big:%d" % self.fresh
        base = r.randrange(0, 1000)
        d1 = r.randrange(1 << 61, (1 << 63) - 2000)
        top = base + d1                          # the value after the first incr
        d3 = r.randrange(0, (1 << 63) - top)     # max(0, top - d2) + d3 < 2^63
        return [Cmd(b"set ", key, b" 0 0 %d\r\n%d\r\n" % (len(b"%d" % base), base)),
                Cmd(b"incr ", key, b" %d\r\n" % d1),
                Cmd(b"decr ", key, b" %d\r\n" % r.randrange(0, 1 << 64)),
                Cmd(b"get ", key, b"\r\n"),
                Cmd(b"incr ", key, b" %d\r\n" % d3),
                Cmd(b"decr ", key, b" %d\r\n" % r.randrange(0, 1 << 63)),
                Cmd(b"get ", key, b"\r\n"),
                Cmd(b"delete ", key, b"\r\n")]

    def too_large(self):
        r = self.r
        n = r.randrange(ITEM_MAX + 1024, ITEM_MAX + 8192)
        key = self.key()
        return [Cmd(b"set ", key, b" 0 0 %d" % n, self.noreply(0.3), b"\r\n",
                    r.randbytes(n), b"\r\n"),
                Cmd(b"get ", key, b"\r\n")]

    def bad_chunk(self):
        """A storage command whose data block is not `\\r\\n`-terminated where
        <bytes> says; what follows is [SAFE] lines."""
        r = self.r
        verb = r.choice((b"set", b"add", b"replace", b"append", b"prepend", b"cas"))
        n = r.randrange(0, 40)
        x = r.random()
        if x < 0.4 or (0.6 <= x < 0.8 and n < 2):     # longer than declared
            body = self.safe_line(n + 2 + r.randrange(0, 30)) + b"\r\n"
        elif x < 0.6:   # one byte longer: "\r" lands in the block, "\n" is left
            body = self.safe_line(n + 1) + b"\r\n"
        elif x < 0.8:   # shorter, with the \r\n inside the block
            m = r.randrange(0, n - 1)
            body = self.safe_line(m) + b"\r\n" + self.safe_line(n - m) + b"\r\n"
        else:           # terminated by a bare \n
            body = self.safe_line(n) + b"\nX" + self.safe_line(r.randrange(0, 5)) + b"\r\n"
        assert body[n:n + 2] != b"\r\n"
        cas = b" %d" % r.randrange(1, 1000) if verb == b"cas" else b""
        return Cmd(verb, b" ", self.key(), b" 0 0 %d" % n, cas, self.noreply(0.2), b"\r\n", body)

    def malformed(self):
        r = self.r
        k = self.key()
        tl = r.choice(self.too_long)
        data = self.safe_line(r.randrange(0, 20))
        d = b"%d" % len(data)
        choices = [
            b"foo\r\n", b"GET " + k + b"\r\n", b"sets " + k + b"\r\n", b"\r\n", b" \r\n", b"x\r\n",
            b"\n", b"gett " + k + b"\r\n", b"incr2 " + k + b" 1\r\n", b"SET " + k + b" 0 0 1\r\nA\r\n",
            b"get\r\n", b"gets\r\n", b"gat\r\n", b"gat 0\r\n", b"gats abc " + k + b"\r\n",
            b"gat -x " + k + b"\r\n", b"incr " + k + b"\r\n", b"decr\r\n", b"incr " + k + b" 1 2 3\r\n",
            b"touch " + k + b"\r\n", b"touch " + k + b" abc\r\n", b"touch " + k + b" 1 2 3\r\n",
            b"delete\r\n", b"delete " + k + b" 5\r\n", b"delete " + k + b" a b c\r\n",
            b"delete " + k + b" noreply x\r\n", b"flush_all abc\r\n", b"flush_all 0 0 0\r\n",
            b"verbosity\r\n", b"verbosity abc\r\n", b"verbosity 1 2 3\r\n",
            b"refresh_certs\r\n", b"refresh_certs noreply\r\n", b"stats extstore\r\n",
            b"stats sizes\r\n", b"stats sizes_x\r\n",
            b"set " + k + b" 0 0\r\n" + data + b"\r\n",
            b"set " + k + b" 0 0 " + d + b" noreply extra\r\n" + data + b"\r\n",
            b"set " + k + b" abc 0 " + d + b"\r\n" + data + b"\r\n",
            b"set " + k + b" -1 0 " + d + b"\r\n" + data + b"\r\n",
            b"add " + k + b" 0 abc " + d + b"\r\n" + data + b"\r\n",
            b"replace " + k + b" 0 0 abc\r\n" + data + b"\r\n",
            b"append " + k + b" 0 0 -1\r\n" + data + b"\r\n",
            b"prepend " + k + b" 0 0 1x\r\n" + data + b"\r\n",
            b"set " + k + b" 0 1e3 " + d + b"\r\n" + data + b"\r\n",
            b"set " + k + b" 0x1 0 " + d + b"\r\n" + data + b"\r\n",
            b"cas " + k + b" 0 0 " + d + b"\r\n" + data + b"\r\n",
            b"cas " + k + b" 0 0 " + d + b" abc\r\n" + data + b"\r\n",
            b"cas " + k + b" 0 0 " + d + b" -1\r\n" + data + b"\r\n",
            b"cas " + k + b" 0 0 " + d + b" 18446744073709551616\r\n" + data + b"\r\n",
            b"set " + tl + b" 0 0 " + d + b"\r\n" + data + b"\r\n",
            b"set " + tl + b" 0 0 " + d + b" noreply\r\n" + data + b"\r\n",
            b"cas " + tl + b" 0 0 " + d + b" 1\r\n" + data + b"\r\n",
            b"delete " + tl + b"\r\n", b"delete " + tl + b" noreply\r\n",
            b"incr " + tl + b" 1\r\n", b"decr " + tl + b" 1 noreply\r\n", b"touch " + tl + b" 0\r\n",
            b"set " + k + b" 0 0 " + d + b" 1 2 3\r\n" + data + b"\r\n",
            b"set " + k + b" 00 -0 +" + d + b"\r\n" + data + b"\r\n",
        ]
        if ROUTED:  # the router answers admin commands itself (README: router exceptions)
            choices = [c for c in choices if not c.startswith((b"refresh_certs", b"stats"))]
        return [Cmd(r.choice(choices))]

    def misc(self):
        r = self.r
        x = r.random()
        if x < 0.3:
            return Cmd(r.choice((b"flush_all", b"flush_all 0", b"flush_all -1",
                                 b"flush_all noreply", b"flush_all 0 noreply")) + b"\r\n")
        return Cmd(r.choice((b"verbosity 0", b"verbosity 1", b"verbosity 0 noreply",
                             b"verbosity 1 noreply")) + b"\r\n")

    def batch(self):
        """A list of 1-20 commands (compound generators add a few more)."""
        r = self.r
        n = r.randrange(1, 21)
        out = []
        if r.random() < 0.02:
            out.append(self.too_long_retrieval())
        while len(out) < n:
            x = r.random() * 100
            if x < 30:
                out.append(self.storage())
            elif x < 37:
                out.append(self.cas())
            elif x < 62:
                out.append(self.retrieval())
            elif x < 67:
                out.append(self.touch())
            elif x < 73:
                out.append(self.delete())
            elif x < 84:
                out.append(self.arith())
            elif x < 84.5:
                out.extend(self.big_arith())
            elif x < 92.5:
                out.extend(self.malformed())
            elif x < 95.5:
                out.append(self.bad_chunk())
            elif x < 95.55:
                out.extend(self.too_large())
            elif x < 95.95:
                out.append(self.misc())
            else:
                out.append(self.retrieval())
        return out


class Side:
    """One server's connection, its CAS bookkeeping and reply buffer."""

    def __init__(self, name, port):
        self.name = name
        self.sock = socket.create_connection((HOST, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.cas_index = {}    # CAS number -> order of first appearance
        self.cas_hist = {}     # key -> [CAS numbers seen, in order]
        self.out = b""
        self.inbuf = bytearray()
        self.eof = False

    def close(self):
        self.sock.close()


def exchange(sides, payloads, tails, timeout):
    """Send payloads[i] to sides[i] while reading, until every side's input
    ends with tails[i].  Returns the replies (tail stripped) or raises with
    what each side had received."""
    sel = selectors.DefaultSelector()
    for s, p in zip(sides, payloads):
        s.out = memoryview(p)
        s.inbuf = bytearray()
        sel.register(s.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, s)
    deadline = time.monotonic() + timeout
    done = [False] * len(sides)
    try:
        while not all(done):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timeout after %.0fs; received so far:\n%s" % (timeout, "\n".join(
                    "  %s (%d bytes): %s" % (s.name, len(s.inbuf), trunc(bytes(s.inbuf)[-400:]))
                    for s in sides)))
            for key, ev in sel.select(min(left, 1.0)):
                s = key.data
                if ev & selectors.EVENT_WRITE and len(s.out):
                    try:
                        n = s.sock.send(s.out[:1 << 18])
                        s.out = s.out[n:]
                    except (BlockingIOError, InterruptedError):
                        pass
                    if not len(s.out):
                        sel.modify(s.sock, selectors.EVENT_READ, s)
                if ev & selectors.EVENT_READ:
                    try:
                        chunk = s.sock.recv(1 << 20)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except ConnectionResetError:
                        chunk = b""
                    if not chunk:
                        raise AssertionError("%s closed the connection; received: %s"
                                             % (s.name, trunc(bytes(s.inbuf)[-400:])))
                    s.inbuf += chunk
            for i, s in enumerate(sides):
                done[i] = not len(s.out) and s.inbuf.endswith(tails[i])
    finally:
        sel.close()
    return [bytes(s.inbuf[:-len(t)]) for s, t in zip(sides, tails)]


def normalise(side, raw):
    """Split a batch's replies into units (a line, or a VALUE line with its
    data block) and replace gets/gats CAS numbers by their order of first
    appearance on this side.  Records the CAS per key for later `cas`."""
    units = []
    pos = 0
    while pos < len(raw):
        eol = raw.find(b"\r\n", pos)
        if eol < 0:
            units.append(raw[pos:])
            break
        line = raw[pos:eol + 2]
        pos = eol + 2
        toks = line[:-2].split(b" ")
        if toks[0] == b"VALUE" and len(toks) in (4, 5) and toks[3].isdigit():
            n = int(toks[3])
            data = raw[pos:pos + n + 2]
            pos += n + 2
            if len(toks) == 5 and toks[4].isdigit():
                cas = int(toks[4])
                idx = side.cas_index.setdefault(cas, len(side.cas_index))
                hist = side.cas_hist.setdefault(toks[1], [])
                if not hist or hist[-1] != cas:
                    hist.append(cas)
                line = b" ".join(toks[:4]) + b" #%d\r\n" % idx
            units.append(line + data)
        else:
            units.append(line)
    return units


EXPECTED_KINDS = [
    "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND", "DELETED", "TOUCHED", "OK", "END",
    "VALUE", "VALUE+cas", "<number>", "ERROR",
    "CLIENT_ERROR bad command line format",
    "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
    "CLIENT_ERROR bad data chunk", "CLIENT_ERROR invalid exptime argument",
    "CLIENT_ERROR invalid numeric delta argument",
    "CLIENT_ERROR cannot increment or decrement non-numeric value",
    "SERVER_ERROR object too large for cache",
]


def reply_kind(unit):
    """A coarse class of one reply unit, for the coverage summary."""
    if unit.startswith(b"VALUE "):
        return "VALUE+cas" if b" #" in unit.split(b"\r\n", 1)[0] else "VALUE"
    line = unit[:-2] if unit.endswith(b"\r\n") else unit
    if line.isdigit():
        return "<number>"
    return line.decode("latin-1")


def trunc(b, n=300):
    r = repr(b)
    return r if len(r) <= n else r[:n] + "...(%d bytes)" % len(b)


def mentions(cmd, key):
    """Does the command line (first line of the rendered command) name key?"""
    line = cmd.render({}).split(b"\n", 1)[0].rstrip(b"\r")
    return key in line.split(b" ")[1:]


def report(seed, bno, cmds, sides, units, raws, history):
    a, b = units
    i = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
    lines = ["replies differ in batch %d (DIFF_SEED=%d); first difference at reply unit %d"
             % (bno, seed, i)]
    for s, u in zip(sides, units):
        lines.append("  %s unit %d: %s" % (s.name, i, trunc(u[i]) if i < len(u) else "<none>"))
    lines.append("  commands of the batch:")
    lines += ["    %2d: %s" % (j, c.describe()) for j, c in enumerate(cmds)]
    keys = {u[i].split(b" ")[1] for u in units if i < len(u) and u[i].startswith(b"VALUE ")}
    for key in keys:
        past = [(n, c) for n, c in history if mentions(c, key)][-12:]
        lines.append("  earlier commands naming %r (batch: command):" % key)
        lines += ["    %5d: %s" % (n, c.describe()) for n, c in past]
    for s, raw in zip(sides, raws):
        lines.append("  %s full reply: %s" % (s.name, trunc(raw, 1500)))
    return "\n".join(lines)


def test_differential_random_stream():
    seed = int(os.environ.get("DIFF_SEED", DEFAULT_SEED))
    print("differential: DIFF_SEED=%d, %d commands, under test %s, oracle %s"
          % (seed, N_COMMANDS, CELLARD, MEMCACHED))
    gen = Gen(seed)
    t0 = time.monotonic()
    with Server(CELLARD, args=["-m", 1024], name="under-test") as sut, \
            Server(MEMCACHED, args=["-m", 1024], name="oracle") as ora:
        sides = [Side("under-test", sut.port), Side("oracle", ora.port)]
        counters = None
        try:
            # A flat LRU keeps memcached's incr/decr deterministic (section 7).
            # Sent to both (memcached may be the server under test too); the
            # server under test's reply is discarded, whatever it is.
            got = exchange(sides, [b"lru mode flat\r\n"] * 2, [b"\r\n"] * 2, 5)
            assert got[1] == b"OK", "oracle answered lru mode flat with %r" % got[1]
            counters = StatsDiff([s.name for s in sides], [sut.port, ora.port])
            sent = 0
            bno = 0
            stats = {"bytes": 0}
            kinds = {}
            history = collections.deque(maxlen=20000)
            while sent < N_COMMANDS:
                bno += 1
                cmds = gen.batch()
                token = b"sentinel-%d-%08x" % (bno, gen.r.getrandbits(32))
                sentinel = b"set __sentinel__ 0 0 %d\r\n%s\r\nget __sentinel__\r\n" % (len(token), token)
                tail = b"STORED\r\nVALUE __sentinel__ 0 %d\r\n%s\r\nEND\r\n" % (len(token), token)
                payloads = [b"".join(c.render(s.cas_hist) for c in cmds) + sentinel for s in sides]
                stats["bytes"] += len(payloads[1])
                try:
                    raws = exchange(sides, payloads, [tail, tail], BATCH_TIMEOUT)
                except AssertionError as e:
                    raise AssertionError("batch %d (DIFF_SEED=%d): %s\n  commands:\n%s" % (
                        bno, seed, e, "\n".join("    %2d: %s" % (j, c.describe())
                                                for j, c in enumerate(cmds))))
                for i, raw in enumerate(raws):
                    counters.io(i, len(payloads[i]), len(raw) + len(tail))
                try:
                    if any(getattr(c, "counters_differ", False) for c in cmds):
                        counters.resync()
                    else:
                        counters.check("batch %d (DIFF_SEED=%d)" % (bno, seed),
                                       len(payloads[1]), cmds=len(cmds) + 2)
                except AssertionError as e:
                    raise AssertionError("%s\n  commands of the batch:\n%s" % (e, "\n".join(
                        "    %2d: %s" % (j, c.describe()) for j, c in enumerate(cmds))))
                units = [normalise(s, raw) for s, raw in zip(sides, raws)]
                for _why, fix in ALLOW_LIST.values():
                    units = [[fix(u) for u in us] for us in units]
                if units[0] != units[1]:
                    raise AssertionError(report(seed, bno, cmds, sides, units, raws, history))
                history.extend((bno, c) for c in cmds)
                for u in units[1]:
                    kind = reply_kind(u)
                    kinds[kind] = kinds.get(kind, 0) + 1
                sent += len(cmds)
                assert time.monotonic() - t0 < TOTAL_TIMEOUT, \
                    "differential run exceeded %.0fs at batch %d" % (TOTAL_TIMEOUT, bno)
            print("differential: %d commands in %d batches, %.1f MB sent per server, "
                  "%d CAS numbers seen, %.1fs" % (sent, bno, stats["bytes"] / 1e6,
                                                   len(sides[1].cas_index), time.monotonic() - t0))
            print("differential: reply kinds: %s" % ", ".join(
                "%s %d" % kv for kv in sorted(kinds.items(), key=lambda kv: -kv[1])))
            # The stream must have exercised every kind of reply.
            missing = [k for k in EXPECTED_KINDS if kinds.get(k, 0) == 0]
            assert not missing, "the stream produced no %s" % missing
            assert len(sides[1].cas_index) > 100, "too few gets replies to exercise CAS"
            print("differential: counters compared after %d batches; moved on the oracle: %s"
                  % (counters.checks, " ".join(sorted(counters.moved))))
        finally:
            if counters is not None:
                counters.close()
            for s in sides:
                s.close()
