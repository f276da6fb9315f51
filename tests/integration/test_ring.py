"""Key placement of cellar's rings against the clients they claim to match.

Five memcached processes, weighted 1, 2, 3, 1, 5; 10,000 keys are stored
through the real client with its hash, then each server is asked which of
them it holds, and `cellar-ring` (client/ring.h) must put every key on
that same server:

  ketama      pylibmc with behaviors {"ketama_weighted": True} (libmemcached)
  modula      pylibmc with its default behaviors (libmemcached's modula)
  rendezvous  pymemcache's HashClient
"""

import os
import subprocess

import pylibmc
from pymemcache.client.base import Client as PlainClient
from pymemcache.client.hash import HashClient

from util import HOST, MEMCACHED, Server

CELLAR_RING = os.environ.get("CELLAR_RING") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "build", "cellar-ring")
WEIGHTS = (1, 2, 3, 1, 5)
N_KEYS = 10000


def _keys(binary_bytes):
    """Keys of several shapes; with binary_bytes, some with bytes >= 0x80
    (libmemcached widens them as signed chars)."""
    keys = []
    for i in range(N_KEYS):
        k = [b"user:%d" % i, b"k%d" % (i * 7919), b"session/%08x/profile" % (i * 2654435761 % 2**32),
             b"x" * (1 + i % 200)][i % 4]
        if binary_bytes and i % 9 == 0:
            k += b"\xc3\xa9\xff"
        keys.append(k + b"-%d" % i)
    return keys


def _placement(kind, ports, keys):
    spec = ["%s:%d:%d" % (HOST, p, w) for p, w in zip(ports, WEIGHTS)]
    out = subprocess.run([CELLAR_RING, kind] + spec, input=b"".join(k + b"\n" for k in keys),
                         stdout=subprocess.PIPE, check=True, timeout=60).stdout
    return [int(x) for x in out.split()]


def _held(ports, keys):
    """Index of the server holding each key (asked of every server)."""
    where = [None] * len(keys)
    for s, port in enumerate(ports):
        c = PlainClient((HOST, port))
        for at in range(0, len(keys), 500):
            got = c.get_many(keys[at:at + 500])
            for j, k in enumerate(keys[at:at + 500]):
                if k in got:
                    assert where[at + j] is None, "%r on two servers" % k
                    where[at + j] = s
        c.close()
    assert None not in where, "key %r on no server" % keys[where.index(None)]
    return where


def _check(kind, store, binary_bytes):
    servers = [Server(MEMCACHED, args=["-m", "64"]) for _ in WEIGHTS]
    try:
        for s in servers:
            s.start()
        ports = [s.port for s in servers]
        keys = _keys(binary_bytes)
        store(ports, keys)
        held = _held(ports, keys)
        ours = _placement(kind, ports, keys)
        wrong = [(keys[i], held[i], ours[i]) for i in range(len(keys)) if held[i] != ours[i]]
        assert not wrong, "%s: %d of %d keys placed elsewhere, e.g. (key, theirs, ours) %s" % (
            kind, len(wrong), len(keys), wrong[:5])
        counts = [held.count(i) for i in range(len(ports))]
        assert min(counts) > 0, counts
        return counts
    finally:
        problems = [p for p in (s.stop() for s in servers) if p]
        assert not problems, problems


def _pylibmc_store(behaviors):
    def store(ports, keys):
        spec = ["%s:%d:%d" % (HOST, p, w) for p, w in zip(ports, WEIGHTS)]
        mc = pylibmc.Client(spec, behaviors=behaviors)
        for at in range(0, len(keys), 1000):
            failed = mc.set_multi({k: b"1" for k in keys[at:at + 1000]})
            assert not failed, failed[:5]
        mc.disconnect_all()
    return store


def test_ketama_places_keys_as_libmemcached_weighted():
    counts = _check("ketama", _pylibmc_store({"ketama_weighted": True}), True)
    # the heaviest server (weight 5 of 12) takes the most keys
    assert counts[4] == max(counts), counts


def test_modula_places_keys_as_libmemcached_default():
    _check("modula", _pylibmc_store({}), True)


def test_rendezvous_places_keys_as_pymemcache_hashclient():
    def store(ports, keys):
        hc = HashClient([(HOST, p) for p in ports])
        for at in range(0, len(keys), 1000):
            failed = hc.set_many({k.decode(): b"1" for k in keys[at:at + 1000]})
            assert not failed, failed[:5]
        hc.close()
    _check("rendezvous", store, False)
