"""Servers behind a real link: a network namespace joined to the root one by
a veth pair, whose failures make real timeouts rather than refusals.

    from netns import Netns
    with Netns() as ns:                       # needs root and iproute2
        (ip, port), = ns.start_servers(util.CELLARD, 1)
        ...                                   # reach ip:port from here
        ns.link_down()                        # packets now vanish silently
        ns.link_up()
        ns.shape(rate="100mbit", burst="64kb", limit="256kb")  # server->client
        ns.unshape()
    # namespace, veth and every process started through ns are gone here,
    # also when the body raised

Layout, for the k-th namespace of process <pid>:

    root namespace                      namespace cellar-<pid>-<k>
    cv<pid>-<k>  10.213.<n>.1/24  <-->  eth0  10.213.<n>.2/24 (ns.host_ip)

<n> is claimed for the namespace's lifetime by binding the abstract unix
socket "@cellar-netns-10.213.<n>" (so concurrent namespaces of this and of
other processes never share one; the claim dies with the process) and is
skipped when an address or a direct route of this machine already covers
10.213.<n>.0/24.

Link down means the namespace-side end (eth0) is set down.  The root-side
end stays up, so its connected route stays and packets still go into the
veth, where they are dropped (the peer is down) without any error coming
back.  Both ends have permanent neighbour (ARP) entries, so no ARP
resolution fails either: a failed ARP would end a connect() after a few
seconds with EHOSTUNREACH, not a timeout.  Setting the root-side end down
instead would drop the connected route, and the packets would follow the
default route out of the machine (in the sandbox this was written in, an
egress proxy there accepts any TCP connection).

Every wait in here is a poll with a deadline.
"""

import ipaddress
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import util

NET_PREFIX = "10.213"
NS_DEV = "eth0"            # the veth end inside the namespace
_counter = itertools.count(1)


class NetnsError(AssertionError):
    pass


def _ip(*args, check=True, ns=None, timeout=10):
    """Run `ip [-n ns] args...`; return stdout.  Raises NetnsError with the
    command's stderr when it fails and check is set."""
    argv = ["ip"] + (["-n", ns] if ns else []) + [str(a) for a in args]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if check and r.returncode != 0:
        raise NetnsError("%s: exit %d: %s" % (" ".join(argv), r.returncode,
                                              r.stderr.decode(errors="replace").strip()))
    return r.stdout.decode()


def _ip_json(*args, ns=None):
    out = _ip("-j", *args, ns=ns).strip()
    return json.loads(out) if out else []


def _tc(ns, *args, check=True):
    argv = ["tc", "-n", ns] + [str(a) for a in args]
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=10)
    if check and r.returncode != 0:
        raise NetnsError("%s: exit %d: %s" % (" ".join(argv), r.returncode,
                                              r.stderr.decode(errors="replace").strip()))
    return r


def namespaces():
    """Names of the named network namespaces (`ip netns list`)."""
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.strip()]


def link_exists(name, ns=None):
    return _ip("link", "show", "dev", name, check=False, ns=ns) != ""


def _subnet_in_use(net):
    """True if this machine already has an address in `net`, or reaches it
    directly (a route without a gateway) rather than through the default."""
    if any(e.get("addr_info") for e in _ip_json("addr", "show", "to", str(net))):
        return True
    for host in (net[1], net[2]):
        out = _ip("-j", "route", "get", str(host), check=False).strip()
        routes = json.loads(out) if out else []
        # No route at all (unreachable, prohibit...) counts as taken too.
        if not routes or any("gateway" not in r for r in routes):
            return True
    return False


def _claim_subnet():
    """Return (socket holding the claim, IPv4Network) for a free /24."""
    for n in range(1, 255):
        net = ipaddress.ip_network("%s.%d.0/24" % (NET_PREFIX, n))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.bind(b"\0cellar-netns-%s.%d" % (NET_PREFIX.encode(), n))
        except OSError:
            s.close()
            continue
        if _subnet_in_use(net):
            s.close()
            continue
        return s, net
    raise NetnsError("no free %s.N.0/24 subnet" % NET_PREFIX)


def _operstate(dev, ns=None):
    links = _ip_json("link", "show", "dev", dev, ns=ns)
    return links[0].get("operstate") if links else None


class NsProcess:
    """A server started by Netns.start_servers: .proc, .pid, .addr (ip, port)."""

    def __init__(self, proc, addr, errf, argv):
        self.proc = proc
        self.addr = addr
        self.errf = errf
        self.argv = argv

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stderr_text(self):
        try:
            with open(self.errf.name, "rb") as f:
                return f.read().decode("latin-1")
        except OSError:
            return ""


