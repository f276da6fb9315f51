"""The network core's back ends (-o io=auto|uring|epoll; cellar-router --io).

io_uring is the default where the kernel and its sandbox allow it; where
they do not (Docker's default seccomp profile refuses io_uring_setup with
EPERM), `auto` falls back to epoll with a one-line notice and serves, and
an explicit `uring` refuses to start.  The sandbox is made here the way
such a container makes it: a seccomp filter, installed in the child
before exec, that fails io_uring_setup(2) with EPERM.

The rest of the suite runs on the default back end; `make io-epoll` runs
it all again on epoll.
"""
import ctypes
import errno
import os
import socket
import struct
import subprocess
import time

import pytest

from router_util import Router
from util import CELLARD, ROUTER, Conn, Server, free_port, root_args, wait_for, HOST

NR_IO_URING_SETUP = 425         # the same number on x86_64 and the generic table (arm64)


def deny_io_uring():
    """preexec_fn: io_uring_setup fails with EPERM in this process from now on."""
    ins = [
        (0x20, 0, 0, 0),                                  # A = seccomp_data.nr
        (0x15, 0, 1, NR_IO_URING_SETUP),                  # A == io_uring_setup ?
        (0x06, 0, 0, 0x00050000 | errno.EPERM),           # SECCOMP_RET_ERRNO | EPERM
        (0x06, 0, 0, 0x7FFF0000),                         # SECCOMP_RET_ALLOW
    ]
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in ins))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Fprog(len(ins), ctypes.addressof(code))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:                   # PR_SET_NO_NEW_PRIVS
        os._exit(90)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        os._exit(91)


def settings(c):
    return c.stats("settings")


def io_uring_allowed():
    """Does io_uring_setup(2) work for this process (kernel and sandbox)?"""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    params = ctypes.create_string_buffer(120)             # struct io_uring_params, zeroed
    fd = libc.syscall(NR_IO_URING_SETUP, 4, params)
    if fd < 0:
        return False
    os.close(fd)
    return True


def test_default_is_io_uring_where_allowed():
    # The development machines allow io_uring (kernel.io_uring_disabled is 0),
    # so auto takes it; where a sandbox refuses it, auto says so and takes epoll.
    allowed = io_uring_allowed()
    with Server(args=["-o", "io=auto"]) as srv, srv.conn() as c:
        assert settings(c)["io"] == ("uring" if allowed else "epoll")
        assert ("io_uring unavailable" in srv.stderr_text()) == (not allowed)


def test_epoll_when_asked():
    with Server(args=["-o", "io=epoll"]) as srv, srv.conn() as c:
        assert settings(c)["io"] == "epoll"
        c.send(b"set k 0 0 1\r\nx\r\nget k\r\n")
        assert c.read_to(b"END\r\n") == b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n"


def test_sandbox_without_io_uring_falls_back_to_epoll_and_serves():
    with Server(args=["-o", "io=auto"], preexec_fn=deny_io_uring) as srv:
        conns = [srv.conn() for _ in range(8)]
        try:
            for i, c in enumerate(conns):
                c.send(b"set k%d 0 0 1\r\n%d\r\n" % (i, i))
            for c in conns:
                assert c.readline() == b"STORED\r\n"
            for i, c in enumerate(conns):
                c.send(b"get k%d\r\n" % i)
                assert c.read_to(b"END\r\n") == b"VALUE k%d 0 1\r\n%d\r\nEND\r\n" % (i, i)
            assert settings(conns[0])["io"] == "epoll"
        finally:
            for c in conns:
                c.close()
        err = srv.stderr_text()
        assert "io_uring unavailable" in err and "using epoll" in err, err
        assert len([ln for ln in err.splitlines() if "io_uring" in ln]) == 1, err


def test_io_uring_asked_for_in_such_a_sandbox_refuses_to_start():
    r = subprocess.run([CELLARD, "-l", HOST, "-p", str(free_port()), "-U", "0", "-o", "io=uring"]
                       + root_args(), capture_output=True, timeout=20, preexec_fn=deny_io_uring)
    assert r.returncode != 0
    assert b"-o io=uring" in r.stderr and b"Operation not permitted" in r.stderr, r.stderr


def test_io_takes_three_values():
    r = subprocess.run([CELLARD, "-o", "io=kqueue"] + root_args(), capture_output=True,
                       timeout=20)
    assert r.returncode != 0
    assert b"-o io is auto, uring or epoll" in r.stderr, r.stderr


@pytest.mark.parametrize("io", ["auto", "epoll", "uring"])
def test_router_serves_on_each_back_end(io):
    # auto under a sandbox without io_uring: epoll, said once
    preexec = deny_io_uring if io == "auto" else None
    with Server() as backend, Router("%s:%d" % (HOST, backend.port), args=["--io=" + io],
                                     preexec_fn=preexec) as r:
        with Conn(r.port) as c:
            c.send(b"set r 0 0 2\r\nhi\r\nget r\r\n")
            assert c.read_to(b"END\r\n") == b"STORED\r\nVALUE r 0 2\r\nhi\r\nEND\r\n"
        err = r.stderr_text()
    assert ("io_uring unavailable" in err) == (io == "auto"), err


