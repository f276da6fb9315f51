"""libcellar through ctypes: the library's C API, called as an application
would call it, for the integration tests.

CELLAR_LIB names the shared object (make integration passes build/libcellar.so;
the default is that path).
`Client(servers, **options)` parses a server list and makes one handle;
each method returns (status, ...) with the C call's status, so a test can
assert on the exact status the library gave.  A handle belongs to one
thread: a threaded test makes one Client per thread.
"""

import ctypes
import os

LIB_PATH = os.environ.get("CELLAR_LIB") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "libcellar.so")

OK, NOT_FOUND, NOT_STORED, EXISTS, DROPPED = 0, 1, 2, 3, 4
EINVAL, ENOMEM, ETIMEDOUT, ECONNECT, ECLOSED, EDOWN = -1, -2, -3, -4, -5, -6
EPROTO, ENOTSUP, ESERVER, ECLIENT, EUNKNOWN, ECONFIG = -7, -8, -9, -10, -11, -12


class Options(ctypes.Structure):
    _fields_ = [("protocol", ctypes.c_char_p), ("hash", ctypes.c_char_p),
                ("server_timeout_ms", ctypes.c_int), ("connect_timeout_ms", ctypes.c_int),
                ("tko_timeouts", ctypes.c_int), ("probe_min_ms", ctypes.c_int),
                ("probe_max_ms", ctypes.c_int), ("window_init", ctypes.c_int),
                ("window_min", ctypes.c_int), ("window_max", ctypes.c_int),
                ("host_id", ctypes.c_uint64), ("udp", ctypes.c_int),
                ("lease_retry_ms", ctypes.c_int),
                ("lease_wait_ms", ctypes.c_int), ("io", ctypes.c_char_p),
                ("window_bytes", ctypes.c_int)]


class Lease(ctypes.Structure):
    _fields_ = [("state", ctypes.c_int), ("token", ctypes.c_uint64), ("stale", ctypes.c_int)]


LEASE_HIT, LEASE_WIN, LEASE_STALE, LEASE_WAIT = 0, 1, 2, 3


class Item(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("value", ctypes.c_void_p),
                ("nvalue", ctypes.c_size_t), ("flags", ctypes.c_uint32),
                ("cas", ctypes.c_uint64)]


class MetaReply(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("code", ctypes.c_char * 3),
                ("flags", ctypes.c_void_p), ("value", ctypes.c_void_p),
                ("nvalue", ctypes.c_size_t)]


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "requests", "hits", "misses", "timeouts", "errors", "down_fast_fails",
        "tko_events", "revivals", "probes", "connects", "near_hits", "udp_gets",
        "udp_drops")] + [
        ("window", ctypes.c_uint32), ("window_peak", ctypes.c_uint32), ("writes", ctypes.c_uint64),
        ("udp_sends", ctypes.c_uint64)]


# void each(void *arg, const char *name, size_t nname, const char *value, size_t nvalue)
STAT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t)

_lib = None