class Netns:
    """A network namespace reached from the root one through a veth pair.
    A context manager; see the module docstring."""

    def __init__(self, prefix="cellar"):
        k = next(_counter)
        pid = os.getpid()
        self.name = "%s-%d-%d" % (prefix, pid, k)
        self.veth = "cv%d-%d" % (pid, k % 100000)     # root-side end, <= 15 chars
        self.ns_dev = NS_DEV
        self.subnet = None
        self.peer_ip = None      # root-side address (what servers see as the client)
        self.host_ip = None      # address inside the namespace, reached from here
        self.procs = []          # every Popen started through popen()
        self.servers = []        # NsProcess per start_servers() server
        self._claim = None
        self._created_ns = False
        self._created_veth = False
        self._shaped = False
        self._terminated = set()
        self._next_port = 11211

    # -- lifecycle -------------------------------------------------------
    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        errors = self._teardown()
        if errors:
            msg = "netns %s cleanup: %s" % (self.name, "; ".join(errors))
            if exc_type is None:
                raise NetnsError(msg)
            sys.stderr.write("note: %s\n" % msg)
        return False

    def _setup(self):
        if os.geteuid() != 0:
            raise NetnsError("network namespaces need root")
        self._claim, self.subnet = _claim_subnet()
        self.peer_ip = str(self.subnet[1])
        self.host_ip = str(self.subnet[2])
        plen = self.subnet.prefixlen
        _ip("netns", "add", self.name)
        self._created_ns = True
        _ip("link", "add", self.veth, "type", "veth", "peer", "name", self.ns_dev,
            "netns", self.name)
        self._created_veth = True
        _ip("addr", "add", "%s/%d" % (self.peer_ip, plen), "dev", self.veth)
        _ip("addr", "add", "%s/%d" % (self.host_ip, plen), "dev", self.ns_dev, ns=self.name)
        _ip("link", "set", "lo", "up", ns=self.name)
        _ip("link", "set", self.ns_dev, "up", ns=self.name)
        _ip("link", "set", self.veth, "up")
        self._host_mac = _ip_json("link", "show", "dev", self.veth)[0]["address"]
        self._ns_mac = _ip_json("link", "show", "dev", self.ns_dev, ns=self.name)[0]["address"]
        _ip("neigh", "replace", self.host_ip, "lladdr", self._ns_mac, "dev", self.veth,
            "nud", "permanent")
        self._ns_neigh()
        self._wait_link(True)
        self._check_route()

    def _ns_neigh(self):
        # Setting eth0 down flushes even its permanent entries: redone by link_up.
        _ip("neigh", "replace", self.peer_ip, "lladdr", self._host_mac, "dev", self.ns_dev,
            "nud", "permanent", ns=self.name)

    def _check_route(self):
        r = _ip_json("route", "get", self.host_ip)
        if not r or r[0].get("dev") != self.veth or "gateway" in r[0]:
            raise NetnsError("%s is not routed through %s: %r" % (self.host_ip, self.veth, r))

    def _wait_link(self, up, timeout=5.0):
        want = "UP" if up else "DOWN"
        util.wait_for(lambda: _operstate(self.veth) == want
                      and (not up or _operstate(self.ns_dev, ns=self.name) == "UP"),
                      timeout, what="%s operstate %s" % (self.veth, want))

    def terminate(self):
        """SIGTERM every tracked process still running, without waiting (exit
        waits and checks).  Lets a caller holding several namespaces stop all
        their servers at once: memcached takes up to a second to exit."""
        for p in self.procs:
            if p.pid not in self._terminated and p.poll() is None:
                try:
                    p.send_signal(signal.SIGTERM)
                except ProcessLookupError:
                    pass
                self._terminated.add(p.pid)

    def _stop_procs(self, timeout=5.0):
        """SIGTERM every tracked process at once, wait for them all (one
        deadline), SIGKILL the ones still there.  Returns {pid: problem}."""
        problems = {}
        for p in self.procs:
            rc = p.poll()
            if rc is not None and p.pid not in self._terminated:
                problems[p.pid] = "pid %d died before it was stopped (exit status %d)" % (p.pid, rc)
        self.terminate()
        live = [p for p in self.procs if p.pid in self._terminated]
        deadline = time.monotonic() + timeout
        for p in live:
            try:
                rc = p.wait(max(0.0, deadline - time.monotonic()))
                if rc != 0:
                    problems[p.pid] = "pid %d exit status %d after SIGTERM" % (p.pid, rc)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                problems[p.pid] = ("pid %d did not exit within %.0fs of SIGTERM (SIGKILLed)"
                                   % (p.pid, timeout))
        return problems

    def _teardown(self):
        """Undo everything; never raises; returns a list of problems."""
        errors = []
        try:
            problems = self._stop_procs()
        except Exception as e:   # keep cleaning up
            problems = {0: "stopping processes: %r" % (e,)}
        server_pids = {s.pid: s for s in self.servers}
        for pid, problem in problems.items():
            # Servers have to stay up until stopped; other processes may end
            # as they like, but not hang on SIGTERM.
            if pid in server_pids:
                s = server_pids[pid]
                errors.append("%s [%s] stderr tail: %r" % (
                    problem, " ".join(s.argv), s.stderr_text()[-1000:]))
            elif "SIGKILL" in problem or pid == 0:
                errors.append(problem)
        if self._created_ns:
            # Anything else in our private namespace got there through us.
            try:
                left = [int(x) for x in _ip("netns", "pids", self.name, check=False).split()]
            except Exception:
                left = []
            for pid in left:
                errors.append("pid %d was still in the namespace (SIGKILLed)" % pid)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if left:
                try:
                    util.wait_for(lambda: not _ip("netns", "pids", self.name,
                                                  check=False).split(),
                                  5.0, what="processes left in %s to die" % self.name)
                except AssertionError as e:
                    errors.append(str(e))
        for s in self.servers:
            try:
                s.errf.close()
                os.unlink(s.errf.name)
            except OSError:
                pass
        if self._created_veth:
            try:
                if link_exists(self.veth):
                    _ip("link", "del", self.veth)
                self._created_veth = False
            except Exception as e:
                errors.append(str(e))
        if self._created_ns:
            try:
                _ip("netns", "del", self.name)
                self._created_ns = False
            except Exception as e:
                errors.append(str(e))
            try:
                util.wait_for(lambda: not link_exists(self.veth), 5.0,
                              what="%s to disappear" % self.veth)
            except AssertionError as e:
                errors.append(str(e))
        if self._claim is not None:
            self._claim.close()
            self._claim = None
        return errors

    # -- processes -------------------------------------------------------
    def popen(self, argv, **kw):
        """subprocess.Popen(argv) inside the namespace (`ip netns exec`, which
        execs the command, so the pid is the command's own); stopped by pid
        (SIGTERM, then SIGKILL) when the namespace is torn down."""
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(["ip", "netns", "exec", self.name] + [str(a) for a in argv], **kw)
        self.procs.append(p)
        return p

    def run(self, argv, **kw):
        """subprocess.run(argv) inside the namespace (a bounded command)."""
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("timeout", 30)
        return subprocess.run(["ip", "netns", "exec", self.name] + [str(a) for a in argv], **kw)

    def start_servers(self, binary=None, n=1, args=(), start_timeout=10.0, udp=False):
        """Start n memcached-compatible servers (TCP only, or also UDP on the
        same port number with udp=True) on host_ip, distinct ports; poll from
        the root namespace until each accepts; return their [(ip, port)].  They are stopped on exit, and it is a failure then if
        one had died or exits badly (like util.Server).  util.CELLARD_ARGS
        are added for the server under test, as util.Server does."""
        binary = binary or util.CELLARD
        extra = util.CELLARD_ARGS if binary == util.CELLARD and util.CELLARD != util.MEMCACHED else []
        started = []
        for _ in range(n):
            port = self._next_port
            self._next_port += 1
            argv = ([binary, "-l", self.host_ip, "-p", str(port), "-U", str(port) if udp else "0"]
                    + util.root_args() + extra + [str(a) for a in args])
            errf = tempfile.NamedTemporaryFile(prefix="cellar-netns-%d-" % port,
                                               suffix=".stderr", delete=False)
            proc = self.popen(argv, stdout=errf, stderr=errf)
            s = NsProcess(proc, (self.host_ip, port), errf, argv)
            self.servers.append(s)
            started.append(s)
        for s in started:
            deadline = time.monotonic() + start_timeout
            while True:
                if not s.alive():
                    raise NetnsError("%s exited (status %s) before accepting: %r"
                                     % (s.argv, s.proc.returncode, s.stderr_text()[-2000:]))
                try:
                    socket.create_connection(s.addr, timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        raise NetnsError("%s did not accept on %s:%d within %.0fs"
                                         % (s.argv, s.addr[0], s.addr[1], start_timeout))
                    time.sleep(0.01)
        return [s.addr for s in started]

    # -- the link --------------------------------------------------------
    def link_down(self):
        """Set the namespace end of the veth down: from now on packets both
        ways are dropped silently (connects and reads time out)."""
        _ip("link", "set", self.ns_dev, "down", ns=self.name)
        self._wait_link(False)
        self._check_route()    # still into the veth, not out of the default route

    def link_up(self):
        """Undo link_down; returns once both ends are up."""
        _ip("link", "set", self.ns_dev, "up", ns=self.name)
        self._ns_neigh()
        self._wait_link(True)
        self._check_route()

    def shape(self, rate="1gbit", burst="64kb", limit=None, latency="50ms"):
        """Token bucket (tc tbf) on the namespace's egress, i.e. on what the
        servers send toward the clients.  limit is the queue in bytes (tc
        units, e.g. "256kb"); when None the queue is sized by latency.
        Replaces any earlier shape()."""
        argv = ["qdisc", "replace", "dev", self.ns_dev, "root", "tbf",
                "rate", rate, "burst", burst]
        argv += ["limit", limit] if limit is not None else ["latency", latency]
        _tc(self.name, *argv)
        self._shaped = True

    def unshape(self):
        """Remove shape()'s qdisc (no-op when not shaped)."""
        if self._shaped:
            _tc(self.name, "qdisc", "del", "dev", self.ns_dev, "root")
            self._shaped = False

    def qdisc_stats(self):
        """`tc -s -j qdisc show` of the namespace end, parsed (drops, backlog...)."""
        r = _tc(self.name, "-s", "-j", "qdisc", "show", "dev", self.ns_dev)
        return json.loads(r.stdout.decode() or "[]")
