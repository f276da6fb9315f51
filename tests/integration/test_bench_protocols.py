"""cellar-bench speaks text, meta and binary (meta and binary through the
client library's wires), against cellard and against memcached: a bounded
run with a quarter of the keys never stored must report no errors and a
hit ratio of about three quarters -- the replies were read as what they
are."""

import os
import re
import subprocess

import pytest

import util

BENCH = os.environ.get("CELLAR_BENCH") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "cellar-bench")
KINDS = {"cellard": lambda: util.CELLARD, "memcached": lambda: util.MEMCACHED}


@pytest.mark.parametrize("proto", ("text", "meta", "binary"))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_bench_speaks_every_protocol(kind, proto):
    with util.Server(KINDS[kind]()) as srv:
        out = subprocess.run(
            [BENCH, "-p", str(srv.port), "-P", proto, "-c", "2", "-d", "4", "-n", "4000",
             "-k", "2000", "--preload", "-m", "3", "-r", "1:9", "--miss-ratio", "0.25"],
            capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert proto in out.stdout.splitlines()[0], out.stdout
        assert re.search(r"preload: .* errors 0", out.stdout), out.stdout
        assert re.search(r"gets \d+, sets \d+, errors 0", out.stdout), out.stdout
        ratio = float(re.search(r"hit ratio:\s+([\d.]+)%", out.stdout).group(1))
        assert 65 < ratio < 85, out.stdout
