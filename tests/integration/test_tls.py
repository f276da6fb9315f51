"""cellard's TLS (-Z, -o ssl_*): the same requests over TLS to cellard and
to Debian's memcached 1.6.18 started with the same certificates, and the
same answers back; pymemcache's tls_context; client certificates;
refresh_certs; memcached's settings and counters; and a TLS client that
misbehaves costs no one else anything."""

import shutil
import socket
import ssl
import subprocess

import pytest
from pymemcache.client.base import Client

import util
from tlsutil import Certs, call, connect
from util import CELLARD, MEMCACHED, Server


@pytest.fixture(scope="module")
def certs():
    c = Certs()
    yield c
    c.close()


def stats(port, ctx, group=b""):
    with connect(port, ctx) as s:
        out = {}
        for line in call(s, b"stats " + group + b"\r\n", b"END\r\n").decode().splitlines():
            if line.startswith("STAT "):
                _, k, v = line.split(" ", 2)
                out[k] = v
        return out


STREAMS = [
    b"set a 1 0 3\r\nabc\r\nget a\r\n",
    b"set big 0 0 15000\r\n" + b"x" * 15000 + b"\r\nget big\r\n",
    b"".join(b"set k%d 0 0 4\r\nv%03d\r\n" % (i, i) for i in range(200)) +
    b"get " + b" ".join(b"k%d" % i for i in range(200)) + b"\r\n",
    b"mg a v f\r\nms m 2\r\nhi\r\nmg m v\r\nmn\r\n",
    b"incr nope 1\r\nbogus\r\nversion\r\n",
]


def test_same_answers_as_memcached_over_tls(certs):
    ctx = certs.context()
    with Server(MEMCACHED, certs.server_args(), name="oracle") as mc, \
            Server(CELLARD, certs.server_args()) as ours:
        for data in STREAMS:
            # every stream ends with a get or mn or version, answered last
            end = b"MN\r\n" if data.endswith(b"mn\r\n") else \
                b"VERSION 1.6.18\r\n" if data.endswith(b"version\r\n") else b"END\r\n"
            with connect(mc.port, ctx) as a, connect(ours.port, ctx) as b:
                want, got = call(a, data, end), call(b, data, end)
            assert got == want, (data[:40], want[:200], got[:200])
        # the binary protocol, a set and a get of 10 KB
        key, value = b"bk", b"y" * 10000
        setq = bytes([0x80, 0x01, 0, len(key), 8, 0, 0, 0]) + \
            (8 + len(key) + len(value)).to_bytes(4, "big") + bytes(12) + bytes(8) + key + value
        getq = bytes([0x80, 0x00, 0, len(key), 0, 0, 0, 0]) + len(key).to_bytes(4, "big") + \
            bytes(12) + key
        with connect(mc.port, ctx) as a, connect(ours.port, ctx) as b:
            for s in (a, b):
                s.sendall(setq + getq)
            replies = []
            for s in (a, b):
                buf = b""
                while len(buf) < 24 + 24 + 4 + len(value):
                    buf += s.recv(1 << 20)
                replies.append((buf[:6], buf[24 + 24 + 4:]))   # status, and the value
            assert replies[0] == replies[1] and replies[1][1] == value
        # memcached's settings, as it shows them
        want, got = stats(mc.port, ctx, b"settings"), stats(ours.port, ctx, b"settings")
        for k in want:
            if k.startswith("ssl_"):
                assert got[k] == want[k], k
        assert got["ssl_enabled"] == "yes" and got["ssl_chain_cert"] == certs.server
        st = stats(ours.port, ctx)
        assert st["ssl_handshake_errors"] == "0" and "ssl_new_sessions" not in st
        assert int(st["time_since_server_cert_refresh"]) >= 0


