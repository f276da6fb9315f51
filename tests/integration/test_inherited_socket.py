"""Listening sockets a server is given rather than opens: cellard takes
systemd's (LISTEN_PID, LISTEN_FDS from fd 3), cellar-router mcrouter's
--listen-sock-fd.  A client connecting before the server has started waits
in the socket's backlog and is answered once it runs, which is why these
exist (a supervisor holds the port across a restart)."""

import os
import socket
import subprocess

from router_util import need
from util import CELLARD, HOST, root_args


def listening():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, 0))
    s.listen(16)
    return s


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def ask(port, req, want):
    with socket.create_connection((HOST, port), timeout=10) as c:
        c.sendall(req)
        got = b""
        while not got.endswith(want) and len(got) < len(want):
            d = c.recv(4096)
            assert d, "closed after %r" % got
            got += d
        assert got == want, got


def test_cellard_takes_systemds_socket():
    s = listening()
    port = s.getsockname()[1]
    early = socket.create_connection((HOST, port), timeout=10)   # waits in the backlog
    early.sendall(b"version\r\n")
    argv = ["bash", "-c", 'exec 3<&%d; LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"' % s.fileno(), "bash",
            CELLARD, "-U", "0", "-p", "1"] + root_args()
    p = subprocess.Popen(argv, pass_fds=[s.fileno()], stdin=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    s.close()
    try:
        got = early.recv(64)
        assert got.startswith(b"VERSION "), (got, p.poll(), p.stderr.read() if p.poll() is not None else "")
        early.close()
        ask(port, b"set k 0 0 1\r\nv\r\nget k\r\n", b"STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n")
        # -p 1 was not opened: systemd's socket stands for it
        with socket.socket() as t:
            assert t.connect_ex((HOST, 1)) != 0
    finally:
        stop(p)
    # another process's variables are not ours: cellard listens as told
    p = subprocess.Popen([CELLARD, "-U", "0", "-p", "0", "-s", "/nonexistent/x"] + root_args(),
                         env=dict(os.environ, LISTEN_PID="1", LISTEN_FDS="1"),
                         stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert p.wait(10) != 0      # the unix socket it was told to open cannot be
    finally:
        stop(p)


def test_cellard_refuses_a_socket_that_does_not_listen():
    argv = ["bash", "-c", 'exec 3</dev/null; LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"', "bash", CELLARD,
            "-U", "0"] + root_args()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert p.returncode == 71 and "failed to listen" in p.stderr, p


def test_router_listen_sock_fd():
    router = need(os.environ.get("CELLAR_ROUTER"), "CELLAR_ROUTER")
    s = listening()
    port = s.getsockname()[1]
    with open(os.devnull) as null:
        cfg = "/tmp/cellar-it-inherit-%d.json" % os.getpid()
        with open(cfg, "w") as f:
            f.write('{"pools": {"A": {"servers": ["127.0.0.1:1"]}}, "route": "NullRoute"}')
        p = subprocess.Popen([router, "--config", cfg, "--listen-sock-fd", str(s.fileno()),
                              "-t", "1"], pass_fds=[s.fileno()], stdin=null,
                             stderr=subprocess.PIPE)
        s.close()
        try:
            ask(port, b"get k\r\n", b"END\r\n")
            ask(port, b"version\r\n", b"VERSION 1.6.18\r\n")
        finally:
            stop(p)
            os.unlink(cfg)
        bad = subprocess.run([router, "--config", cfg + ".none", "--listen-sock-fd", "0"],
                             capture_output=True, text=True, timeout=10)
        assert bad.returncode != 0
        with open(cfg, "w") as f:
            f.write('{"route": "NullRoute"}')
        try:
            bad = subprocess.run([router, "--config", cfg, "--listen-sock-fd", "0", "-t", "1"],
                                 stdin=null, capture_output=True, text=True, timeout=10)
        finally:
            os.unlink(cfg)
        assert bad.returncode == 71, bad
        assert "--listen-sock-fd 0 is not a listening TCP socket" in bad.stderr, bad
