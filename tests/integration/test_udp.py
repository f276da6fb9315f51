"""UDP transport (-U): frame headers, multi-datagram replies, dropped
multi-datagram requests, and one store shared with TCP.

Replies are reassembled the way a client does it: datagrams carry the
request id, and each message runs from sequence 0 to total-1.  memcached
1.6.18 sends one message per internal response object while cellard sends
one per request; both read back the same bytes this way, so these tests
pass against either server.
"""

import socket
import struct
import time

from util import HOST, Server, free_port

MAX_DATAGRAM = 1400


def _udp_server():
    port = free_port()
    return Server(args=["-U", port]), port


def _frame(reqid, data, seq=0, total=1):
    return struct.pack(">HHHH", reqid, seq, total, 0) + data


class UdpClient:
    def __init__(self, port):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.settimeout(5)
        self.addr = (HOST, port)

    def close(self):
        self.s.close()

    def send(self, reqid, data, seq=0, total=1):
        self.s.sendto(_frame(reqid, data, seq, total), self.addr)

    def reply(self, reqid, terminator, deadline=5.0):
        """Reads datagrams for reqid until the reassembled reply ends with
        terminator; checks every frame header on the way.  Returns (bytes,
        number of datagrams)."""
        end = time.monotonic() + deadline
        body, count, expect_seq, total = b"", 0, 0, None
        while not body.endswith(terminator):
            self.s.settimeout(max(0.01, end - time.monotonic()))
            d, _ = self.s.recvfrom(65536)
            assert len(d) <= MAX_DATAGRAM, len(d)
            rid, seq, tot, res = struct.unpack(">HHHH", d[:8])
            assert rid == reqid, (rid, reqid)
            assert res == 0
            count += 1
            if tot == 0:            # memcached's empty message for a miss
                assert len(d) == 8
                continue
            if seq == 0:
                assert expect_seq == 0 or expect_seq == total, "message cut short"
                total, expect_seq = tot, 0
            assert tot == total and seq == expect_seq, (seq, tot, expect_seq, total)
            expect_seq += 1
            body += d[8:]
        assert expect_seq == total, "last message incomplete"
        return body, count


def test_frame_header_and_store():
    srv, port = _udp_server()
    with srv:
        u = UdpClient(port)
        try:
            u.send(0x1234, b"set uk 7 0 5\r\nhello\r\n")
            d, _ = u.s.recvfrom(65536)
            assert d == struct.pack(">HHHH", 0x1234, 0, 1, 0) + b"STORED\r\n", d
            # TCP sees what UDP stored, and UDP sees what TCP stored.
            with srv.conn() as c:
                c.expect(b"get uk\r\n", b"VALUE uk 7 5\r\nhello\r\nEND\r\n")
                c.expect(b"set tk 1 0 3\r\nabc\r\n", b"STORED\r\n")
            u.send(7, b"get tk\r\n")
            body, n = u.reply(7, b"END\r\n")
            assert body == b"VALUE tk 1 3\r\nabc\r\nEND\r\n" and n == 1, (body, n)
        finally:
            u.close()


def test_large_value_spans_many_datagrams():
    srv, port = _udp_server()
    with srv:
        value = bytes((i * 7) & 0xff for i in range(100 * 1024))
        with srv.conn() as c:
            c.expect(b"set big 0 0 %d\r\n" % len(value) + value + b"\r\n", b"STORED\r\n")
        u = UdpClient(port)
        try:
            u.send(99, b"get big\r\n")
            body, n = u.reply(99, b"END\r\n")
            want = b"VALUE big 0 %d\r\n" % len(value) + value + b"\r\nEND\r\n"
            assert body == want
            assert n >= len(want) // (MAX_DATAGRAM - 8), n
        finally:
            u.close()


def test_many_keys_in_one_request():
    srv, port = _udp_server()
    with srv:
        with srv.conn() as c:
            for i in range(50):
                c.expect(b"set mk%d 0 0 %d\r\n%d\r\n" % (i, len(b"%d" % i), i), b"STORED\r\n")
            keys = b" ".join(b"mk%d" % i for i in range(0, 60))   # 10 misses too
            tcp = c.call(b"get " + keys + b"\r\n", terminator=b"END\r\n")
        u = UdpClient(port)
        try:
            u.send(5, b"get " + keys + b"\r\n")
            body, _ = u.reply(5, b"END\r\n")
            assert body == tcp
        finally:
            u.close()


def test_multi_datagram_request_is_dropped():
    srv, port = _udp_server()
    with srv:
        u = UdpClient(port)
        try:
            # Announces 2 datagrams: dropped without an answer...
            u.send(1, b"set drop 0 0 1\r\nx\r\n", seq=0, total=2)
            # ...so the first reply that comes back is the one to request 2.
            u.send(2, b"get drop\r\n")
            body, _ = u.reply(2, b"END\r\n")
            assert body == b"END\r\n", body
        finally:
            u.close()


def test_meta_commands():
    """The meta protocol over UDP: ms reads its value from the datagram, mg
    sends the value, q hides what it hides, mn ends the reply, leases."""
    srv, port = _udp_server()
    with srv:
        u = UdpClient(port)
        try:
            u.send(11, b"ms um 5 T0 F3 c\r\nhello\r\nmg um v s f k\r\nmd um q\r\n"
                       b"mg um v q\r\nmg um v\r\nmn\r\n")
            body, _ = u.reply(11, b"MN\r\n")
            assert body == b"HD c1\r\nVA 5 s5 f3 kum\r\nhello\r\nEN\r\nMN\r\n", body
            # A lease over UDP: the miss wins, the next reader is told Z.
            u.send(12, b"mg ul N30 c\r\nmg ul c\r\nmn\r\n")
            body, _ = u.reply(12, b"MN\r\n")
            assert body == b"HD c2 W\r\nHD c2 Z\r\nMN\r\n", body
        finally:
            u.close()
