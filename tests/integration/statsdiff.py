"""Counters compared between the server under test and memcached 1.6.18.

The differential tests (text, binary, meta) send both servers the same
stream; after every batch each also hands a `StatsDiff` the bytes it sent
and received, and StatsDiff asks both servers for `stats`, `stats slabs`
and `stats items` over a connection of its own and compares how every
counter moved since the last batch: the deltas must be equal.

Per-class lines (`stats slabs`, `stats items`) are summed over the classes:
which class an item lands in is memory layout (the servers' item headers
differ, so their class series do), but how many hits, sets, deletes or
items a server counts is not.

Not compared (EXCLUDED below, each with its reason): process identity,
time, memory layout, and counters moved by memcached's background threads
on their own clock.  bytes_read and bytes_written are not compared between
the servers (a CAS unique is a different number of digits on each) but
checked on each server against what the test sent and received.

Counters that move asynchronously (a closed connection is counted when the
server gets to it) are read again, polling up to a deadline, before a
difference fails the test.
"""

import socket
import time

from util import HOST, ROUTED

# name -> why it is not compared.  Names of per-class counters are
# "slabs:<name>" and "items:<name>".
EXCLUDED = {
    "pid": "process identity", "version": "process identity",
    "libevent": "process identity", "pointer_size": "process identity",
    "uptime": "time", "time": "time", "rusage_user": "time", "rusage_system": "time",
    "lru_maintainer_juggles": "time: memcached's LRU maintainer loops on its own clock",
    "lru_crawler_starts": "time: memcached's maintainer starts crawls on its own clock",
    "lru_crawler_running": "time: whether a crawl runs at that moment",
    "crawler_reclaimed": "time: what the background crawler found so far",
    "crawler_items_checked": "time: what the background crawler walked so far",
    "items:crawler_reclaimed": "time (as crawler_reclaimed)",
    "items:crawler_items_checked": "time (as crawler_items_checked)",
    # Expired items are reaped in the background by both servers, each on
    # its own clock; until then a lookup meets them (get_expired) and they
    # are counted as items.  test_stats_counters compares them once both
    # servers have reaped.
    "get_expired": "time: a lookup meets an expired item only if no reaper took it first",
    "get_flushed": "time (as get_expired, for items a flush_all killed)",
    "curr_items": "time: expired items leave when the reaper gets to them",
    "reclaimed": "time: counted when the reaper gets to an expired item",
    "expired_unfetched": "time (as reclaimed)",
    "items:number": "time (as curr_items)",
    "items:reclaimed": "time (as reclaimed)",
    "items:expired_unfetched": "time (as reclaimed)",
    "slabs:used_chunks": "time (as curr_items) and memory layout",
    # Where memcached's segmented LRU has an item depends on its maintainer
    # thread's timing; cellard's slru moves items only on requests.
    "moves_to_cold": "time: memcached's maintainer moves items on its own clock",
    "moves_to_warm": "time (as moves_to_cold)",
    "moves_within_lru": "time (as moves_to_cold)",
    "items:moves_to_cold": "time (as moves_to_cold)",
    "items:moves_to_warm": "time (as moves_to_cold)",
    "items:moves_within_lru": "time (as moves_to_cold)",
    "lrutail_reflocked": "time: memcached's maintainer met an item a reader held",
    "items:lrutail_reflocked": "time (as lrutail_reflocked)",
    "items:number_hot": "time (as moves_to_cold)",
    "items:number_warm": "time (as moves_to_cold)",
    "items:number_cold": "time (as moves_to_cold)",
    "items:hits_to_hot": "time: which segment a hit finds an item in (as moves_to_cold)",
    "items:hits_to_warm": "time (as items:hits_to_hot)",
    "items:hits_to_cold": "time (as items:hits_to_hot)",
    "items:hits_to_temp": "time (as items:hits_to_hot)",
    "items:age_hot": "time", "items:age_warm": "time", "items:age": "time",
    "items:evicted_time": "time",
    # Memory layout: item headers, chunk sizes, buffer sizes and pools.
    "bytes": "memory layout: item header sizes differ",
    "items:mem_requested": "memory layout (as bytes)",
    "hash_bytes": "memory layout", "hash_power_level": "memory layout",
    "total_malloced": "memory layout", "active_slabs": "memory layout",
    "slab_global_page_pool": "memory layout",
    "slabs:chunk_size": "memory layout", "slabs:chunks_per_page": "memory layout",
    "slabs:total_pages": "memory layout", "slabs:total_chunks": "memory layout",
    "slabs:free_chunks": "memory layout", "slabs:free_chunks_end": "memory layout",
    "read_buf_count": "memory layout: buffer pools differ",
    "read_buf_bytes": "memory layout", "read_buf_bytes_free": "memory layout",
    "response_obj_count": "memory layout: memcached's response objects are cellard's "
                          "reply blocks", "response_obj_bytes": "memory layout",
    "connection_structures": "memory layout: memcached keeps freed connection "
                             "structures, cellard frees them",
    # Checked on each server against the bytes the test moved instead.
    "bytes_read": "checked against the bytes sent", "bytes_written": "checked against "
                                                                      "the bytes received",
}