def test_router_io_uring_asked_for_in_such_a_sandbox_refuses_to_start(tmp_path):
    cfg = tmp_path / "servers"
    cfg.write_text("%s:11211" % HOST)
    r = subprocess.run([ROUTER, "--config", str(cfg), "-l", HOST, "-p", str(free_port()),
                        "-o", "io=uring"], capture_output=True, timeout=20,
                       preexec_fn=deny_io_uring)
    assert r.returncode != 0
    assert b"--io=uring" in r.stderr and b"Operation not permitted" in r.stderr, r.stderr


def test_receive_buffers_run_out_and_every_connection_is_still_served():
    # Two receive buffers for 300 connections whose requests all arrive at
    # once (the server stopped meanwhile): receives find no buffer, wait for
    # the others' to come back, and every connection gets its answers.
    import signal
    with Server(args=["-o", "io=uring", "-t", "1", "-o", "io_bufs=2", "-c", "1024"]) as srv:
        conns = [Conn(srv.port) for _ in range(300)]
        try:
            for rnd in range(2):
                os.kill(srv.proc.pid, signal.SIGSTOP)
                try:
                    for i, c in enumerate(conns):
                        c.send(b"set k%d 0 0 1\r\n%d\r\nget k%d\r\n" % (i, rnd, i))
                finally:
                    os.kill(srv.proc.pid, signal.SIGCONT)
                for i, c in enumerate(conns):
                    assert c.read_to(b"END\r\n", timeout=20) == \
                        b"STORED\r\nVALUE k%d 0 1\r\n%d\r\nEND\r\n" % (i, rnd), i
            st = conns[0].stats()
            assert st["read_buf_count"] == "2", st["read_buf_count"]
        finally:
            for c in conns:
                c.close()


@pytest.mark.parametrize("io", ["uring", "epoll"])
def test_a_client_that_does_not_read_is_not_read_from(io):
    # 3,000,000 gets of a 400-byte value (27 MB of requests, 1.2 GB of
    # answers) from a client that reads none: the server stops reading it
    # once its answers wait (what it has not read stays in the sockets'
    # buffers, some MB), holds a bounded amount, and serves another client
    # meanwhile.
    with Server(args=["-o", "io=" + io, "-t", "1"]) as srv, srv.conn() as other:
        other.send(b"set big 0 0 400\r\n" + b"b" * 400 + b"\r\n")
        assert other.readline() == b"STORED\r\n"
        rss0 = srv.rss_kb()
        slow = socket.create_connection((HOST, srv.port))
        try:
            slow.setblocking(False)
            data = b"get big\r\n" * 3000000
            sent, deadline = 0, time.monotonic() + 3
            while sent < len(data) and time.monotonic() < deadline:
                try:
                    sent += slow.send(data[sent:sent + 65536])
                except BlockingIOError:
                    time.sleep(0.01)
            for i in range(50):
                other.send(b"get big\r\n")
                assert other.read_to(b"END\r\n") == b"VALUE big 0 400\r\n" + b"b" * 400 + \
                    b"\r\nEND\r\n"
            grown = srv.rss_kb() - rss0
            print("%s: RSS grew %d KB; the kernel took %d of %d bytes" % (io, grown, sent, len(data)))
            assert grown < 24 << 10, "RSS grew %d KB behind a client that does not read" % grown
            assert sent < len(data), "the server read all 27 MB of requests it cannot answer"
        finally:
            slow.close()
        other.send(b"get big\r\n")
        assert other.read_to(b"END\r\n").startswith(b"VALUE big 0 400\r\n")


@pytest.mark.parametrize("io", ["uring", "epoll"])
def test_stops_cleanly_with_requests_in_flight(io):
    # SIGTERM while the kernel holds sends to clients that do not read (a
    # 64 KB value, 500 times each), receives of half-sent requests, and idle
    # connections: the server exits 0 within the stop's 10 s (under make
    # asan, with nothing leaked and nothing touched after it was freed).
    srv = Server(args=["-o", "io=" + io, "-t", "2"]).start()
    socks = []
    try:
        with srv.conn() as c:
            c.send(b"set big 0 0 65536\r\n" + b"v" * 65536 + b"\r\n")
            assert c.readline() == b"STORED\r\n"
        for i in range(12):
            s = socket.create_connection((HOST, srv.port))
            s.setblocking(False)
            socks.append(s)
            if i % 3 == 0:
                try:
                    s.send(b"get big\r\n" * 500)
                except BlockingIOError:
                    pass
            elif i % 3 == 1:
                s.send(b"set half 0 0 100\r\n" + b"h" * 40)
        # wait until the server has read what it could and blocked on its sends
        wait_for(lambda: int(srv.stats()["bytes_written"]) > 4 * (1 << 20), 10,
                 what="the server to have sent some of the answers")
    finally:
        problem = srv.stop()
        for s in socks:
            s.close()
        err = srv.stderr_text()
        srv._cleanup_file()
    assert problem is None, (problem, err[-2000:])
