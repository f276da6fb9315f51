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
