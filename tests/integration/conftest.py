"""pytest setup for the integration suite.

    CELLARD=/abs/path/to/cellard /usr/bin/python3 -m pytest tests/integration [-k EXPR]

Every module-level test_* function of tests/integration/test_*.py is a
test, run in file order; each starts its servers with util.Server (a
context manager that always stops them, by pid, and fails the test if one
crashed).  A test that overruns 300 seconds fails (pytest-timeout:
pytest.ini, or --timeout N).  The run ends with the line `N passed, N failed`.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import util  # noqa: E402


def _netns_module():
    """The netns helper module.  The suite runs as root with iproute2 (make
    deps installs it): anything else fails the test, it is not skipped."""
    import shutil
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        pytest.fail("network namespaces need root and iproute2 (ip, tc): run as root, "
                    "apt-get install iproute2")
    import netns as netns_mod
    return netns_mod


@pytest.fixture
def netns():
    """A netns.Netns: servers behind a veth link that can be cut
    (link_down) or shaped (tc tbf); torn down after the test whatever
    happened (its processes stopped by pid, veth and namespace deleted)."""
    with _netns_module().Netns() as ns:
        yield ns


@pytest.fixture
def netns_factory():
    """make() -> one more netns.Netns (its own link and subnet) per call;
    all torn down after the test, their processes signalled together."""
    import contextlib
    mod = _netns_module()
    made = []
    with contextlib.ExitStack() as stack:
        def make():
            ns = stack.enter_context(mod.Netns())
            made.append(ns)
            return ns
        yield make
        for ns in made:
            ns.terminate()


# Variables set for this Python process alone (make asan preloads the ASan
# runtime so that it can load an instrumented libcellar): the processes
# the tests start must not inherit them.
for _name in os.environ.get("CELLAR_SCRUB_ENV", "").split():
    os.environ.pop(_name, None)


def pytest_sessionstart(session):
    if not (os.path.isfile(util.CELLARD) and os.access(util.CELLARD, os.X_OK)):
        pytest.exit("CELLARD=%s is not an executable file" % util.CELLARD, returncode=2)
    if not os.access(util.MEMCACHED, os.X_OK):
        pytest.exit("%s is missing (apt-get install memcached)" % util.MEMCACHED, returncode=2)


def pytest_report_header(config):
    return "server under test: %s (oracle %s)" % (util.CELLARD, util.MEMCACHED)


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    terminalreporter.write_line("%d passed, %d failed" % (passed, failed))
