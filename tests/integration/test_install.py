"""make install: what it puts where, and systemd's opinion of the units.

Two installs of the build make test has just made (the build directory of
$CELLARD, else build/; make rebuilds nothing that is up to date):

  - a staged one, `make install DESTDIR=<tmp> PREFIX=/usr SYSCONFDIR=/etc`,
    as a package build makes it: the files, their modes and links, the
    paths written into the .pc file, the units and the configuration;
  - one into a prefix of its own (PREFIX=<tmp>/usr SYSCONFDIR=<tmp>/etc),
    whose units name programs that exist, for `systemd-analyze verify`.
    verify checks that ExecStart's program is there, so a staged unit
    (/usr/bin/cellard, not installed on this machine) cannot pass it, and
    --root=<DESTDIR> lacks systemd's own units (sysinit.target) and
    /bin/kill.  It is run without --man (the pages are checked as files
    below) and must say nothing at all: an unknown key or a value it cannot
    parse is only a warning, with exit status 0.

Each install lives in a temporary directory removed whatever happens.
"""

import fcntl
import json
import os
import re
import subprocess
import tempfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.dirname(os.environ["CELLARD"]) if os.environ.get("CELLARD") else \
    os.path.join(REPO, "build")

PROGRAMS = ["cellard", "cellar-router", "cellar-squeal", "cellar-sim", "cellar-bench", "cellar-ring"]
UNITS = ["cellard.service", "cellard@.service", "cellar-router.service", "cellar-squeal.service"]
# What make install substitutes (@BINDIR@ ...), left in a file.
PLACEHOLDER = re.compile(r"@[A-Z]+@")
CONFIGS = ["cellard.conf", "cellar-router.conf", "cellar-squeal.conf", "router.json"]