def test_large_values_pipelined_over_tls(certs):
    """Values over a TLS record (16 KB) with requests behind them in the same
    send, which memcached 1.6.18 leaves unanswered until more bytes come: all
    answered, on both back ends."""
    for extra in ([], ["-o", "io=uring"]):
        with Server(CELLARD, certs.server_args(*extra)) as ours, \
                connect(ours.port, certs.context()) as s:
            for n in (17000, 300000, 1000000):
                value = bytes(range(256)) * (n // 256) + b"z" * (n % 256)
                got = call(s, b"set big 0 0 %d\r\n" % n + value + b"\r\nget big big\r\n",
                           b"END\r\n")
                one = b"VALUE big 0 %d\r\n" % n + value + b"\r\n"
                assert got == b"STORED\r\n" + one + one + b"END\r\n", n


def test_pymemcache_over_tls_and_io_uring(certs):
    for extra in ([], ["-o", "io=uring"]):
        with Server(CELLARD, certs.server_args(*extra)) as ours:
            c = Client((util.HOST, ours.port), tls_context=certs.context(), timeout=10)
            try:
                c.set("pm", b"v" * 70000)
                assert c.get("pm") == b"v" * 70000
                c.set_many({"a%d" % i: str(i) for i in range(100)})
                assert c.get_many(["a%d" % i for i in range(100)])["a99"] == b"99"
            finally:
                c.close()


def test_client_certificates_and_refresh(certs):
    args = certs.server_args("-o", "ssl_verify_mode=2,ssl_ca_cert=%s" % certs.ca)
    with Server(CELLARD, args) as ours:
        with connect(ours.port, certs.context(client_cert=True)) as s:
            assert call(s, b"version\r\n", b"\r\n") == b"VERSION 1.6.18\r\n"
        # no client certificate: the handshake fails, and is counted
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with connect(ours.port, certs.context()) as s:
                call(s, b"version\r\n", b"\r\n")
        util.wait_for(lambda: stats(ours.port, certs.context(client_cert=True))
                      ["ssl_handshake_errors"] == "1", 10, what="the failed handshake counted")
    # copies of the first certificate and key, which the test then overwrites
    cert, key = certs.path("refresh.pem"), certs.path("refresh.key")
    shutil.copy(certs.server, cert)
    shutil.copy(certs.server_key, key)
    with Server(CELLARD, ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (cert, key)]) as ours:
        ctx = certs.context()
        old = connect(ours.port, ctx)
        try:
            assert b"OU=first" in subject(old)
            # the files now hold the second certificate: connections from now on get it
            args = ours.argv
            with open(certs.server2, "rb") as f, open(cert, "wb") as g:
                g.write(f.read())
            with open(certs.server2_key, "rb") as f, open(key, "wb") as g:
                g.write(f.read())
            assert call(old, b"refresh_certs\r\n", b"\r\n") == b"OK\r\n"
            with connect(ours.port, ctx) as new:
                assert b"OU=second" in subject(new)
            assert b"OU=first" in subject(old)      # those open keep theirs
            # a file that is no certificate: an error, the second kept
            with open(cert, "w") as g:
                g.write("not a certificate\n")
            reply = call(old, b"refresh_certs\r\n", b"\r\n")
            assert reply.startswith(b"Error loading the certificate chain: "), reply
            with connect(ours.port, ctx) as new:
                assert b"OU=second" in subject(new)
            # the first certificate with the second's key: refused, the second kept whole
            shutil.copy(certs.server, cert)
            reply = call(old, b"refresh_certs\r\n", b"\r\n")
            assert reply.startswith(b"Error "), reply
            with connect(ours.port, ctx) as new:
                assert b"OU=second" in subject(new)
            assert args == ours.argv
        finally:
            old.close()


def subject(sock):
    """The server certificate's subject, as OpenSSL's x509 tool prints it."""
    der = sock.getpeercert(binary_form=True)
    out = subprocess.run(["openssl", "x509", "-inform", "DER", "-noout", "-subject"],
                         input=der, capture_output=True, check=True, timeout=10).stdout
    return out.replace(b" = ", b"=")


def test_bad_tls_clients_hold_up_no_one(certs):
    """Garbage instead of a handshake, a handshake left half done, and a
    client that sends requests and never reads: the others are served."""
    with Server(CELLARD, certs.server_args("-t", "1")) as ours:
        ctx = certs.context()
        garbage = socket.create_connection((util.HOST, ours.port), timeout=10)
        garbage.sendall(b"get foo\r\n" * 10)
        half = socket.create_connection((util.HOST, ours.port), timeout=10)
        half.sendall(b"\x16\x03\x01\x00\xff")          # a ClientHello's first bytes, no more
        hog = connect(ours.port, ctx)
        hog.sendall(b"set h 0 0 100000\r\n" + b"h" * 100000 + b"\r\n" +
                    b"get h h h h h h h h h h\r\n" * 50)
        try:
            with connect(ours.port, ctx) as s:
                for i in range(50):
                    assert call(s, b"set ok%d 0 0 1\r\nv\r\n" % i, b"\r\n") == b"STORED\r\n"
            # the garbage was a failed handshake (an alert, perhaps), and its connection closed
            try:
                while garbage.recv(100) != b"":
                    pass
            except ConnectionResetError:
                pass
            util.wait_for(lambda: int(stats(ours.port, ctx)["ssl_handshake_errors"]) >= 1, 10,
                          what="the garbage counted")
        finally:
            for s in (garbage, half, hog):
                s.close()


