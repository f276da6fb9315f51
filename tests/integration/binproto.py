"""Helpers for memcached's binary protocol in the integration tests.

Requests are built with `req()` (any header field can be forced, for
malformed requests), responses split with `parse_packets()`, and `BinConn`
is a util.Conn that reads whole response packets.  The protocol facts are
in src/protocol/mc_bin.h.
"""

import collections
import socket
import struct
import time

from util import Conn

HDR = struct.Struct(">BBHBBHIIQ")    # magic op keylen extlen datatype vbucket|status bodylen opaque cas
REQ_MAGIC, RES_MAGIC = 0x80, 0x81

# Opcodes (memcached's numbers).
GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH, GETQ, NOOP, VERSION = range(0x0c)
GETK, GETKQ, APPEND, PREPEND, STAT = 0x0c, 0x0d, 0x0e, 0x0f, 0x10
SETQ, ADDQ, REPLACEQ, DELETEQ, INCRQ, DECRQ, QUITQ, FLUSHQ, APPENDQ, PREPENDQ = range(0x11, 0x1b)
VERBOSITY, TOUCH, GAT, GATQ = 0x1b, 0x1c, 0x1d, 0x1e
SASL_LIST, SASL_AUTH, SASL_STEP, GATK, GATKQ = 0x20, 0x21, 0x22, 0x23, 0x24

QUIET = {GETQ: GET, GETKQ: GETK, SETQ: SET, ADDQ: ADD, REPLACEQ: REPLACE, DELETEQ: DELETE,
         INCRQ: INCR, DECRQ: DECR, QUITQ: QUIT, FLUSHQ: FLUSH, APPENDQ: APPEND,
         PREPENDQ: PREPEND, GATQ: GAT, GATKQ: GATK}

# Statuses and memcached 1.6.18's texts for them.
OK, ENOENT, EEXISTS, E2BIG, EINVAL, NOT_STORED, DELTA_BADVAL = range(7)
AUTH_ERROR, UNKNOWN_COMMAND, ENOMEM = 0x20, 0x81, 0x82
TEXT = {ENOENT: b"Not found", EEXISTS: b"Data exists for key.", E2BIG: b"Too large.",
        EINVAL: b"Invalid arguments", NOT_STORED: b"Not stored.",
        DELTA_BADVAL: b"Non-numeric server-side value for incr or decr",
        AUTH_ERROR: b"Auth failure.", UNKNOWN_COMMAND: b"Unknown command"}

NO_CREATE = 0xffffffff   # incr/decr exptime: a miss answers Not found


def req(op, key=b"", ext=b"", value=b"", opaque=0, cas=0, magic=REQ_MAGIC, keylen=None,
        extlen=None, bodylen=None, datatype=0, vbucket=0):
    """One request's bytes; keylen/extlen/bodylen default to the real lengths."""
    if isinstance(key, str):
        key = key.encode()
    if isinstance(value, str):
        value = value.encode()
    kl = len(key) if keylen is None else keylen
    el = len(ext) if extlen is None else extlen
    bl = len(ext) + len(key) + len(value) if bodylen is None else bodylen
    return HDR.pack(magic, op, kl, el, datatype, vbucket, bl, opaque, cas) + ext + key + value


def set_ext(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def incr_ext(delta, initial=0, exptime=NO_CREATE):
    return struct.pack(">QQI", delta, initial, exptime)


def exp_ext(exptime):
    return struct.pack(">I", exptime)


def noop(opaque=0):
    return req(NOOP, opaque=opaque)


def noop_reply(opaque=0):
    """The exact bytes of the answer to noop(opaque)."""
    return HDR.pack(RES_MAGIC, NOOP, 0, 0, 0, 0, 0, opaque, 0)


Packet = collections.namedtuple("Packet", "magic op keylen extlen datatype status bodylen opaque cas "
                                          "ext key value raw")


def parse_packets(buf):
    """Split bytes into whole packets; returns (packets, rest)."""
    out = []
    pos = 0
    while len(buf) - pos >= 24:
        f = HDR.unpack_from(buf, pos)
        end = pos + 24 + f[6]
        if end > len(buf):
            break
        body = buf[pos + 24:end]
        el, kl = f[3], f[2]
        out.append(Packet(*f, ext=body[:el], key=body[el:el + kl], value=body[el + kl:],
                          raw=bytes(buf[pos:end])))
        pos = end
    return out, bytes(buf[pos:])


def packet_len(buf):
    """Length of the first whole packet in buf, or 0."""
    if len(buf) < 24:
        return 0
    n = 24 + struct.unpack_from(">I", buf, 8)[0]
    return n if len(buf) >= n else 0


def describe(p):
    """A short readable line for a packet (reports)."""
    if isinstance(p, bytes):
        return "raw %r" % p[:80]
    s = "op=%#04x st=%#x opq=%#x cas=%d" % (p.op, p.status, p.opaque, p.cas)
    if p.ext:
        s += " ext=%s" % p.ext.hex()
    if p.key:
        s += " key=%r" % p.key[:40]
    if p.value:
        s += " val=%r%s" % (p.value[:60], "...(%d)" % len(p.value) if len(p.value) > 60 else "")
    return s


class BinConn(Conn):
    """A raw binary-protocol connection (util.Conn with packet reads)."""

    def packet(self, timeout=None):
        raw = self.read_until(packet_len, timeout, what="a binary response")
        return parse_packets(raw)[0][0]

    def call(self, data, timeout=None):
        """Send one request and return its one response packet."""
        self.send(data)
        return self.packet(timeout)

    def until_noop(self, data, opaque=0xfeedf00d, timeout=None):
        """Send data followed by a NOOP; return the packets answered before
        the NOOP's answer (quiet requests leave theirs out)."""
        self.send(data + noop(opaque))
        tail = noop_reply(opaque)
        raw = self.read_until(lambda b: len(b) if b.endswith(tail) else 0, timeout,
                              what="the NOOP's answer")
        pkts, rest = parse_packets(raw[:-24])
        assert not rest, "trailing bytes before the NOOP's answer: %r" % rest
        return pkts

    def stats(self, group=b""):
        """Binary STAT: a dict name -> value (bytes), read to the empty packet."""
        self.send(req(STAT, key=group, opaque=0x5747))
        out = {}
        while True:
            p = self.packet()
            assert p.op == STAT and p.opaque == 0x5747, describe(p)
            if p.status != OK:
                raise KeyError((p.status, p.value))
            if not p.key:
                return out
            out[p.key.decode()] = p.value


def exchange_to_close(sides, payloads, timeout):
    """Send payloads[i] to sides[i] (each with .sock and .name) and read until
    every side has closed; returns what each sent back.  A reset counts as a
    close, and so does a send the peer refused because it had closed."""
    socks = [s.sock for s in sides]
    for s in socks:
        s.setblocking(True)
        s.settimeout(timeout)
    got = []
    for s, side, p in zip(socks, sides, payloads):
        try:
            s.sendall(p)
        except (BrokenPipeError, ConnectionResetError):
            pass
        buf = b""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s did not close the connection within %.0fs; got %r"
                                     % (side.name, timeout, buf[-300:]))
            s.settimeout(left)
            try:
                chunk = s.recv(1 << 20)
            except ConnectionResetError:
                break
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
        got.append(buf)
    return got