REQUEST = b"stats\r\nstats slabs\r\nstats items\r\n"

# conn_yields counts per read event: a batch larger than memcached's 16 KB
# read buffer is read in pieces, as they come, so where its events begin
# depends on the kernel.  Such batches are not compared for conn_yields
# (test_stats_counters compares pipelines sent in one piece), nor is the
# batch after one.
ONE_READ = 8192

# memcached 1.6's drive_machine spends a budget of 20 (reqs_per_event) per
# command, and once more each time it comes back to a new command after a
# flush; which batches' commands share a read event depends on how the
# kernel split them.  So conn_yields is not compared when a batch and the
# one before hold more commands than the budget between them (the caller
# says how many, with the sentinel's).
REQS_PER_EVENT = 20


def parse(raw):
    """The counters of the three replies: name -> int (non-numbers dropped);
    per-class lines summed by name under "slabs:" / "items:"."""
    out = {}
    for line in raw.split(b"\r\n"):
        parts = line.split(b" ")
        if len(parts) != 3 or parts[0] != b"STAT":
            continue
        name, val = parts[1].decode(), parts[2].decode()
        try:
            v = int(val)
        except ValueError:
            continue
        if name.startswith("items:"):
            name = "items:" + name.split(":", 2)[2]
        elif name[0].isdigit() and ":" in name:
            name = "slabs:" + name.split(":", 1)[1]
        out[name] = out.get(name, 0) + v
    return out


class _Side:
    def __init__(self, name, port):
        self.name = name
        self.sock = socket.create_connection((HOST, port), timeout=10)
        self.prev = None
        self.io = [0, 0]        # bytes the test sent to / read from this server since prev
        self.last_reply = 0     # length of the stats reply that made prev

    def snap(self):
        self.sock.sendall(REQUEST)
        buf = bytearray()
        while buf.count(b"END\r\n") < 3:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise AssertionError("%s closed the stats connection" % self.name)
            buf += chunk
        return parse(bytes(buf)), len(buf)

    def close(self):
        self.sock.close()


