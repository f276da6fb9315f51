"""memccapable (libmemcached-tools) conformance runs against the server
under test.  It prints one line per test, `<name>   [pass]` (or `[FAIL]`,
`[skip]`), then `All tests passed` or `N of M tests failed`, and exits 0
only when everything passed (observed on memcached 1.6.18: 27 ascii tests,
27 binary tests, all pass; each run takes about 2.5 s)."""

import os
import re
import selectors
import subprocess
import time

from util import Server

MEMCCAPABLE = "/usr/bin/memccapable"
TIMEOUT = 60
MAX_FAILS = 3

ASCII_TESTS = [
    "version", "quit", "verbosity", "set", "set noreply", "get", "gets", "mget",
    "flush", "flush noreply", "add", "add noreply", "replace", "replace noreply",
    "cas", "cas noreply", "delete", "delete noreply", "incr", "incr noreply",
    "decr", "decr noreply", "append", "append noreply", "prepend",
    "prepend noreply", "stat",
]

BINARY_TESTS = [
    "noop", "quit", "quitq", "set", "setq", "flush", "flushq", "add", "addq",
    "replace", "replaceq", "delete", "deleteq", "get", "getq", "getk", "getkq",
    "incr", "incrq", "decr", "decrq", "version", "append", "appendq", "prepend",
    "prependq", "stat",
]

LINE = re.compile(r"^(ascii|binary) (.+?)\s+\[(pass|FAIL|skip)\]$")


def run_bounded(argv):
    """Run memccapable; stop it early once MAX_FAILS tests have failed (each
    failure can cost it a full I/O timeout) or after TIMEOUT seconds.
    Returns (output, exit status or None, reason it was stopped or None)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    out = b""
    why = None
    deadline = time.monotonic() + TIMEOUT
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "did not finish within %ds (about 3 s on memcached)" % TIMEOUT
                break
            if not sel.select(left):
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            out += chunk
            if out.count(b"[FAIL]") >= MAX_FAILS:
                why = "stopped after %d failed tests" % MAX_FAILS
                break
    finally:
        sel.close()
        if proc.poll() is None and why is not None:
            proc.kill()
        rc = proc.wait(10)
        proc.stdout.close()
    return out, rc, why


def run_memccapable(mode_flag, proto, expected):
    with Server() as srv:
        # -t: per-I/O timeout, so a server that never answers fails a test
        # instead of hanging memccapable.
        argv = ([MEMCCAPABLE] + ([mode_flag] if mode_flag else [])
                + ["-t", "2", "-h", "127.0.0.1", "-p", str(srv.port)])
        raw, rc, why = run_bounded(argv)
        out = raw.decode("latin-1")
        assert why is None, "memccapable %s %s; output so far:\n%s" % (mode_flag, why, out)
        results = {}
        for line in out.splitlines():
            m = LINE.match(line.strip())
            if m:
                if proto is None:               # both protocols: name them apart
                    results[m.group(1) + " " + m.group(2)] = m.group(3)
                else:
                    assert m.group(1) == proto, line
                    results[m.group(2)] = m.group(3)
        report = "memccapable %s exit %d, output:\n%s" % (mode_flag, rc, out)
        assert list(results) == expected, "unexpected test list; " + report
        failed = [name for name, r in results.items() if r != "pass"]
        assert not failed, "failed: %s; %s" % (failed, report)
        assert "All tests passed" in out, report
        assert rc == 0, report
        assert srv.alive(), "server died during memccapable; " + report


def test_memccapable_ascii():
    run_memccapable("-a", "ascii", ASCII_TESTS)


def test_memccapable_binary():
    run_memccapable("-b", "binary", BINARY_TESTS)


def test_memccapable_all_54():
    """No flag: memccapable runs its 27 ascii and 27 binary tests."""
    expected = ["ascii " + t for t in ASCII_TESTS] + ["binary " + t for t in BINARY_TESTS]
    assert len(expected) == 54
    run_memccapable(None, None, expected)