def lib():
    global _lib
    if _lib is None:
        if not os.path.isfile(LIB_PATH):
            raise AssertionError("no libcellar at %s (make lib; CELLAR_LIB names it)" % LIB_PATH)
        L = ctypes.CDLL(LIB_PATH)
        vp, sz, i64, u64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_uint64
        cp = ctypes.c_char_p
        L.cellar_strerror.restype = cp
        L.cellar_strerror.argtypes = [ctypes.c_int]
        L.cellar_config_parse.argtypes = [ctypes.POINTER(vp), cp, ctypes.POINTER(Options),
                                          cp, sz]
        L.cellar_config_release.argtypes = [ctypes.POINTER(vp)]
        L.cellar_config_servers.argtypes = [vp]
        L.cellar_config_servers.restype = ctypes.c_uint
        L.cellar_config_server_name.argtypes = [vp, ctypes.c_uint]
        L.cellar_config_server_name.restype = cp
        L.cellar_create.argtypes = [ctypes.POINTER(vp), vp]
        L.cellar_destroy.argtypes = [ctypes.POINTER(vp)]
        L.cellar_poll.argtypes = [vp, ctypes.c_int]
        L.cellar_server_of.argtypes = [vp, cp, sz]
        L.cellar_server_down.argtypes = [vp, ctypes.c_uint]
        L.cellar_item_clear.argtypes = [ctypes.POINTER(Item)]
        for name in ("cellar_get", "cellar_gets"):
            getattr(L, name).argtypes = [vp, cp, sz, ctypes.POINTER(Item)]
        for name in ("cellar_gat", "cellar_gats"):
            getattr(L, name).argtypes = [vp, cp, sz, i64, ctypes.POINTER(Item)]
        L.cellar_mget.argtypes = [vp, ctypes.POINTER(cp), ctypes.POINTER(sz), sz,
                                  ctypes.POINTER(Item)]
        for name in ("cellar_set", "cellar_add", "cellar_replace"):
            getattr(L, name).argtypes = [vp, cp, sz, cp, sz, ctypes.c_uint32, i64]
        for name in ("cellar_append", "cellar_prepend"):
            getattr(L, name).argtypes = [vp, cp, sz, cp, sz]
        L.cellar_cas.argtypes = [vp, cp, sz, cp, sz, ctypes.c_uint32, i64, u64]
        L.cellar_delete.argtypes = [vp, cp, sz]
        L.cellar_touch.argtypes = [vp, cp, sz, i64]
        for name in ("cellar_incr", "cellar_decr"):
            getattr(L, name).argtypes = [vp, cp, sz, u64, ctypes.POINTER(u64)]
        L.cellar_flush_all.argtypes = [vp, i64]
        L.cellar_version.argtypes = [vp, ctypes.c_uint, cp, sz]
        L.cellar_server_stats.argtypes = [vp, ctypes.c_uint, cp, STAT_FN, vp]
        L.cellar_meta.argtypes = [vp, ctypes.c_char, cp, sz, cp, cp, sz,
                                  ctypes.POINTER(MetaReply)]
        L.cellar_meta_reply_clear.argtypes = [ctypes.POINTER(MetaReply)]
        L.cellar_stats.argtypes = [vp, ctypes.POINTER(Stats)]
        L.cellar_lease_get.argtypes = [vp, cp, sz, ctypes.c_int, ctypes.POINTER(Item),
                                       ctypes.POINTER(Lease)]
        L.cellar_lease_set.argtypes = [vp, cp, sz, cp, sz, ctypes.c_uint32, i64, u64]
        L.cellar_flight_create.argtypes = [ctypes.POINTER(vp)]
        L.cellar_flight_destroy.argtypes = [ctypes.POINTER(vp)]
        L.cellar_get_flight.argtypes = [vp, vp, cp, sz, ctypes.POINTER(Item)]
        L.cellar_near_create.argtypes = [ctypes.POINTER(vp), sz, ctypes.c_int, cp]
        L.cellar_near_destroy.argtypes = [ctypes.POINTER(vp)]
        L.cellar_use_near.argtypes = [vp, vp]
        _lib = L
    return _lib


def strerror(status):
    return lib().cellar_strerror(status).decode()


def _b(s):
    return s if isinstance(s, bytes) else s.encode()


def server_list(addrs):
    """"host:port" entries for (host, port) pairs or Server objects."""
    out = []
    for a in addrs:
        if isinstance(a, str):
            out.append(a)
        elif isinstance(a, tuple):
            out.append("%s:%d" % a)
        else:
            out.append("127.0.0.1:%d" % a.port)
    return ",".join(out)


class ConfigError(Exception):
    pass


class TLS(ctypes.Structure):
    """struct cellar_tls."""
    _fields_ = [("ca_file", ctypes.c_char_p), ("cert_file", ctypes.c_char_p),
                ("key_file", ctypes.c_char_p), ("no_verify", ctypes.c_int)]


