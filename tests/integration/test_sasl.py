"""Binary-protocol SASL authentication (-S): cellard and Debian's memcached
1.6.18 started the same way, on the same Cyrus SASL setup -- a sasldb made
with saslpasswd2 in a temporary folder, and a memcached.conf there that
SASL_CONF_PATH names, as memcached's t/binary-sasl.t makes them -- and then
the same answers from both: to pylibmc with the right and a wrong password,
to the same raw SASL bytes (only CRAM-MD5's challenge, random and timed,
differs), in the counters and `stats settings`, and in what -S refuses.
Last, the MEMCACHED_SASL_PWDB password file, which Debian's memcached is
built without: cellard's alone."""

import hashlib
import hmac
import os
import re
import subprocess
import tempfile

import pylibmc
import pytest

import binproto as bp
import util
from util import CELLARD, MEMCACHED, Server, root_args

REALM = "memcached.realm"
USER = "testuser@" + REALM
PASSWORD = "testpass"


@pytest.fixture
def sasl_conf(monkeypatch):
    """A sasldb holding USER with PASSWORD and a memcached.conf naming it, in a
    temporary folder that SASL_CONF_PATH names for the servers started here
    (util.Server passes the environment on)."""
    with tempfile.TemporaryDirectory(prefix="cellar-sasl-") as d:
        db = os.path.join(d, "sasldb")
        subprocess.run(["saslpasswd2", "-a", "memcached", "-u", REALM, "-f", db, "-c", "-p",
                        "testuser"], input=PASSWORD + "\n", text=True, check=True, timeout=10)
        with open(os.path.join(d, "memcached.conf"), "w") as f:
            f.write("mech_list: plain cram-md5\nsasldb_path: %s\n" % db)
        monkeypatch.setenv("SASL_CONF_PATH", d)
        monkeypatch.delenv("MEMCACHED_SASL_PWDB", raising=False)
        yield d


def plain(user, password):
    return b"\0" + user.encode() + b"\0" + password.encode()


def pylibmc_try(port, password):
    """A set and a get through pylibmc with USER and password: the value got,
    or the name of the exception."""
    c = pylibmc.Client(["%s:%d" % (util.HOST, port)], binary=True, username=USER,
                       password=password)
    try:
        c.set("k", "v")
        return c.get("k")
    except pylibmc.Error as e:
        return type(e).__name__
    finally:
        c.disconnect_all()


def test_pylibmc_same_on_both(sasl_conf):
    with Server(MEMCACHED, ["-S"], name="oracle") as mc, Server(CELLARD, ["-S"]) as ours:
        got = {name: [pylibmc_try(s.port, pw) for pw in (PASSWORD, "wrongpassword")]
               for name, s in (("memcached", mc), ("cellard", ours))}
        assert got["cellard"] == got["memcached"], got
        assert got["cellard"][0] == "v"
        assert got["cellard"][1] != "v"
        # without credentials a binary client gets nowhere either
        for s in (mc, ours):
            c = pylibmc.Client(["%s:%d" % (util.HOST, s.port)], binary=True)
            try:
                with pytest.raises(pylibmc.Error):
                    c.set("k", "v")
            finally:
                c.disconnect_all()


GOOD = plain(USER, PASSWORD)
BAD = plain(USER, "wrongpassword")
SET_K = bp.req(bp.SET, key=b"k", ext=bp.set_ext(3, 0), value=b"v", opaque=6)
GET_K = bp.req(bp.GET, key=b"k", opaque=8)

STREAMS = [
    bp.req(bp.SASL_LIST, opaque=7),                                  # the mechanisms
    bp.req(bp.VERSION, opaque=4),                                    # allowed before
    GET_K,                                                           # refused, then closed
    bp.req(bp.GETQ, key=b"k", opaque=3) + bp.noop(),                 # quiet ones too
    bp.noop(1) + bp.req(bp.STAT, opaque=2),
    bp.req(0x50, key=b"k", opaque=3),                                # unknown opcode: refused
    bp.req(bp.GET, key=b"kkk", bodylen=1),                           # body too short: first
    bp.req(bp.GET, key=b"k" * 300, opaque=3),                        # refused before its key
    bp.req(bp.VERSION, value=b"x", opaque=4),                        # a wrong VERSION: 04
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD, opaque=5) + SET_K + GET_K,   # in, served
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=BAD, opaque=5) + GET_K,             # not in
    bp.req(bp.SASL_AUTH, key=b"PLAIN", opaque=5),                    # no response at all
    bp.req(bp.SASL_AUTH, key=b"NOSUCH", value=GOOD, opaque=5),       # no such mechanism
    bp.req(bp.SASL_AUTH, key=b"X" * 40, value=GOOD, opaque=9) + bp.req(bp.VERSION, opaque=1),
    bp.req(bp.SASL_AUTH, key=b"X" * 300, value=GOOD, opaque=9),      # key over 250: closed
    bp.req(bp.SASL_STEP, key=b"PLAIN", value=GOOD, opaque=9),        # a step with no start
    bp.req(bp.SASL_LIST, value=b"x", opaque=7),                      # wrong shapes
    bp.req(bp.SASL_AUTH, value=b"x", opaque=7),
    bp.req(bp.SASL_STEP, key=b"PLAIN", ext=b"\0\0\0\0", value=GOOD, opaque=7),
    # a listing (or any SASL request) makes an authenticated connection a stranger again
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD, opaque=5) + bp.req(bp.SASL_LIST, opaque=7)
    + GET_K,
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD, opaque=5)
    + bp.req(bp.SASL_AUTH, key=b"PLAIN", value=BAD, opaque=6) + GET_K,
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD, opaque=5)
    + bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD, opaque=6) + GET_K,
    # a response in several pieces of the stream, and one too large to hold
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=b"x" * 300000, opaque=9) + GET_K,
    bp.req(bp.SASL_AUTH, key=b"PLAIN", value=b"x" * (2 << 20), opaque=9)
    + bp.req(bp.VERSION, opaque=1),
]