def test_notls_listener_and_settings_refused(certs):
    tls_port, plain_port = util.free_port(), util.free_port()
    args = certs.server_args("-l", "notls:127.0.0.1:%d,127.0.0.1:%d" % (plain_port, tls_port))
    with Server(CELLARD, args):     # (its own -l and -p: TLS too)
        accepts(tls_port)
        accepts(plain_port)
        with connect(tls_port, certs.context()) as s:
            assert call(s, b"set n 0 0 1\r\nv\r\n", b"\r\n") == b"STORED\r\n"
        with util.Conn(plain_port) as c:
            c.expect(b"get n\r\n", b"VALUE n 0 1\r\nv\r\nEND\r\n")
            c.expect(b"refresh_certs noreply\r\nmn\r\n", b"MN\r\n")
        # a watcher over TLS: the watch thread writes its lines through the session
        with connect(tls_port, certs.context()) as w, connect(tls_port, certs.context()) as s:
            assert call(w, b"watch fetchers\r\n", b"\r\n") == b"OK\r\n"
            for i in range(200):        # more than a TLS record of lines
                assert call(s, b"get n\r\n", b"END\r\n").startswith(b"VALUE n")
            got = b""
            while got.count(b"type=item_get") < 200:
                got += w.recv(65536)
            assert got.startswith(b"ts=") and b"key=n " in got, got[:200]
    # what memcached refuses, cellard refuses with the same exit code
    for extra in (["-o", "ssl_verify_mode=7"], ["-o", "ssl_min_version=x"],
                  ["-o", "ssl_chain_cert=/nonexistent"], ["-l", "notls:127.0.0.1:1"]):
        rcs = []
        for binary in (MEMCACHED, CELLARD):
            args = ["-p", str(util.free_port()), "-U", "0"] + util.root_args()
            if extra[0] != "-l":
                args += certs.server_args()
            p = subprocess.run([binary] + args + extra, capture_output=True, text=True,
                               timeout=10)
            rcs.append(p.returncode)
        assert rcs[0] == rcs[1] != 0, (extra, rcs)


def accepts(port):
    """Waits for port to accept (the router opens its TLS listeners after -p)."""
    def ok():
        try:
            socket.create_connection((util.HOST, port), timeout=1).close()
            return True
        except OSError:
            return False
    util.wait_for(ok, 10, what="port %d to accept" % port)


def test_router_tls_to_its_clients(certs):
    """cellar-router's --ssl-port (mcrouter's flags): TLS clients on that port,
    plain ones on -p, the same cellard behind; --ssl-require-peer-certs wants
    a certificate from the client's side, signed by --server-pem-ca-path's CA."""
    from router_util import Router, backend
    import json
    with backend("be") as be:
        cfg = json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, be.port)]}},
                          "route": "PoolRoute|a"})
        ssl_port = util.free_port()
        args = ["--ssl-port", str(ssl_port), "--server-pem-cert-path", certs.server,
                "--server-pem-key-path", certs.server_key]
        with Router(cfg, args=args) as r:
            accepts(ssl_port)
            c = Client((util.HOST, ssl_port), tls_context=certs.context(), timeout=10)
            try:
                c.set("rk", b"r" * 50000)
                assert c.get("rk") == b"r" * 50000
            finally:
                c.close()
            with util.Conn(r.port) as plain:      # -p stays plain
                plain.send(b"get rk\r\n")
                assert plain.read_to(b"END\r\n").startswith(b"VALUE rk 0 50000\r\n")
        args += ["--server-pem-ca-path", certs.ca, "--ssl-require-peer-certs"]
        with Router(cfg, args=args):
            accepts(ssl_port)
            with connect(ssl_port, certs.context(client_cert=True)) as s:
                assert call(s, b"get rk\r\n", b"END\r\n").startswith(b"VALUE rk 0 50000\r\n")
            with pytest.raises((ssl.SSLError, ConnectionError)):
                with connect(ssl_port, certs.context()) as s:
                    call(s, b"get rk\r\n", b"END\r\n")


