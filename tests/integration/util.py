"""Shared helpers for the integration tests.

A test starts its own servers with `Server(...)` (a context manager), talks to
them over raw sockets with `Conn`, or through pymemcache.  Every wait in here
is a poll with a deadline, never a fixed sleep.

Environment:
  CELLARD    the server under test (default /usr/bin/memcached, so the tests
             can be developed and checked against the real memcached).
  CELLARD_ARGS  extra flags for the server under test (not the oracle),
             e.g. "-o evict=s3fifo" to run the suite under another policy.
  MEMCACHED  the oracle used by the differential test is always
             /usr/bin/memcached (Debian's 1.6.18).
  CELLAR_ROUTER  the path of cellar-router (the router's own tests need it).
  CELLAR_ROUTE_SUT=1  the server under test is that router in front of
             CELLAR_ROUTER_BACKENDS (default 4) processes of CELLARD, started
             with the test's flags: the same suites then check the router
             against the same expectations.
"""

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Every server's stderr file, until its server is done with it: a test that
# stops a server without a `with` block (and reads its stderr after) leaves
# the file to the end of the process, which removes what is left.
_STDERR_FILES = set()


@atexit.register
def _remove_stderr_files():
    for name in list(_STDERR_FILES):
        try:
            os.unlink(name)
        except OSError:
            pass

CELLARD = os.environ.get("CELLARD", "/usr/bin/memcached")
# Extra flags for the server under test only, e.g. CELLARD_ARGS="-o evict=s3fifo".
CELLARD_ARGS = os.environ.get("CELLARD_ARGS", "").split()
MEMCACHED = "/usr/bin/memcached"
HOST = "127.0.0.1"
ROUTER = os.environ.get("CELLAR_ROUTER")
# Extra flags for every cellar-router the tests start, e.g. CELLAR_ROUTER_ARGS="--io=epoll".
ROUTER_ARGS = os.environ.get("CELLAR_ROUTER_ARGS", "").split()
# The server under test is cellar-router in front of CELLARD (RoutedServer).
ROUTED = os.environ.get("CELLAR_ROUTE_SUT") == "1"
ROUTER_BACKENDS = int(os.environ.get("CELLAR_ROUTER_BACKENDS", "4"))