class Client:
    """One handle over a server list.  Options are struct cellar_options' fields."""

    def __init__(self, servers, tls=None, **options):
        """tls: struct cellar_tls's fields as a dict, set on the configuration."""
        L = lib()
        self._opt = Options(**{k: (_b(v) if isinstance(v, str) else v)
                               for k, v in options.items()})
        cfg = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        text = servers if isinstance(servers, (str, bytes)) else server_list(servers)
        rc = L.cellar_config_parse(ctypes.byref(cfg), _b(text), ctypes.byref(self._opt),
                                   err, len(err))
        if rc == OK and tls is not None:
            L.cellar_config_tls.argtypes = [ctypes.c_void_p, ctypes.POINTER(TLS),
                                            ctypes.c_char_p, ctypes.c_size_t]
            self._tls = TLS(**{k: (_b(v) if isinstance(v, str) else v) for k, v in tls.items()})
            rc = L.cellar_config_tls(cfg, ctypes.byref(self._tls), err, len(err))
            if rc != OK:
                L.cellar_config_release(ctypes.byref(cfg))
        if rc != OK:
            raise ConfigError("%d: %s" % (rc, err.value.decode()))
        self.nservers = L.cellar_config_servers(cfg)
        self.names = [L.cellar_config_server_name(cfg, i).decode()
                      for i in range(self.nservers)]
        self.h = ctypes.c_void_p()
        rc = L.cellar_create(ctypes.byref(self.h), cfg)
        L.cellar_config_release(ctypes.byref(cfg))
        assert rc == OK, rc

    def close(self):
        if self.h:
            lib().cellar_destroy(ctypes.byref(self.h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- reads -----------------------------------------------------------
    @staticmethod
    def _item(it):
        v = ctypes.string_at(it.value, it.nvalue) if it.value else None
        out = (it.status, v, it.flags, it.cas)
        lib().cellar_item_clear(ctypes.byref(it))
        return out

    def get(self, key):
        """(status, value, flags, cas)."""
        it = Item()
        lib().cellar_get(self.h, _b(key), len(_b(key)), ctypes.byref(it))
        return self._item(it)

    def gets(self, key):
        it = Item()
        lib().cellar_gets(self.h, _b(key), len(_b(key)), ctypes.byref(it))
        return self._item(it)

    def gat(self, key, exptime):
        it = Item()
        lib().cellar_gat(self.h, _b(key), len(_b(key)), exptime, ctypes.byref(it))
        return self._item(it)

    def gats(self, key, exptime):
        it = Item()
        lib().cellar_gats(self.h, _b(key), len(_b(key)), exptime, ctypes.byref(it))
        return self._item(it)

    def mget(self, keys):
        """A list of (status, value, flags, cas), one per key."""
        n = len(keys)
        bkeys = [_b(k) for k in keys]
        karr = (ctypes.c_char_p * n)(*bkeys)
        narr = (ctypes.c_size_t * n)(*[len(k) for k in bkeys])
        items = (Item * n)()
        rc = lib().cellar_mget(self.h, karr, narr, n, items)
        assert rc == OK, rc
        return [self._item(items[i]) for i in range(n)]

    # -- writes ----------------------------------------------------------
    def set(self, key, value, flags=0, exptime=0):
        k, v = _b(key), _b(value)
        return lib().cellar_set(self.h, k, len(k), v, len(v), flags, exptime)

    def add(self, key, value, flags=0, exptime=0):
        k, v = _b(key), _b(value)
        return lib().cellar_add(self.h, k, len(k), v, len(v), flags, exptime)

    def replace(self, key, value, flags=0, exptime=0):
        k, v = _b(key), _b(value)
        return lib().cellar_replace(self.h, k, len(k), v, len(v), flags, exptime)

    def append(self, key, value):
        k, v = _b(key), _b(value)
        return lib().cellar_append(self.h, k, len(k), v, len(v))

    def prepend(self, key, value):
        k, v = _b(key), _b(value)
        return lib().cellar_prepend(self.h, k, len(k), v, len(v))

    def cas(self, key, value, cas, flags=0, exptime=0):
        k, v = _b(key), _b(value)
        return lib().cellar_cas(self.h, k, len(k), v, len(v), flags, exptime, cas)

    def delete(self, key):
        k = _b(key)
        return lib().cellar_delete(self.h, k, len(k))

    def touch(self, key, exptime):
        k = _b(key)
        return lib().cellar_touch(self.h, k, len(k), exptime)

    def incr(self, key, delta):
        """(status, value)."""
        k, out = _b(key), ctypes.c_uint64(0)
        rc = lib().cellar_incr(self.h, k, len(k), delta, ctypes.byref(out))
        return rc, out.value

    def decr(self, key, delta):
        k, out = _b(key), ctypes.c_uint64(0)
        rc = lib().cellar_decr(self.h, k, len(k), delta, ctypes.byref(out))
        return rc, out.value

    def flush_all(self, delay=0):
        return lib().cellar_flush_all(self.h, delay)

    def meta(self, cmd, key, flags="", value=b""):
        """A raw meta command: (status, code, return flags, value)."""
        r = MetaReply()
        k, v = _b(key), _b(value)
        rc = lib().cellar_meta(self.h, _b(cmd)[1:2], k, len(k), _b(flags), v, len(v),
                               ctypes.byref(r))
        out = (rc, r.code.decode(), ctypes.string_at(r.flags).decode() if r.flags else "",
               ctypes.string_at(r.value, r.nvalue) if r.value else None)
        lib().cellar_meta_reply_clear(ctypes.byref(r))
        return out

    def server_stats(self, i, group=None):
        """(status, {name: value}) of server i's `stats [group]` (bytes -> bytes)."""
        got = {}

        def each(_arg, name, nname, value, nvalue):
            got[ctypes.string_at(name, nname)] = ctypes.string_at(value, nvalue)
        fn = STAT_FN(each)
        rc = lib().cellar_server_stats(self.h, i, _b(group) if group else None, fn, None)
        return rc, got

    def version(self, i):
        buf = ctypes.create_string_buffer(128)
        rc = lib().cellar_version(self.h, i, buf, len(buf))
        return rc, buf.value.decode()

    # -- leases, single-flight -------------------------------------------
    def lease_get(self, key, lease_ttl):
        """(status, lease state, token, stale, value)."""
        it, ls = Item(), Lease()
        k = _b(key)
        rc = lib().cellar_lease_get(self.h, k, len(k), lease_ttl, ctypes.byref(it),
                                    ctypes.byref(ls))
        v = self._item(it)[1]
        return rc, ls.state, ls.token, bool(ls.stale), v

    def lease_set(self, key, value, token, flags=0, exptime=0):
        k, v = _b(key), _b(value)
        return lib().cellar_lease_set(self.h, k, len(k), v, len(v), flags, exptime, token)

    def get_flight(self, group, key):
        it = Item()
        k = _b(key)
        lib().cellar_get_flight(self.h, group.g, k, len(k), ctypes.byref(it))
        return self._item(it)

    def use_near(self, near):
        lib().cellar_use_near(self.h, near.n if near else None)

    # -- state -----------------------------------------------------------
    def server_of(self, key):
        k = _b(key)
        return lib().cellar_server_of(self.h, k, len(k))

    def server_down(self, i):
        return bool(lib().cellar_server_down(self.h, i))

    def poll(self, ms):
        lib().cellar_poll(self.h, ms)

    def stats(self):
        st = Stats()
        lib().cellar_stats(self.h, ctypes.byref(st))
        return {name: getattr(st, name) for name, _ in Stats._fields_}


class Flight:
    """A single-flight group, shared by the threads' handles."""

    def __init__(self):
        self.g = ctypes.c_void_p()
        assert lib().cellar_flight_create(ctypes.byref(self.g)) == OK

    def close(self):
        lib().cellar_flight_destroy(ctypes.byref(self.g))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class Near:
    """A near-cache (bytes, ttl seconds, policy), shared by handles."""

    def __init__(self, nbytes, ttl, policy=None):
        self.n = ctypes.c_void_p()
        rc = lib().cellar_near_create(ctypes.byref(self.n), nbytes, ttl,
                                      _b(policy) if policy else None)
        if rc != OK:
            raise ValueError("cellar_near_create: %d" % rc)

    def close(self):
        lib().cellar_near_destroy(ctypes.byref(self.n))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
