"""MEMCACHED_PORT_FILENAME: the ports a server listens on, written to a file
(memcached's t/issue_67.t finds its servers this way), against memcached
1.6.18.

Each server is started with the variable set and the same flags; once the
file appears (it is written whole, then renamed into place) its lines must
be memcached's: "TCP INET: <port>" per TCP listener, then "UDP INET: <port>"
per UDP address; an ephemeral port (-p -1, -U -1) is compared as "any port
but 11211".  With -s nothing is written.  Passes with CELLARD=/usr/bin/memcached.
"""

import os
import socket
import struct
import subprocess
import tempfile
import time

from util import CELLARD, HOST, MEMCACHED, free_port, root_args, wait_for


def _start(binary, args, env):
    return subprocess.Popen([binary] + root_args() + args, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ports(binary, args, fixed):
    """The port file's lines for binary started with args; ports in fixed
    are kept, any other becomes "ephemeral".  Every UDP port read is asked
    for `version` while the server runs."""
    with tempfile.TemporaryDirectory(prefix="cellar-it-ports-") as d:
        name = os.path.join(d, "ports")
        env = dict(os.environ, MEMCACHED_PORT_FILENAME=name)
        proc = _start(binary, ["-l", HOST] + args, env)
        try:
            wait_for(lambda: os.path.exists(name) or proc.poll() is not None, 10,
                     what="%s to write %s" % (binary, name))
            assert proc.poll() is None, "%s %s exited %s" % (binary, args, proc.returncode)
            with open(name) as f:
                lines = f.read().splitlines()
            out = []
            for ln in lines:
                kind, port = ln.split(": ")
                port = int(port)
                assert port != 0 and port != 11211 or port in fixed, ln
                out.append("%s: %s" % (kind, port if port in fixed else "ephemeral"))
                if kind == "UDP INET":
                    _udp_version(port)
            return out
        finally:
            _stop(proc)


def _udp_version(port):
    """A `version` over UDP to port gets an answer (the workers listen there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(struct.pack(">HHHH", 7, 0, 1, 0) + b"version\r\n", (HOST, port))
        data, _ = s.recvfrom(2048)
        assert data[:2] == struct.pack(">H", 7) and data[8:].startswith(b"VERSION "), data


def test_port_file_matches_memcached():
    p, u = free_port(), free_port()
    cases = [
        ["-p", str(p)],
        ["-p", str(p), "-U", str(u)],
        ["-U", str(u)],                       # TCP takes UDP's port
        ["-U", "0", "-p", str(p)],
        ["-p", "-1"],
        ["-U", "-1"],                         # both ephemeral
        ["-p", "-1", "-U", str(u)],
        ["-p", str(p), "-U", "-1"],
        ["-p", "0", "-U", str(u)],
    ]
    for args in cases:
        # only the ports this case names are kept: an ephemeral port may be
        # one that free_port() handed out for another case
        fixed = {int(a) for a in args if a.isdigit() and int(a) > 0}
        want = _ports(MEMCACHED, args, fixed)
        got = _ports(CELLARD, args, fixed)
        assert got == want, "%s: cellard %s, memcached %s" % (args, got, want)
    assert _ports(MEMCACHED, ["-U", "-1"], set()) == ["TCP INET: ephemeral",
                                                      "UDP INET: ephemeral"]


def test_no_port_file_with_a_unix_socket():
    for binary in (MEMCACHED, CELLARD):
        with tempfile.TemporaryDirectory(prefix="cellar-it-ports-") as d:
            name, sock = os.path.join(d, "ports"), os.path.join(d, "sock")
            proc = _start(binary, ["-s", sock], dict(os.environ, MEMCACHED_PORT_FILENAME=name))
            try:
                def up():
                    with socket.socket(socket.AF_UNIX) as s:
                        try:
                            s.connect(sock)
                            return True
                        except OSError:
                            return False
                wait_for(up, 10, what="%s on %s" % (binary, sock))
                assert not os.path.exists(name) and not os.path.exists(name + ".lck"), binary
            finally:
                _stop(proc)
