"""Helpers the router's own tests share (test_router_faults.py,
test_router_admin.py): plain backends, restarting one, config addresses."""

import os
import socket
import subprocess

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
