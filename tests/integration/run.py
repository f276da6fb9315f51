#!/usr/bin/python3
"""Integration test runner.

    CELLARD=/abs/path/to/cellard /usr/bin/python3 tests/integration/run.py [FILTER...]

Discovers tests/integration/test_*.py, runs every module-level function named
test_* (in file order), prints one line per test with PASS/FAIL and its time,
then "N passed, N failed", and exits non-zero if anything failed (or if a
filter matched nothing).  A FILTER is a substring of "module.function", e.g.
`test_limits` or `test_pymemcache.test_cas` or just `cas`.

Each test gets a watchdog (TEST_TIMEOUT seconds, default 300): a test that
overruns fails instead of hanging the suite.
"""

import importlib
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import util  # noqa: E402


class TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout("test exceeded its %ss watchdog" % os.environ.get("TEST_TIMEOUT", "300"))


def discover():
    tests = []
    for fn in sorted(os.listdir(HERE)):
        if not (fn.startswith("test_") and fn.endswith(".py")):
            continue
        mod = importlib.import_module(fn[:-3])
        for name, obj in vars(mod).items():
            if name.startswith("test_") and callable(obj) and getattr(obj, "__module__", None) == mod.__name__:
                tests.append(("%s.%s" % (mod.__name__, name), obj))
    return tests


def main(argv):
    filters = argv[1:]
    if not os.path.isfile(util.CELLARD) or not os.access(util.CELLARD, os.X_OK):
        print("CELLARD=%s is not an executable file" % util.CELLARD)
        return 2
    for tool in (util.MEMCACHED,):
        if not os.access(tool, os.X_OK):
            print("%s is missing (apt-get install memcached)" % tool)
            return 2
    tests = discover()
    if filters:
        tests = [(n, f) for n, f in tests if any(flt in n for flt in filters)]
        if not tests:
            print("no test matches %s" % " ".join(filters))
            return 2
    limit = int(os.environ.get("TEST_TIMEOUT", "300"))
    print("server under test: %s (oracle %s)" % (util.CELLARD, util.MEMCACHED))
    sys.stdout.flush()
    signal.signal(signal.SIGALRM, _alarm)
    passed, failed = 0, []
    t_all = time.monotonic()
    for name, fn in tests:
        t0 = time.monotonic()
        signal.alarm(limit)
        try:
            fn()
            ok, err = True, None
        except BaseException as e:  # noqa: B902 - report everything, incl. timeouts
            if isinstance(e, KeyboardInterrupt):
                raise
            ok, err = False, traceback.format_exc()
        finally:
            signal.alarm(0)
        dt = time.monotonic() - t0
        if ok:
            passed += 1
            print("PASS  %-60s %7.2fs" % (name, dt))
        else:
            failed.append(name)
            print("FAIL  %-60s %7.2fs" % (name, dt))
            print("      " + err.rstrip().replace("\n", "\n      "))
        sys.stdout.flush()
    for name in failed:
        print("failed: %s" % name)
    print("total %.1fs" % (time.monotonic() - t_all))
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