def sanitized(binary):
    """Is binary built with AddressSanitizer (make asan)?  Its allocations
    carry redzones, so per-connection memory is larger there."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def free_port():
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def exchange(port, data):
    """All the server answers to data, until it stops answering for a moment
    or closes; and whether it closed."""
    s = socket.create_connection((HOST, port), timeout=10)
    try:
        s.sendall(data)
        s.settimeout(0.5)
        got, closed = b"", False
        while True:
            try:
                chunk = s.recv(1 << 20)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
        return got, closed
    finally:
        s.close()


def wait_for(pred, timeout, interval=0.01, what="condition"):
    """Poll pred() until it returns a true value; return that value.
    Raises AssertionError naming `what` when the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def rss_kb(pid):
    """Resident set size of a process in KiB, from /proc/<pid>/status."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


def root_args():
    return ["-u", "root"] if os.geteuid() == 0 else []


class ServerCrashed(AssertionError):
    pass


class Server:
    """Start `binary` listening on 127.0.0.1:<free port> (TCP only) with extra
    args; poll until it accepts; stop it by pid on exit.

    On exit it is a failure (ServerCrashed) if the server died before we
    stopped it, if it exited non-zero or by a signal after SIGTERM, or if it
    had to be SIGKILLed.  stderr goes to a temp file (`stderr_text()`)."""

    def __new__(cls, binary=None, args=(), name=None, start_timeout=10.0, udp=False, **kw):
        # The server under test behind cellar-router (CELLAR_ROUTE_SUT); the
        # oracle and servers of other binaries stay themselves.
        if (cls is Server and ROUTED and (binary or CELLARD) == CELLARD and name != "oracle"
                and not udp):
            return super().__new__(RoutedServer)
        return super().__new__(cls)

    def __init__(self, binary=None, args=(), name=None, start_timeout=10.0, udp=False,
                 preexec_fn=None):
        self.binary = binary or CELLARD
        self.preexec_fn = preexec_fn    # run in the child before exec (test_io.py's seccomp)
        self.udp = udp              # also listen on UDP, on the TCP port's number
        self.args = [str(a) for a in args]
        self.name = name or os.path.basename(self.binary)
        self.start_timeout = start_timeout
        self.proc = None
        self.port = None
        self.returncode = None
        self._errf = None

    # -- lifecycle -------------------------------------------------------
    def start(self):
        last = ""
        for _attempt in range(5):
            self.port = free_port()
            extra = CELLARD_ARGS if self.binary == CELLARD and CELLARD != MEMCACHED else []
            argv = ([self.binary, "-l", HOST, "-p", str(self.port),
                     "-U", str(self.port) if self.udp else "0"]
                    + root_args() + extra + self.args)
            self._errf = tempfile.NamedTemporaryFile(
                prefix="cellar-it-%s-" % self.name, suffix=".stderr", delete=False)
            _STDERR_FILES.add(self._errf.name)
            # Under make asan freed memory waits in ASan's quarantine (256 MB
            # by default) and would count against the memory bounds tests
            # check; a small one keeps RSS about what the server holds.
            asan = ":".join(o for o in (os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=16")
                            if o)
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=self._errf, stderr=self._errf,
                                         preexec_fn=self.preexec_fn,
                                         env=dict(os.environ, ASAN_OPTIONS=asan))
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    socket.create_connection((HOST, self.port), timeout=1).close()
                    self.argv = argv
                    return self
                except OSError:
                    time.sleep(0.01)
            if self.proc.poll() is None:
                self._kill()
                raise AssertionError("%s did not accept on port %d within %.0fs: %s"
                                     % (self.name, self.port, self.start_timeout, argv))
            last = self.stderr_text()
            self._cleanup_file()
            # Exited early: most likely the port was taken meanwhile; retry.
        raise AssertionError("%s failed to start (%s): %s" % (self.name, argv, last[-2000:]))

    def _kill(self):
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()

    def stop(self, timeout=10.0):
        """SIGTERM, wait, SIGKILL after the deadline. Returns a problem
        string, or None when the server stopped cleanly."""
        if self.proc is None:
            return None
        problem = None
        rc = self.proc.poll()
        term_sent = getattr(self, "_term_sent", False)
        if rc is not None and not term_sent:
            problem = "died before it was stopped (exit status %d)" % rc
        else:
            if not term_sent:
                self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout)
                if rc != 0:
                    problem = "exit status %d after SIGTERM" % rc
            except subprocess.TimeoutExpired:
                self._kill()
                rc = self.proc.returncode
                problem = "did not exit within %.0fs of SIGTERM (SIGKILLed)" % timeout
        self.returncode = rc
        return problem

    def _cleanup_file(self):
        if self._errf is not None:
            self._errf.close()
            try:
                os.unlink(self._errf.name)
            except OSError:
                pass
            _STDERR_FILES.discard(self._errf.name)
            self._errf = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        problem = self.stop()
        err = self.stderr_text()
        self._cleanup_file()
        if problem:
            msg = "%s %s; stderr tail: %r" % (self.name, problem, err[-2000:])
            if exc_type is None:
                raise ServerCrashed(msg)
            # The test already failed; the crash is probably why, so say so.
            sys.stderr.write("note: %s\n" % msg)
        return False

    # -- inspection ------------------------------------------------------
    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self):
        return rss_kb(self.proc.pid)

    def stderr_text(self):
        if self._errf is None:
            return ""
        try:
            with open(self._errf.name, "rb") as f:
                return f.read().decode("latin-1")
        except OSError:
            return ""

    def conn(self, timeout=10.0):
        return Conn(self.port, timeout=timeout)

    def client(self, **kw):
        """A pymemcache client for this server (replies awaited by default)."""
        from pymemcache.client.base import Client
        kw.setdefault("default_noreply", False)
        kw.setdefault("connect_timeout", 5)
        kw.setdefault("timeout", 10)
        return Client((HOST, self.port), **kw)

    def stats(self, sub=""):
        """`stats [sub]` over a fresh raw connection, as a dict of str -> str."""
        with self.conn() as c:
            return c.stats(sub)


class RoutedServer(Server):
    """cellar-router on 127.0.0.1:<free port> in front of ROUTER_BACKENDS
    servers of `binary` (each with the test's args), as one server: port,
    pid and stderr are the router's; alive() and the crash checks on exit
    cover the backends too.  The router's config is the backends as a
    server list (meta protocol, ch3 hashing: libcellar's defaults)."""

    def start(self):
        self.backends = []
        try:
            for i in range(ROUTER_BACKENDS):
                b = object.__new__(Server)
                Server.__init__(b, self.binary, self.args, name="%s-backend%d" % (self.name, i))
                self.backends.append(b.start())
            fd, self.config = tempfile.mkstemp(prefix="cellar-it-router-", suffix=".conf")
            with os.fdopen(fd, "w") as f:
                f.write(",".join("%s:%d" % (HOST, b.port) for b in self.backends))
            real, self.binary, self.args = self.binary, ROUTER, []
            try:
                for _attempt in range(5):
                    self.port = free_port()
                    argv = [ROUTER, "--config", self.config, "-l", HOST, "-p", str(self.port),
                            "-t", "2", "--enable-flush-cmd"] + ROUTER_ARGS
                    self._errf = tempfile.NamedTemporaryFile(
                        prefix="cellar-it-router-", suffix=".stderr", delete=False)
                    _STDERR_FILES.add(self._errf.name)
                    self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                                 stdout=self._errf, stderr=self._errf)
                    deadline = time.monotonic() + self.start_timeout
                    while time.monotonic() < deadline and self.proc.poll() is None:
                        try:
                            socket.create_connection((HOST, self.port), timeout=1).close()
                            self.argv = argv
                            return self
                        except OSError:
                            time.sleep(0.01)
                    if self.proc.poll() is None:
                        self._kill()
                        raise AssertionError("cellar-router did not accept: %s" % argv)
                    self._cleanup_file()
                raise AssertionError("cellar-router failed to start: %s" % argv)
            finally:
                self.binary = real
        except BaseException:
            self._stop_backends()
            raise

    def _stop_backends(self):
        problems = []
        # SIGTERM to every live backend first, then wait for each: memcached
        # takes most of a second to exit, and four in a row added 3 s a test.
        for b in getattr(self, "backends", []):
            if b.proc is not None and b.proc.poll() is None:
                b.proc.send_signal(signal.SIGTERM)
                b._term_sent = True
        for b in getattr(self, "backends", []):
            p = b.stop()
            if p:
                problems.append("%s %s" % (b.name, p))
            b._cleanup_file()
        self.backends = []
        if getattr(self, "config", None):
            try:
                os.unlink(self.config)
            except OSError:
                pass
            self.config = None
        return problems

    def stop(self, timeout=10.0):
        problem = super().stop(timeout)
        problems = ([("cellar-router " + problem)] if problem else []) + self._stop_backends()
        return "; ".join(problems) or None

    def alive(self):
        return super().alive() and all(b.alive() for b in self.backends)


class Conn:
    """A raw text-protocol connection with an input buffer and deadlines."""

    def __init__(self, port, host=HOST, timeout=10.0):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()
        return False

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self, deadline):
        """Read once more into the buffer; False at EOF. Raises on timeout."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("deadline passed")
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def read_until(self, pred, timeout=None, what="reply"):
        """Read until pred(buffer) returns an end offset (int > 0); return
        and consume buffer[:end]. Raises AssertionError on timeout or EOF."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            end = pred(self.buf)
            if end:
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            try:
                if not self._fill(deadline):
                    raise AssertionError("connection closed while waiting for %s; got %r"
                                         % (what, self.buf[:300]))
            except socket.timeout:
                raise AssertionError("timed out waiting for %s; got %r"
                                     % (what, self.buf[:300]))

    def read_to(self, terminator, timeout=None):
        """Return everything up to and including the first `terminator`."""
        if isinstance(terminator, str):
            terminator = terminator.encode()

        def pred(b):
            i = b.find(terminator)
            return i + len(terminator) if i >= 0 else 0
        return self.read_until(pred, timeout, what=repr(terminator))

    def read_exact(self, n, timeout=None):
        return self.read_until(lambda b: n if len(b) >= n else 0, timeout,
                               what="%d bytes" % n)

    def readline(self, timeout=None):
        return self.read_to(b"\r\n", timeout)

    def call(self, data, terminator=b"\r\n", timeout=None):
        """Send data, return the reply up to and including terminator."""
        self.send(data)
        return self.read_to(terminator, timeout)

    def expect(self, data, reply, timeout=None):
        """Send data and assert the reply is exactly `reply` (bytes)."""
        if isinstance(reply, str):
            reply = reply.encode()
        self.send(data)

        def pred(b):
            # Enough bytes, or already different from the expected reply: stop
            # early so a wrong answer fails at once instead of timing out.
            if len(b) >= len(reply):
                return len(reply)
            return len(b) if b and not reply.startswith(b) else 0
        got = self.read_until(pred, timeout, what="reply %r" % reply[:100])
        assert got == reply, "sent %r: expected %r, got %r" % (
            data[:200], reply, got + self.buf[:200])
        return got

    def read_get_reply(self, timeout=None):
        """Read one get/gets/gat reply; return [(key, flags, value, cas|None)].
        Parses VALUE headers and skips data blocks by their length, so values
        containing b'END\\r\\n' are handled."""
        items = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            line = self.read_to(b"\r\n", max(0.001, deadline - time.monotonic()))
            if line == b"END\r\n":
                return items
            parts = line[:-2].split(b" ")
            assert parts[0] == b"VALUE", "unexpected get reply line %r" % line
            n = int(parts[3])
            data = self.read_exact(n + 2, max(0.001, deadline - time.monotonic()))
            assert data[-2:] == b"\r\n", "data block not terminated: %r" % data[-10:]
            cas = int(parts[4]) if len(parts) > 4 else None
            items.append((parts[1], int(parts[2]), data[:-2], cas))

    def get(self, key):
        """Raw single get; returns the value bytes or None."""
        if isinstance(key, str):
            key = key.encode()
        self.send(b"get " + key + b"\r\n")
        items = self.read_get_reply()
        return items[0][2] if items else None

    def stats(self, sub=""):
        self.send(("stats %s\r\n" % sub if sub else "stats\r\n").encode())
        raw = self.read_to(b"END\r\n")
        out = {}
        for line in raw.split(b"\r\n"):
            if line.startswith(b"STAT "):
                parts = line.decode("latin-1").split(" ", 2)
                out[parts[1]] = parts[2] if len(parts) > 2 else ""
        return out

    def wait_closed(self, timeout=5.0):
        """True if the server closes the connection (EOF or reset) before the
        deadline. Data received meanwhile is kept in self.buf."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if not self._fill(deadline):
                    return True
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