def test_libcellar_router_cellard_all_over_tls(certs):
    """libcellar -> cellar-router -> cellard, each hop over TLS with the
    server's certificate checked against the test CA (and a client
    certificate the router requires); a server whose certificate does not
    name it, or comes from another CA, is refused."""
    import json
    from cellar_ffi import Client as Lib, ConfigError
    from router_util import Router
    with Server(CELLARD, certs.server_args()) as be:
        cfg = json.dumps({"pools": {"a": {"servers": ["127.0.0.1:%d" % be.port],
                                          "use_ssl": True}},
                          "route": "PoolRoute|a"})
        ssl_port = util.free_port()
        args = ["--ssl-port", str(ssl_port), "--server-pem-cert-path", certs.server,
                "--server-pem-key-path", certs.server_key, "--server-pem-ca-path", certs.ca,
                "--ssl-require-peer-certs", "--pem-ca-path", certs.ca]
        with Router(cfg, args=args):
            accepts(ssl_port)
            front = json.dumps({"pools": {"r": {"servers": ["127.0.0.1:%d" % ssl_port],
                                                "use_ssl": True}},
                                "route": "PoolRoute|r"})
            tls = {"ca_file": certs.ca, "cert_file": certs.client, "key_file": certs.client_key}
            with Lib(front, tls=tls) as c:
                assert c.set(b"e2e", b"v" * 40000) == 0
                assert c.get(b"e2e")[1] == b"v" * 40000
            # the value went through to cellard (read there over TLS too)
            with connect(be.port, certs.context()) as s:
                assert call(s, b"get e2e\r\n", b"END\r\n").startswith(b"VALUE e2e 0 40000")
            # without a client certificate the router refuses the handshake: the get fails
            with Lib(front, tls={"ca_file": certs.ca}) as c:
                assert c.get(b"e2e")[0] != 0
            # a CA the router's certificate is not from: refused, nothing sent
            with Lib(front, tls={"ca_file": certs.client, "cert_file": certs.client,
                                 "key_file": certs.client_key}) as c:
                assert c.get(b"e2e")[0] != 0
        with pytest.raises(ConfigError):
            Lib(front, tls={"ca_file": "/nonexistent"})


def test_libcellar_checks_the_servers_name(certs):
    """A certificate from the right CA that names another host: refused,
    unless the check is turned off."""
    import json
    from cellar_ffi import Client as Lib
    args = ["-Z", "-o", "ssl_chain_cert=%s,ssl_key=%s" % (certs.wrong, certs.wrong_key)]
    with Server(CELLARD, args) as be:
        cfg = json.dumps({"pools": {"a": {"servers": ["127.0.0.1:%d" % be.port],
                                          "use_ssl": True}}, "route": "PoolRoute|a"})
        with Lib(cfg, tls={"ca_file": certs.ca}) as c:
            assert c.set(b"n", b"v") != 0
        with Lib(cfg, tls={"ca_file": certs.ca, "no_verify": 1}) as c:
            assert c.set(b"n", b"v") == 0 and c.get(b"n")[1] == b"v"


def test_a_burst_of_requests_over_tls_is_all_answered(certs):
    """More requests in one send than a read buffer holds, whose answers fill
    the socket (cellard) or the router's queue (cellar-router): what OpenSSL
    read ahead and kept is taken once the connection may read again."""
    import json
    from router_util import Router, backend
    burst = b"get v\r\n" * 4000                       # 28 KB: two TLS records and more
    want = 4000
    with Server(CELLARD, certs.server_args("-t", "1")) as ours:
        with connect(ours.port, certs.context()) as s:
            call(s, b"set v 0 0 1000\r\n" + b"x" * 1000 + b"\r\n", b"STORED\r\n")
            s.sendall(burst)                          # 4 MB of answers: the socket fills
            got = b""
            while got.count(b"END\r\n") < want:
                chunk = s.recv(1 << 20)
                assert chunk, "closed after %d answers" % got.count(b"END\r\n")
                got += chunk
    with backend("be") as be:
        cfg = json.dumps({"pools": {"a": {"servers": ["%s:%d" % (util.HOST, be.port)]}},
                          "route": "PoolRoute|a"})
        ssl_port = util.free_port()
        with Router(cfg, threads=1, args=["--ssl-port", str(ssl_port), "--server-pem-cert-path",
                                          certs.server, "--server-pem-key-path",
                                          certs.server_key]):
            accepts(ssl_port)
            with connect(ssl_port, certs.context()) as s:
                s.sendall(burst)                      # past the router's 256 requests in hand
                got = b""
                while got.count(b"END\r\n") < want:
                    chunk = s.recv(1 << 20)
                    assert chunk, "closed after %d answers" % got.count(b"END\r\n")
                    got += chunk
