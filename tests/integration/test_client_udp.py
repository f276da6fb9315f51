"""libcellar's UDP gets (a pool with udp): gets go in memcached's UDP frames,
everything else over TCP; replies of several datagrams are reassembled; a
lost or late reply answers CELLAR_DROPPED (a miss not to refill), counted,
and never marks the server down."""

import socket
import threading

import pytest

import cellar_ffi as cf
import util

KINDS = {"cellard": lambda: util.CELLARD, "memcached": lambda: util.MEMCACHED}


@pytest.mark.parametrize("proto", ("meta", "text", "binary"))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_udp_gets(kind, proto):
    servers = [util.Server(KINDS[kind](), udp=True, name="%s-udp-%d" % (kind, i))
               for i in range(3)]
    try:
        for s in servers:
            s.start()
        # The window out of the way, so that the multi-get below goes out at once.
        with cf.Client(servers, protocol=proto, udp=1, window_init=4096, window_min=4096,
                       window_max=4096, window_bytes=-1) as c:
            keys = ["u%d" % i for i in range(300)]
            for k in keys:
                assert c.set(k, "v" + k, flags=5) == cf.OK
            big = b"B" * 20000                     # 15 datagrams of 1,392 bytes
            assert c.set("big", big) == cf.OK
            assert c.get("u1")[:3] == (cf.OK, b"vu1", 5)
            assert c.gets("u1")[3] > 0
            assert c.get("absent")[0] == cf.NOT_FOUND
            assert c.get("big")[1] == big
            sends = c.stats()["udp_sends"]
            got = c.mget(keys + ["absent", "big"])
            assert all(g[0] == cf.OK and g[1] == ("v" + k).encode() for g, k in zip(got, keys))
            assert got[-2][0] == cf.NOT_FOUND and got[-1][1] == big
            st = c.stats()
            assert st["udp_gets"] == 4 + len(keys) + 2 and st["udp_drops"] == 0
            # A server's gets share datagrams (~100 lines of 10 to 30 bytes: 1 to 3
            # datagrams of 1,400 bytes), not one datagram a key.
            assert 3 <= st["udp_sends"] - sends <= 12, st["udp_sends"] - sends
            # The servers saw these gets over UDP: their TCP connections carried the sets.
            per = [int(s.stats()["cmd_get"]) for s in servers]
            assert sum(per) == st["udp_gets"]
    finally:
        for s in servers:
            if s.proc is not None:
                s.stop()
            s._cleanup_file()


def test_udp_drops_are_misses_not_failures(netns):
    """Replies of 15 datagrams through a tbf queue that holds fewer: most are
    lost; each such get answers DROPPED after the timeout, is counted, and
    the server is not marked down; TCP gets of the same keys still work."""
    (addr,) = netns.start_servers(util.CELLARD, 1, udp=True)
    big = b"D" * 20000
    with cf.Client([addr], udp=1, server_timeout_ms=200) as c, cf.Client([addr]) as tcp:
        for i in range(20):
            assert tcp.set("d%d" % i, big) == cf.OK
        netns.shape(rate="1mbit", burst="4kb", limit="6kb")
        got = c.mget(["d%d" % i for i in range(20)])
        dropped = [g for g in got if g[0] == cf.DROPPED]
        assert dropped, [g[0] for g in got]
        assert all(g[0] in (cf.OK, cf.DROPPED) for g in got)
        assert all(g[1] == big for g in got if g[0] == cf.OK)
        st = c.stats()
        assert st["udp_drops"] == len(dropped) and st["tko_events"] == 0
        assert not c.server_down(0)
        netns.unshape()
        assert tcp.get("d0")[1] == big
        assert c.get("d0")[1] == big


def test_udp_datagram_answered_in_part():
    """One datagram carries a server's gets, a line each; a server that
    answers each line as a message of its own (as memcached does) and never
    answers the last: the answered gets come back, only the last is dropped."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.05)
    port = sock.getsockname()[1]
    seen, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                d, peer = sock.recvfrom(65536)
            except socket.timeout:
                continue
            lines = d[8:].split(b"\r\n")[:-1]
            seen.append(lines)
            for line in lines[:-1]:
                key = line.split()[1]
                sock.sendto(d[:2] + b"\0\0\0\1\0\0" +
                            b"VALUE %s 0 3\r\nv%s\r\nEND\r\n" % (key, key), peer)

    t = threading.Thread(target=serve)
    t.start()
    try:
        with cf.Client("127.0.0.1:%d" % port, protocol="text", udp=1,
                       server_timeout_ms=300) as c:
            got = c.mget(["ka", "kb", "kc"])
            st = c.stats()
    finally:
        stop.set()
        t.join(timeout=10)
        sock.close()
    assert seen == [[b"get ka", b"get kb", b"get kc"]]
    assert [g[:2] for g in got] == [(cf.OK, b"vka"), (cf.OK, b"vkb"), (cf.DROPPED, None)]
    assert st["udp_sends"] == 1 and st["udp_gets"] == 3 and st["udp_drops"] == 1
