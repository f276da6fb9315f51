"""libcellar's asynchronous face from a program's own event loop:
examples/async_gets (epoll) against 8 real servers, 10,000 gets in flight
at once from one thread, every answer checked by the program, and the
servers' own counters checked here.
"""

import os
import re
import subprocess
from contextlib import ExitStack

import util


def test_async_gets_example_ten_thousand_in_flight():
    exe = os.path.join(os.environ.get("CELLAR_EXAMPLES") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "examples"),
        "async_gets")
    with ExitStack() as stack:
        servers = [stack.enter_context(util.Server(util.CELLARD)) for _ in range(8)]
        addrs = ",".join("127.0.0.1:%d" % s.port for s in servers)
        p = subprocess.run([exe, addrs, "10000"], capture_output=True, timeout=60)
        out = p.stdout.decode()
        assert p.returncode == 0, (out, p.stderr.decode())
        m = re.search(r"sets failed (\d+); gets in flight at once (\d+), answered (\d+), "
                      r"wrong (\d+)", out)
        assert m and m.groups() == ("0", "10000", "10000", "0"), out
        gets = [int(s.stats()["cmd_get"]) for s in servers]
        items = [int(s.stats()["curr_items"]) for s in servers]
        assert sum(gets) == 10000 and sum(items) == 10000, (gets, items)
        assert all(g > 0 for g in gets), gets      # the keys spread over all eight