def test_same_bytes_as_memcached(sasl_conf):
    with Server(MEMCACHED, ["-S"], name="oracle") as mc, Server(CELLARD, ["-S"]) as ours:
        for data in STREAMS:
            want = util.exchange(mc.port, data)
            got = util.exchange(ours.port, data)
            assert got == want, (data[:60], want, got)
        # the same counters after the same exchanges, counted as memcached counts them
        stats = []
        for s in (mc, ours):
            with bp.BinConn(s.port) as c:
                assert c.call(bp.req(bp.SASL_AUTH, key=b"PLAIN", value=GOOD)).status == bp.OK
                st = c.stats()
                stats.append({k: st[k] for k in ("auth_cmds", "auth_errors")})
                st = c.stats(b"settings")
                stats.append({k: st[k] for k in ("auth_enabled_sasl", "binding_protocol")})
        assert stats[2:] == stats[:2], stats
        assert stats[2] == {"auth_cmds": b"11", "auth_errors": b"6"}, stats
        assert stats[3] == {"auth_enabled_sasl": b"yes", "binding_protocol": b"binary"}


def cram_md5(port):
    """A CRAM-MD5 exchange: the challenge's answer (status 21) and the
    answer to the response made from it; then a set and get."""
    with bp.BinConn(port) as c:
        p = c.call(bp.req(bp.SASL_AUTH, key=b"CRAM-MD5", opaque=11))
        assert (p.op, p.status, p.opaque, p.cas) == (bp.SASL_AUTH, 0x21, 11, 0), bp.describe(p)
        assert re.fullmatch(rb"<\d+\.\d+@[^>]*>", p.value), p.value
        digest = hmac.new(PASSWORD.encode(), p.value, hashlib.md5).hexdigest()
        done = c.call(bp.req(bp.SASL_STEP, key=b"CRAM-MD5", value=("%s %s" % (USER, digest))
                             .encode(), opaque=12))
        c.send(SET_K + GET_K)
        return done.raw, c.packet().raw, c.packet().raw


def test_cram_md5_challenge_and_step(sasl_conf):
    with Server(MEMCACHED, ["-S"], name="oracle") as mc, Server(CELLARD, ["-S"]) as ours:
        want = cram_md5(mc.port)
        got = cram_md5(ours.port)
        assert got[0] == want[0] == bp.HDR.pack(bp.RES_MAGIC, bp.SASL_STEP, 0, 0, 0, 0, 13, 12,
                                                 0) + b"Authenticated"
        # the set's and get's answers: the same but for the CAS each server gave
        for g, w in zip(got[1:], want[1:]):
            assert g[:16] == w[:16] and g[24:] == w[24:], (g, w)


def test_options_refused_as_memcached_refuses_them(sasl_conf, monkeypatch):
    """-S speaks binary alone and not over UDP: the same words and exit code;
    and without a configuration SASL does not start, for either."""
    runs = [["-B", "ascii"], ["-B", "auto"], ["-B", "binary", "-B", "ascii"],
            ["-U", str(util.free_port())], None]
    for extra in runs:
        if extra is None:       # no SASL_CONF_PATH: memcached's default places, if any
            monkeypatch.delenv("SASL_CONF_PATH")
            extra = []
        args = ["-S", "-l", util.HOST, "-p", str(util.free_port())] + extra + root_args()
        if "-U" not in extra:
            args += ["-U", "0"]
        outs = []
        for binary in (MEMCACHED, CELLARD):
            try:
                p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=3)
                outs.append((p.returncode, p.stderr.strip().splitlines()[-1:]))
            except subprocess.TimeoutExpired:   # started (a default config exists): killed
                outs.append(("running", []))
        assert outs[0] == outs[1], (extra, outs)
        if extra:
            assert outs[1][0] == 64, (extra, outs)


def test_password_file_from_environment(sasl_conf, monkeypatch):
    """MEMCACHED_SASL_PWDB (memcached built with --enable-sasl-pwdb): its
    `user:password[:more]` lines are asked first, SASL's store after."""
    pwdb = os.path.join(sasl_conf, "pwdb")
    with open(pwdb, "w") as f:
        f.write("other:x\n%s:filepass:extra\n" % USER)
    monkeypatch.setenv("MEMCACHED_SASL_PWDB", pwdb)
    with Server(CELLARD, ["-S"]) as ours:
        for password, status in (("filepass", bp.OK), (PASSWORD, bp.OK), ("filepas", 0x20),
                                 ("nope", 0x20)):
            with bp.BinConn(ours.port) as c:
                p = c.call(bp.req(bp.SASL_AUTH, key=b"PLAIN", value=plain(USER, password)))
                assert p.status == status, (password, bp.describe(p))