class StatsDiff:
    """Compares counter deltas of two servers, batch by batch."""

    def __init__(self, names, ports, settle=2.0):
        self.settle = settle
        self.checks = self.resyncs = 0
        self.last_sent = 0
        self.last_cmds = 0
        self.moved = set()       # counters that moved on the oracle at least once
        # Through cellar-router (CELLAR_ROUTE_SUT) the server under test's stats
        # are the router's own: only the replies are compared.
        self.off = bool(ROUTED)
        self.sides = [] if self.off else [_Side(n, p) for n, p in zip(names, ports)]
        # A server counts a connection when a worker takes it, which may
        # come after the client's first round trip (memcached), and the
        # start-up probe's connection with it: begin once the count stands.
        for s in self.sides:
            s.prev, s.last_reply = s.snap()
            deadline = time.monotonic() + settle
            while time.monotonic() < deadline:
                time.sleep(0.02)
                cur, n = s.snap()
                steady = cur["total_connections"] == s.prev["total_connections"]
                s.prev, s.last_reply = cur, n
                if steady:
                    break

    def io(self, i, sent, received):
        """Bytes the test sent to and read from server i on its other connections."""
        if self.off:
            return
        self.sides[i].io[0] += sent
        self.sides[i].io[1] += received

    def _deltas(self, s, cur, skip=()):
        d = {}
        for k in set(cur) | set(s.prev):
            if k in EXCLUDED or k in skip:
                continue
            d[k] = cur.get(k, 0) - s.prev.get(k, 0)
        return d

    @staticmethod
    def _io_problem(s, cur, want):
        """bytes_read/bytes_written against what the test moved: want is
        (bytes sent, bytes received) before this snapshot's counters were
        read (a stats reply is written after its counters are taken)."""
        got = (cur["bytes_read"] - s.prev["bytes_read"],
               cur["bytes_written"] - s.prev["bytes_written"])
        if got != tuple(want):
            return "%s: bytes_read moved %d (test sent %d), bytes_written %d (test read %d)" % (
                s.name, got[0], want[0], got[1], want[1])
        return None

    def check(self, what, sent=0, reset=False, closed=False, cmds=0):
        """Snapshots both servers and compares; raises AssertionError naming
        `what` (the batch) and every counter whose deltas differ.  sent: the
        batch's size; past ONE_READ, conn_yields is not compared (below), nor
        when cmds (its commands, the sentinel's included) and the batch
        before's exceed REQS_PER_EVENT.
        reset: the batch held a `stats reset`, so the byte counters started
        again somewhere in it and are not checked this time.  closed: the
        server closed the connection, unread input and all, so bytes_read
        must agree between the servers instead of with what was sent."""
        if self.off:
            return
        # A yield at the end of a large batch also moves where the next
        # batch's first event begins.
        # A `stats reset` moves conn_yields by minus its whole count, which
        # batches it was not compared on may have left different.
        skip = ("conn_yields",) if (max(sent, self.last_sent) > ONE_READ or reset or
                                    cmds + self.last_cmds > REQS_PER_EVENT) else ()
        self.last_sent = sent
        self.last_cmds = cmds
        deadline = time.monotonic() + self.settle
        want = [[s.io[0], s.io[1] + s.last_reply] for s in self.sides]
        while True:
            snaps = []
            for s, w in zip(self.sides, want):
                w[0] += len(REQUEST)
                snaps.append(s.snap())
            ds = [self._deltas(s, cur, skip) for s, (cur, _) in zip(self.sides, snaps)]
            diff = sorted(k for k in set(ds[0]) | set(ds[1])
                          if ds[0].get(k, 0) != ds[1].get(k, 0))
            if closed:
                got_r = [cur["bytes_read"] - s.prev["bytes_read"]
                         for s, (cur, _) in zip(self.sides, snaps)]
                for w in want:
                    w[0] = got_r[1]          # the oracle's count is the one to agree with
            # The byte counts are checked on the server under test (sides[0]).
            # memcached, the oracle, was once seen (DIFF_SEED=1601, not
            # reproducible) to count 62 bytes_written more than the test
            # read in a batch, for 2 s on end: a race of its own, which
            # must not fail the server under test.
            io = [self._io_problem(s, cur, w) for s, (cur, _), w in
                  zip(self.sides[:1], snaps, want)]
            io = [p for p in io if p and not reset]
            if not diff and not io:
                break
            if time.monotonic() >= deadline:
                lines = ["counters moved differently after %s:" % what]
                lines += ["  %-28s %s %+d, %s %+d" % (k, self.sides[0].name, ds[0].get(k, 0),
                                                     self.sides[1].name, ds[1].get(k, 0))
                          for k in diff]
                lines += ["  " + p for p in io]
                raise AssertionError("\n".join(lines))
            # A counter may still be on its way (a close not yet counted):
            # read again; this snapshot's reply is written before the next.
            for w, (_, n) in zip(want, snaps):
                w[1] += n
            time.sleep(0.02)
        for s, (cur, n) in zip(self.sides, snaps):
            s.prev, s.last_reply, s.io = cur, n, [0, 0]
        self.moved.update(k for k, v in ds[1].items() if v)
        self.checks += 1

    def resync(self):
        """Takes new snapshots without comparing: for a batch that holds a
        request on which the servers differ by design (the callers' ALLOW_LIST)."""
        if self.off:
            return
        for s in self.sides:
            s.prev, s.last_reply = s.snap()
            s.io = [0, 0]
        self.resyncs += 1
        self.last_sent = ONE_READ + 1      # the next batch's conn_yields is not compared

    def close(self):
        for s in self.sides:
            s.close()
