"""Helpers the router's own tests share (test_router_faults.py,
test_router_admin.py): the router itself, plain backends, restarting one,
config addresses."""

import http.client
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import util


def need(path, var):
    if not path or not os.access(path, os.X_OK):
        pytest.fail("%s=%r is not an executable file: set it (these tests never skip)"
                    % (var, path), pytrace=False)
    return path


def backend(name):
    """A plain cellard on a free port (util.Server would be a RoutedServer
    when CELLAR_ROUTE_SUT=1)."""
    need(util.CELLARD, "CELLARD")
    s = object.__new__(util.Server)
    util.Server.__init__(s, util.CELLARD, [], name=name)
    return s


def restart(server):
    """Start a SIGKILLed backend again on its port, same argv and stderr file."""
    server.proc = subprocess.Popen(server.argv, stdin=subprocess.DEVNULL,
                                   stdout=server._errf, stderr=server._errf)

    def accepts():
        try:
            socket.create_connection((util.HOST, server.port), timeout=1).close()
            return True
        except OSError:
            return False
    util.wait_for(accepts, 10, what="%s to accept again on %d" % (server.name, server.port))


def addrs(servers):
    return ["%s:%d" % (util.HOST, s.port) for s in servers]


class Router(util.Server):
    """cellar-router on a free port over a config file it watches (and, with
    metrics, an HTTP port; with spool, an --async-dir removed with it);
    stopped by pid like util.Server (a crash or a bad exit fails the test)."""

    def __init__(self, config, threads=2, conns=None, metrics=False, spool=False, args=(),
                 preexec_fn=None):
        super().__init__(need(os.environ.get("CELLAR_ROUTER"), "CELLAR_ROUTER"),
                         name="cellar-router", preexec_fn=preexec_fn)
        fd, self.config = tempfile.mkstemp(prefix="cellar-router-", suffix=".json")
        os.close(fd)
        self.write_config(config)
        self.extra = ["-t", str(threads)] + (["-c", str(conns)] if conns else []) + list(args)
        self.metrics = metrics
        self.metrics_port = None
        self.spool_dir = None
        if spool:       # failed deletes spooled there
            self.spool_dir = tempfile.mkdtemp(prefix="cellar-router-spool-")
            self.extra += ["--async-dir", self.spool_dir]

    def write_config(self, text):
        """Replace the file in one rename, so the router never reads half of it."""
        tmp = self.config + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)

    def start(self):
        err = ""
        for _attempt in range(5):
            self.port = util.free_port()
            self.argv = [self.binary, "--config", self.config, "-l", util.HOST,
                         "-p", str(self.port)] + util.ROUTER_ARGS + self.extra
            # (a test's own flags last, to win over CELLAR_ROUTER_ARGS, as util.Server
            # puts its args after CELLARD_ARGS: make io-epoll's --io=epoll)
            if self.metrics:
                self.metrics_port = util.free_port()
                self.argv += ["--metrics", "%s:%d" % (util.HOST, self.metrics_port)]
            self._errf = tempfile.NamedTemporaryFile(prefix="cellar-router-",
                                                     suffix=".stderr", delete=False)
            # Under make asan, freed answers wait in ASan's quarantine (256 MB by
            # default) and would count against the memory bounds the fault tests
            # check; a small quarantine keeps RSS about what the router holds.
            asan = ":".join(o for o in (os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=16")
                            if o)
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=self._errf, stderr=self._errf,
                                         env=dict(os.environ, ASAN_OPTIONS=asan),
                                         preexec_fn=self.preexec_fn)
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    socket.create_connection((util.HOST, self.port), timeout=1).close()
                    return self
                except OSError:
                    time.sleep(0.01)
            if self.proc.poll() is None:
                self._kill()
                raise AssertionError("cellar-router did not accept: %s" % self.argv)
            err = self.stderr_text()
            self._cleanup_file()      # a port taken meanwhile: again, on others
        raise AssertionError("cellar-router failed to start: %s: %s" % (self.argv, err[-1000:]))

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for p in (self.config, self.config + ".tmp"):
                if os.path.exists(p):
                    os.unlink(p)
            if self.spool_dir:
                shutil.rmtree(self.spool_dir, ignore_errors=True)

    def stat(self, name):
        return int(self.stats()[name])

    def servers(self):
        """`stats servers` (mcrouter's line per destination, "host:port:proto:plain:
        notcompressed-T") as {host:port: {field: str}}: its fields (avg_latency_us,
        pending_reqs, inflight_reqs, the handles in each state, requests, replies, ...),
        workers_down (the handles down) and state: the worst of down, up, connecting
        (new) and idle (closed)."""
        out = {}
        for dest, line in self.stats("servers").items():
            f = {}
            for w in line.replace(";", " ").split():
                k, _, v = w.partition(":")
                if v:
                    f[k] = v
            f["workers_down"] = f.get("down", "0")
            f["state"] = ("down" if "down" in f else "up" if "up" in f
                          else "connecting" if "new" in f else "idle")
            out[dest.rsplit(":", 3)[0]] = f
        return out

    def http(self, method, path):
        """(status, content type, body) of one HTTP request to --metrics."""
        c = http.client.HTTPConnection(util.HOST, self.metrics_port, timeout=10)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.getheader("Content-Type"), r.read().decode()
        finally:
            c.close()