def make_install(*args):
    """Runs make install with these variables; fails the test with make's output."""
    # Not the variables of a make that runs this test (make check LIBDIR=...).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    # One make at a time in the build directory (pytest-xdist runs the
    # fixtures once a worker), in case it has something to rebuild.
    os.makedirs(BUILD, exist_ok=True)
    with open(os.path.join(BUILD, ".test_install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "-s", "-C", REPO, "B=" + BUILD, "install"] + list(args),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
    assert r.returncode == 0, "make install %s failed:\n%s" % (" ".join(args), r.stdout)
    return r.stdout


@pytest.fixture(scope="module")
def staged():
    """The root of a `make install DESTDIR=... PREFIX=/usr SYSCONFDIR=/etc`."""
    with tempfile.TemporaryDirectory(prefix="cellar-install-") as tmp:
        make_install("DESTDIR=" + tmp, "PREFIX=/usr", "SYSCONFDIR=/etc")
        yield tmp


@pytest.fixture(scope="module")
def prefixed():
    """The prefix of a `make install PREFIX=<tmp>/usr SYSCONFDIR=<tmp>/etc`."""
    with tempfile.TemporaryDirectory(prefix="cellar-prefix-") as tmp:
        make_install("PREFIX=" + tmp + "/usr", "SYSCONFDIR=" + tmp + "/etc")
        yield tmp


def read(path):
    with open(path) as f:
        return f.read()


def test_programs_are_installed_and_run(staged):
    for p in PROGRAMS:
        path = os.path.join(staged, "usr/bin", p)
        assert os.path.isfile(path), path
        assert os.stat(path).st_mode & 0o777 == 0o755, path
    out = subprocess.run([os.path.join(staged, "usr/bin/cellard"), "-V"], stdout=subprocess.PIPE,
                         text=True, timeout=10, check=True).stdout
    assert out.startswith("cellard ")


def test_library_header_and_pkgconfig(staged):
    lib = os.path.join(staged, "usr/lib")
    real = os.path.join(lib, "libcellar.so.0.1.0")
    assert os.path.isfile(real) and not os.path.islink(real)
    assert os.readlink(os.path.join(lib, "libcellar.so.0")) == "libcellar.so.0.1.0"
    assert os.readlink(os.path.join(lib, "libcellar.so")) == "libcellar.so.0"
    dyn = subprocess.run(["readelf", "-d", real], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    assert "Library soname: [libcellar.so.0]" in dyn
    assert os.path.isfile(os.path.join(lib, "libcellar.a"))
    assert read(os.path.join(staged, "usr/include/cellar.h")) == \
        read(os.path.join(REPO, "include/cellar.h"))

    pc = read(os.path.join(lib, "pkgconfig/cellar.pc"))
    assert not PLACEHOLDER.search(pc), pc
    fields = dict(l.split("=", 1) for l in pc.splitlines() if "=" in l and ":" not in l)
    assert fields["prefix"] == "/usr"
    assert fields["libdir"] == "/usr/lib"
    assert fields["includedir"] == "/usr/include"


def test_an_application_builds_on_the_installed_library(staged):
    """The installed header, .pc and shared object, as an application uses
    them: it loads the installed router.json through the library."""
    env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=staged,
               PKG_CONFIG_PATH=os.path.join(staged, "usr/lib/pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "cellar"], env=env,
                           stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    assert "-I" + staged + "/usr/include" in flags, flags
    src = os.path.join(staged, "app.c")
    with open(src, "w") as f:
        f.write('#include <cellar.h>\n#include <stdio.h>\n'
                'int main(int argc, char **argv) {\n'
                '    struct cellar_config *cfg; char err[256];\n'
                '    if (argc < 2 || cellar_config_load(&cfg, argv[1], NULL, err, sizeof err)) {\n'
                '        fprintf(stderr, "%s\\n", err); return 1; }\n'
                '    printf("%u %s\\n", cellar_config_servers(cfg), cellar_config_server_name(cfg, 0));\n'
                '    cellar_config_release(&cfg); return 0; }\n')
    app = os.path.join(staged, "app")
    # A library built under make asan needs its runtime first in the program.
    needed = subprocess.run(["readelf", "-d", os.path.join(staged, "usr/lib/libcellar.so.0")],
                            stdout=subprocess.PIPE, text=True, check=True).stdout
    san = ["-fsanitize=address,undefined"] if "libasan" in needed else []
    subprocess.run(["cc", "-std=c11"] + san + ["-o", app, src] + flags, check=True, timeout=60)
    assert "libcellar.so.0 =>" in subprocess.run(
        ["ldd", app], env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(staged, "usr/lib")),
        stdout=subprocess.PIPE, text=True, check=True).stdout
    out = subprocess.run([app, os.path.join(staged, "etc/cellar/router.json")],
                         env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(staged, "usr/lib")),
                         stdout=subprocess.PIPE, text=True, timeout=10, check=True).stdout
    assert out.split()[0] == "1"


def test_manual_pages_and_sql(staged):
    pages = [p for p in os.listdir(os.path.join(REPO, "man")) if p[-2:] in (".1", ".3")] \
        if os.path.isdir(os.path.join(REPO, "man")) else []
    for p in pages:
        path = os.path.join(staged, "usr/share/man/man" + p[-1], p)
        assert os.path.isfile(path), path
        assert os.stat(path).st_mode & 0o777 == 0o644
    assert read(os.path.join(staged, "usr/share/cellar/cellar_squeal.sql")) == \
        read(os.path.join(REPO, "src/squeal/cellar_squeal.sql"))


def unit_settings(text):
    """{key: [values]} of a unit file (sections flattened)."""
    out = {}
    for line in text.splitlines():
        if line and line[0] not in "#;[" and "=" in line:
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def test_units(staged):
    d = os.path.join(staged, "usr/lib/systemd/system")
    assert sorted(os.listdir(d)) == sorted(UNITS)
    for u in UNITS:
        text = read(os.path.join(d, u))
        assert not PLACEHOLDER.search(text), u
        s = unit_settings(text)
        prog = u.split("@")[0].split(".")[0]
        assert s["ExecStart"][0].startswith("/usr/bin/%s " % prog), u
        assert s["EnvironmentFile"][0].startswith("/etc/cellar/"), u
        # Never root (cellard refuses it without -u), and the sandbox.
        assert s["DynamicUser"] == ["yes"], u
        for k, v in [("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                     ("PrivateTmp", "yes"), ("ProtectHome", "yes")]:
            assert s.get(k) == [v], (u, k)
        assert s["WantedBy"] == ["multi-user.target"], u
    router = unit_settings(read(os.path.join(d, "cellar-router.service")))
    assert router["ExecReload"] == ["/bin/kill -HUP $MAINPID"]
    assert router["StateDirectory"] == ["cellar-router"]
    squeal = unit_settings(read(os.path.join(d, "cellar-squeal.service")))
    assert squeal["StateDirectory"] == ["cellar-squeal"]
    assert unit_settings(read(os.path.join(d, "cellard@.service")))["EnvironmentFile"] == \
        ["/etc/cellar/cellard-%i.conf"]


def test_configuration(staged):
    d = os.path.join(staged, "etc/cellar")
    assert sorted(os.listdir(d)) == sorted(CONFIGS)
    for c in CONFIGS:
        assert not PLACEHOLDER.search(read(os.path.join(d, c))), c
    assert 'CELLARD_OPTS="-m 64 -p 11211 -l 127.0.0.1 -c 1024"' in read(os.path.join(d, "cellard.conf"))
    router = read(os.path.join(d, "cellar-router.conf"))
    assert "--config /etc/cellar/router.json" in router
    assert "--async-dir /var/lib/cellar-router" in router
    assert json.loads(read(os.path.join(d, "router.json")))["pools"]
    # It may hold a database password: systemd reads it as root.
    assert os.stat(os.path.join(d, "cellar-squeal.conf")).st_mode & 0o777 == 0o640


def test_reinstall_keeps_edited_configuration():
    with tempfile.TemporaryDirectory(prefix="cellar-install-") as tmp:
        make_install("DESTDIR=" + tmp, "PREFIX=/usr", "SYSCONFDIR=/etc")
        conf = os.path.join(tmp, "etc/cellar/cellard.conf")
        with open(conf, "w") as f:
            f.write('CELLARD_OPTS="-m 1024"\n')
        out = make_install("DESTDIR=" + tmp, "PREFIX=/usr", "SYSCONFDIR=/etc")
        assert read(conf) == 'CELLARD_OPTS="-m 1024"\n'
        assert "keep " + conf in out


def test_systemd_analyze_verify_accepts_every_unit(prefixed):
    d = os.path.join(prefixed, "usr/lib/systemd/system")
    for u in UNITS:
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", os.path.join(d, u)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=60)
        assert r.returncode == 0 and r.stdout == "", "%s:\n%s" % (u, r.stdout)
