# cellar -- one non-recursive Makefile.
#
#   make            build everything into build/
#   make run        build and start cellard on 127.0.0.1:11211
#   make test       install test packages (apt-get), build, run every test
#   make asan       the same tests with ASan + UBSan, into build-asan/
#
# Each layer under src/ becomes one archive; a test or program links only
# the archives its layer may use, so a call that points up fails to link.

CC      ?= cc
AR      := gcc-ar
B       ?= build
# Link-time optimisation lets cellard's hot path inline across files and
# layers (hashing, the engine's lookups, output batching): about 10% fewer
# instructions per request.  Objects carry both forms (fat), so a program
# can link without it: cellar-sim replays 20% faster without (measured).
# Layering is still enforced by the archives.
OPT     ?= -O2 -flto=auto -ffat-lto-objects
SAN     ?=
CFLAGS  := -std=c11 $(OPT) -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
           -Isrc -Iinclude -MMD -MP $(SAN) $(EXTRA_CFLAGS)
LDFLAGS := -pthread $(OPT) $(SAN) $(EXTRA_LDFLAGS)
LDLIBS  := -lm

LAYERS  := core storage protocol net client server
src_of   = $(wildcard src/$(1)/*.c)
obj_of   = $(patsubst src/%.c,$(B)/obj/%.o,$(call src_of,$(1)))

CORE_A     := $(B)/libcore.a
STORAGE_A  := $(B)/libstorage.a
PROTOCOL_A := $(B)/libprotocol.a
SERVER_A   := $(B)/libserver.a
NET_A      := $(B)/libnet.a
CLIENT_A   := $(B)/libclient.a

.PHONY: all run test check unit integration integration-router asan tsan clean deps sim policies install lib examples bench-client \
        storage-seg
all: $(B)/cellard $(B)/cellar-router $(B)/cellar-squeal $(B)/cellar-bench $(B)/cellar-sim $(B)/cellar-ring lib examples unit-bins

$(CORE_A): $(call obj_of,core)
$(STORAGE_A): $(call obj_of,storage)
$(PROTOCOL_A): $(call obj_of,protocol)
$(CLIENT_A): $(call obj_of,client)
$(NET_A): $(call obj_of,net)
$(SERVER_A): $(filter-out $(B)/obj/server/main.o,$(call obj_of,server))
$(B)/lib%.a:
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(B)/cellard: $(B)/obj/server/main.o $(SERVER_A) $(NET_A) $(STORAGE_A) $(PROTOCOL_A) $(CORE_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(libs_server) $(LDLIBS)

# cellar-router: the network core below, libcellar's routes behind.
ROUTER_OBJ := $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/router/*.c))
$(B)/cellar-router: $(ROUTER_OBJ) $(CLIENT_A) $(NET_A) $(STORAGE_A) $(PROTOCOL_A) $(CORE_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(libs_client) $(libs_net) $(LDLIBS)

# cellar-squeal: libpq in, libcellar out.  Only its objects see libpq's headers.
SQUEAL_A   := $(B)/libsqueal.a
$(SQUEAL_A): $(B)/obj/squeal/pgout.o $(B)/obj/squeal/cluster.o $(B)/obj/squeal/metrics.o
$(B)/obj/squeal/main.o: CFLAGS += -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
$(B)/cellar-squeal: $(B)/obj/squeal/main.o $(SQUEAL_A) $(CLIENT_A) $(STORAGE_A) $(PROTOCOL_A) \
                    $(CORE_A)
	$(CC) $(LDFLAGS) -o $@ $^ -lpq $(libs_client) $(LDLIBS)

# Tools sit on protocol + core (and the client library, once there is one).
$(B)/cellar-bench: $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/tools/bench/*.c)) $(PROTOCOL_A) $(CORE_A)
	$(CC) $(LDFLAGS) -o $@ $^ -luring -lssl -lcrypto $(LDLIBS)

# cellar-ring: a pool's key placement (client layer + core).
$(B)/cellar-ring: $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/tools/ring/*.c)) $(CLIENT_A) $(CORE_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# libcellar, the client library applications link: its own layer and those
# it stands on (storage for the near-cache), in one archive and in one
# shared object.  The shared one is
# built from position-independent objects of its own and exports only the
# calls cellar.h marks CELLAR_API.
LIB_LAYERS  := client storage protocol core
LIB_OBJ     := $(foreach l,$(LIB_LAYERS),$(call obj_of,$(l)))
LIB_PIC     := $(patsubst $(B)/obj/%.o,$(B)/pic/%.o,$(LIB_OBJ))
LIB_SOVER   := 0
LIB_VERSION := 0.1.0
lib: $(B)/libcellar.a $(B)/libcellar.so
$(B)/libcellar.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
$(B)/pic/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(filter-out -flto=auto -ffat-lto-objects,$(CFLAGS)) -fPIC -fvisibility=hidden -c -o $@ $<
$(B)/libcellar.so: $(LIB_PIC)
	$(CC) -shared -Wl,-soname,libcellar.so.$(LIB_SOVER) -Wl,--no-undefined $(SAN) $(EXTRA_LDFLAGS) -o $@ $^ \
	  -pthread $(libs_client)

# examples/: small programs a user copies from, built against the library as
# an application would (its public header and archive only).
EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)
$(B)/examples/%: examples/%.c $(B)/libcellar.a include/cellar.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L $(SAN) -Iinclude \
	  -o $@ $< $(B)/libcellar.a $(LDFLAGS) $(libs_client) $(LDLIBS)

# examples/lookaside: the look-aside service on PostgreSQL and its load driver (libpq too;
# bench/lookaside runs it).
LOOKASIDE_SRC := $(wildcard examples/lookaside/*.c)
examples: $(B)/examples/lookaside
$(B)/examples/lookaside: $(LOOKASIDE_SRC) examples/lookaside/service.h $(B)/libcellar.a include/cellar.h
	@mkdir -p $(@D)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -pthread $(SAN) -Iinclude \
	  -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql) \
	  -o $@ $(LOOKASIDE_SRC) $(B)/libcellar.a $(LDFLAGS) -lpq $(libs_client) $(LDLIBS)

# make install: every program, libcellar (archive, shared object with its
# SONAME links, header, pkg-config file), the manual pages that man/ holds,
# cellar_squeal.sql, the systemd units and the default configuration in
# SYSCONFDIR/cellar/ (doc/install.md).  GNU's names; DESTDIR is prepended to
# every path, which the installed files themselves do not contain.
# Configuration files already there are kept (a package manager replaces
# them its own way).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
SYSCONFDIR ?= $(PREFIX)/etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
PROGRAMS   := cellard cellar-router cellar-squeal cellar-sim cellar-bench cellar-ring
UNITS      := $(patsubst packaging/systemd/%.in,%,$(wildcard packaging/systemd/*.service.in))
CONFIGS    := $(notdir $(wildcard packaging/etc/*))
MAN1       := $(wildcard man/*.1)
MAN3       := $(wildcard man/*.3)
# A file's paths are those of this installation (sed on @BINDIR@ and @SYSCONFDIR@).
install_subst = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
                    -e 's|@DATADIR@|$(DATADIR)|g'
.PHONY: programs
programs: $(addprefix $(B)/,$(PROGRAMS))
install: programs lib
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
	  $(DESTDIR)$(DATADIR)/cellar $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/cellar
	install -m 755 $(addprefix $(B)/,$(PROGRAMS)) $(DESTDIR)$(BINDIR)/
	install -m 644 include/cellar.h $(DESTDIR)$(INCLUDEDIR)/cellar.h
	install -m 644 $(B)/libcellar.a $(DESTDIR)$(LIBDIR)/libcellar.a
	install -m 644 $(B)/libcellar.so $(DESTDIR)$(LIBDIR)/libcellar.so.$(LIB_VERSION)
	ln -sf libcellar.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/libcellar.so.$(LIB_SOVER)
	ln -sf libcellar.so.$(LIB_SOVER) $(DESTDIR)$(LIBDIR)/libcellar.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(LIB_VERSION)|' cellar.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/cellar.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/cellar.pc
	install -m 644 src/squeal/cellar_squeal.sql $(DESTDIR)$(DATADIR)/cellar/cellar_squeal.sql
	$(if $(MAN1),install -d $(DESTDIR)$(MANDIR)/man1 && install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(MAN3),install -d $(DESTDIR)$(MANDIR)/man3 && install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/)
	@set -e; for u in $(UNITS); do \
	  echo "install $$u -> $(DESTDIR)$(UNITDIR)/$$u"; \
	  $(install_subst) packaging/systemd/$$u.in > $(DESTDIR)$(UNITDIR)/$$u; \
	  chmod 644 $(DESTDIR)$(UNITDIR)/$$u; done
	@set -e; umask 022; for f in $(CONFIGS); do \
	  t=$(DESTDIR)$(SYSCONFDIR)/cellar/$$f; \
	  if [ -e $$t ]; then echo "keep $$t (already there)"; continue; fi; \
	  echo "install $$f -> $$t"; \
	  $(install_subst) packaging/etc/$$f > $$t; \
	  case $$f in cellar-squeal.conf) chmod 640 $$t;; *) chmod 644 $$t;; esac; done

# make deb: the Debian packages cellard, cellar-router, cellar-squeal, libcellar0 and
# libcellar-dev (debian/; doc/install.md), built by dpkg-buildpackage in a copy of this
# tree (its tracked and unignored files) in $(B)/deb/cellar, so the .debs, .changes
# and .buildinfo land in $(B)/deb; then lintian, which fails it on an error.  Installs
# the tools it needs when missing; never part of make test.
DEB_PKGS := debhelper dpkg-dev fakeroot lintian libjansson-dev liburing-dev libssl-dev libpq-dev libsasl2-dev
DEBDIR   := $(B)/deb
.PHONY: deb
deb:
	@missing=$$(for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	rm -rf $(DEBDIR) && mkdir -p $(DEBDIR)/cellar
	if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xf - -C $(DEBDIR)/cellar; \
	else \
	  tar --exclude-vcs --exclude='./build*' --exclude=./$(B) -cf - . | tar -xf - -C $(DEBDIR)/cellar; \
	fi
	cd $(DEBDIR)/cellar && dpkg-buildpackage -us -uc -b
	lintian $(DEBDIR)/*.changes
	@ls -1 $(DEBDIR)/*.deb

# bench/router: cellar-router against Debian's nutcracker and direct to cellard, over 4 cellard
# (bench/router/run, about 8 minutes; builds in build-router/; installs nutcracker when it is
# missing; never part of make test).  bench/router/README.md has the method and results.
.PHONY: bench-router
bench-router:
	@test -x /usr/sbin/nutcracker || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nutcracker; }
	bench/router/run

# bench/lookaside: the paper's look-aside table on a real PostgreSQL (about 3 minutes; never
# part of make test).  bench/lookaside/README.md has the method and results.
.PHONY: bench-lookaside
bench-lookaside:
	bench/lookaside/run

# bench/segmem: the segment store's bytes per item at the reference load, on the store alone
# (issue 18, until the store is behind the engine API and bench/compare can measure it).
.PHONY: bench-segmem
$(B)/segmem: bench/segmem/segmem.c $(STORAGE_A) $(CORE_A)
	$(CC) $(CFLAGS) -o $@ $< $(STORAGE_A) $(CORE_A) $(LDFLAGS) $(LDLIBS)
bench-segmem: $(B)/segmem
	$(B)/segmem

# The benchmarks' null server: one self-contained file, built by bench/compare.
$(B)/null_server: bench/null_server.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LDFLAGS) $(LDLIBS)

# bench/incast: multi-get latency against the client's window, 16 servers behind
# a tc tbf queue in a network namespace (needs root; builds in build-incast/;
# not part of make test).  bench/incast/README.md has the method and results.
.PHONY: bench-incast
bench-incast:
	bench/incast/run

# bench/client: libcellar against libmemcached (bench/client/run; never part of make test).
# It links the libcellar archive as an application would (without link-time optimisation
# across the library, as libmemcached's shared object has none) and libmemcached-dev, which
# bench-client installs when it is missing.
BENCH_CLIENT_PKGS := libmemcached-dev
$(B)/client_bench: bench/client/client_bench.c $(B)/libcellar.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $$(pkg-config --cflags libmemcached) -o $@ $< $(B)/libcellar.a \
	  $(LDFLAGS) -fno-lto $$(pkg-config --libs libmemcached) $(libs_client) $(LDLIBS)
bench-client:
	@missing=$$(for p in $(BENCH_CLIENT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common && \
	  sed -i 's/^#*create_main_cluster = true/create_main_cluster = false/' \
	    /etc/postgresql-common/createcluster.conf && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@pkg-config --exists libmemcached || { echo "bench-client: pkg-config finds no libmemcached"; exit 1; }
	$(MAKE) $(B)/client_bench $(B)/cellard

# The simulator runs the engine itself: storage + core only.
$(B)/cellar-sim: $(patsubst src/%.c,$(B)/obj/%.o,$(wildcard src/tools/sim/*.c)) $(STORAGE_A) $(CORE_A)
	$(CC) $(LDFLAGS) -fno-lto -o $@ $^ $(LDLIBS)
sim: $(B)/cellar-sim

# Unit tests: tests/unit/<layer>/test_<module>.c links its layer and those below.
deps_core     := $(CORE_A)
deps_storage  := $(STORAGE_A) $(CORE_A)
deps_protocol := $(PROTOCOL_A) $(CORE_A)
deps_client   := $(CLIENT_A) $(STORAGE_A) $(PROTOCOL_A) $(CORE_A)
deps_net      := $(NET_A) $(PROTOCOL_A) $(CORE_A)
deps_server   := $(SERVER_A) $(NET_A) $(STORAGE_A) $(PROTOCOL_A) $(CORE_A)
deps_squeal   := $(SQUEAL_A)
# System libraries a layer's archive needs (the client's JSON configuration and
# its io_uring connections; the network core's io_uring back end and TLS; the
# server's SASL authentication, -S).
libs_client   := -ljansson -luring -lssl -lcrypto
libs_net      := -luring -lssl -lcrypto
libs_server   := $(libs_net) -lsasl2
UNIT_SRC  := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
unit-bins: $(UNIT_BINS)
.SECONDEXPANSION:
$(B)/tests/%: tests/unit/%.c $$(deps_$$(firstword $$(subst /, ,$$*)))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(deps_$(firstword $(subst /, ,$*))) $(LDFLAGS) \
	  $(libs_$(firstword $(subst /, ,$*))) $(LDLIBS)

# Fuzz drivers build as plain programs that replay a bounded random stream (make fuzz
# builds them as libFuzzer targets: FUZZ_LINK).  A driver links the protocol layer, or
# the archives (and system libraries) named for it here.
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(B)/fuzz/%,$(FUZZ_SRC))
fuzz_deps_fuzz_config    := $(CLIENT_A) $(STORAGE_A) $(PROTOCOL_A) $(CORE_A)
fuzz_libs_fuzz_config    := $(libs_client)
fuzz_deps_fuzz_squeal    := $(SQUEAL_A)
fuzz_deps_fuzz_sim_trace := $(B)/obj/tools/sim/trace.o $(B)/obj/tools/sim/idmap.o $(CORE_A)
fuzz_deps = $(or $(fuzz_deps_$(1)),$(PROTOCOL_A) $(CORE_A))
$(B)/fuzz/%: tests/fuzz/%.c $$(call fuzz_deps,$$*)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(FUZZ_LINK) -o $@ $< $(call fuzz_deps,$*) $(LDFLAGS) $(fuzz_libs_$*) $(LDLIBS)
# Inputs each replays in make unit: FUZZ_ITERS, fewer where one input costs more (a
# configuration is resolved and built, a trace written to a file and loaded four ways).
FUZZ_ITERS                ?= 200000
fuzz_iters_fuzz_config    := 100000
fuzz_iters_fuzz_sim_trace := 10000

# make fuzz: every driver (or those FUZZ_NAMES lists) built as a libFuzzer target with clang,
# ASan and UBSan into build-fuzz/, then run FUZZ_SECONDS each, FUZZ_JOBS at once, on
# build-fuzz/corpus/<driver> (seeded from the driver's corpus, kept between runs) with its
# words as the dictionary; crashes go to build-fuzz/crashes/<driver>/ and a table ends it
# (executions, edges covered: libFuzzer's cov, crashes), failing if any input failed.
# tests/fuzz/libfuzzer.sh runs each.  Needs clang (libFuzzer comes with it); not part of
# make test.
FUZZ_B       ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= $(shell nproc)
FUZZ_NAMES   ?= $(patsubst tests/fuzz/%.c,%,$(FUZZ_SRC))
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
.PHONY: fuzz
fuzz:
	$(MAKE) B=$(FUZZ_B) CC=$(FUZZ_CC) OPT="-O1" SAN="$(FUZZ_SAN)" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link -Wno-error" FUZZ_LINK="-DLIBFUZZER -fsanitize=fuzzer" \
	  $(addprefix $(FUZZ_B)/fuzz/,$(FUZZ_NAMES))
	@rm -rf $(FUZZ_B)/results
	@printf '%s\n' $(FUZZ_NAMES) | xargs -P $(FUZZ_JOBS) -I{} \
	  tests/fuzz/libfuzzer.sh run $(FUZZ_B)/fuzz/{} $(FUZZ_SECONDS) $(FUZZ_B)
	@tests/fuzz/libfuzzer.sh table $(FUZZ_B) $(FUZZ_NAMES)

run: $(B)/cellard
	./$(B)/cellard -l 127.0.0.1 -p 11211 $(if $(filter 0,$(shell id -u)),-u root)

# Packages the build (libjansson-dev: libcellar's JSON configuration; libssl-dev: TLS; liburing-dev: the
# network core's io_uring back end; libsasl2-dev: cellard -S) and the tests need, from Debian
# (sasl2-bin's saslpasswd2 and libsasl2-modules' PLAIN and CRAM-MD5: test_sasl.py).
TEST_PKGS := memcached python3-pymemcache python3-pylibmc libmemcached-tools iproute2 libjansson-dev liburing-dev libssl-dev openssl \
             python3-pytest python3-pytest-timeout python3-pytest-xdist postgresql-15 libpq-dev \
             groff-base systemd python3-prometheus-client libsasl2-dev sasl2-bin libsasl2-modules
deps:
	@missing=$$(for p in $(TEST_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common && \
	  sed -i 's/^#*create_main_cluster = true/create_main_cluster = false/' \
	    /etc/postgresql-common/createcluster.conf && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

unit: $(UNIT_BINS) $(FUZZ_BINS)
	@set -e; for t in $(UNIT_BINS); do echo "== $$t"; $$t; done
	@set -e; $(foreach f,$(FUZZ_BINS),echo "== $(f)"; $(f) $(or $(fuzz_iters_$(notdir $(f))),$(FUZZ_ITERS));)

# Under sanitizers the tests' Python loads an instrumented libcellar.so, so
# the ASan runtime is preloaded into Python alone (leak checks off there:
# Python keeps its memory to the end); conftest.py drops the preload from
# the environment of every process the tests start, which run with their
# own sanitizer settings.  The C unit tests check libcellar for leaks.
# --capture=sys leaves the file descriptors alone, so that a sanitizer's
# report from inside libcellar reaches the log even when it ends Python.
ASAN_PY := $(if $(SAN),LD_PRELOAD=$(shell $(CC) -print-file-name=libasan.so) \
             ASAN_OPTIONS=detect_leaks=0 CELLAR_SCRUB_ENV="LD_PRELOAD ASAN_OPTIONS")
PYTEST_SAN := $(if $(SAN),--capture=sys)
# The suites run on one pytest-xdist worker a core: most of a test's time is
# waiting on servers, timeouts and PostgreSQL, and every test takes its own
# ports, directories and namespaces (PYTEST_JOBS=1 for one process; at most
# 4 by default, past which the suite gains little and timing-bound tests
# share the machine with more load).  Not under sanitizers: conftest.py
# drops the ASan preload from the environment at start, so workers started
# after it could not load the instrumented libcellar.so.
PYTEST_JOBS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))
PYTEST_PAR := $(if $(SAN),,-n $(PYTEST_JOBS))
integration: $(B)/cellard $(B)/cellar-router $(B)/cellar-squeal $(B)/cellar-sim $(B)/cellar-ring $(B)/cellar-bench \
             $(B)/libcellar.so examples
	$(ASAN_PY) CELLARD=$(abspath $(B)/cellard) CELLAR_RING=$(abspath $(B)/cellar-ring) \
	  CELLAR_BENCH=$(abspath $(B)/cellar-bench) CELLAR_ROUTER=$(abspath $(B)/cellar-router) \
	  CELLAR_SQUEAL=$(abspath $(B)/cellar-squeal) CELLAR_LIB=$(abspath $(B)/libcellar.so) CELLAR_EXAMPLES=$(abspath $(B)/examples) \
	  /usr/bin/python3 -m pytest $(PYTEST_SAN) $(PYTEST_PAR) tests/integration

# The whole integration suite on the epoll back end (make test runs it on the
# default, io_uring where the kernel allows it): cellard with -o io=epoll and
# every cellar-router with --io=epoll.
.PHONY: io-epoll
io-epoll:
	$(MAKE) integration CELLARD_ARGS="-o io=epoll" CELLAR_ROUTER_ARGS="--io=epoll"

# The client suites again with cellar-router in front of 4 cellard and of 4
# memcached (tests/integration/util.py, CELLAR_ROUTE_SUT): every answer must be
# the one the servers give directly; tests about one server's own stats are
# marked single_server and left out.  Then the text, meta and binary differential
# streams through the router over one cellard against memcached, byte for byte.
ROUTER_SUITES := tests/integration/test_memccapable.py tests/integration/test_pymemcache.py \
                 tests/integration/test_pylibmc.py
integration-router: $(B)/cellard $(B)/cellar-router
	@for be in $(abspath $(B)/cellard) /usr/bin/memcached; do \
	  echo "== through cellar-router, 4 x $$be"; \
	  $(ASAN_PY) CELLARD=$$be CELLAR_ROUTER=$(abspath $(B)/cellar-router) CELLAR_ROUTE_SUT=1 \
	    /usr/bin/python3 -m pytest $(PYTEST_SAN) $(PYTEST_PAR) -m "not single_server and not flush_delay" $(ROUTER_SUITES) || exit 1; \
	done
	@echo "== through cellar-router, 1 x cellard: the text, meta and binary differential streams"
	$(ASAN_PY) CELLARD=$(abspath $(B)/cellard) CELLAR_ROUTER=$(abspath $(B)/cellar-router) \
	  CELLAR_ROUTE_SUT=1 CELLAR_ROUTER_BACKENDS=1 \
	  /usr/bin/python3 -m pytest $(PYTEST_SAN) $(PYTEST_PAR) -m "not single_server and not flush_delay" \
	  tests/integration/test_differential.py tests/integration/test_differential_meta.py \
	  tests/integration/test_differential_binary.py

check: unit integration integration-router check-graph check-layers

# The layers of src/ (tools/check_layers.py): no #include points up a layer.
.PHONY: check-layers
check-layers:
	/usr/bin/python3 tools/check_layers.py src

# The file graphs of storage/, server/ and client/ (tools/check_graph.py): no
# circle of includes or of calls between their files, no file over 1,000 lines.
.PHONY: check-graph
check-graph: $(STORAGE_A) $(SERVER_A) $(CLIENT_A)
	/usr/bin/python3 tools/check_graph.py --build $(B) --max-lines 1000 src/storage src/server src/client

# The segment engine's threaded unit tests under ThreadSanitizer (build-tsan/;
# not part of make test).  -Wno-tsan: the index's unlocked read-ahead orders
# its loads with fences, which ThreadSanitizer does not model; the slots and
# sequences themselves are atomics, so it still sees every access.  (The slab
# engine's table read-ahead still races with plain stores: not listed yet.)
TSAN_TESTS := storage/test_engine_threads_seg storage/test_engine_threads_merge \
              storage/test_engine_threads_s3fifo storage/test_seg_index
.PHONY: tsan
tsan:
	$(MAKE) B=build-tsan OPT="-O1 -g" SAN="-fsanitize=thread -Wno-tsan" \
	  $(addprefix build-tsan/tests/,$(TSAN_TESTS))
	@set -e; for t in $(TSAN_TESTS); do echo "== $$t"; \
	  TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/$$t; done

# The integration suite once per eviction policy (about 3 min each serially,
# less on pytest-xdist; not part of `make test`): every policy must serve memcached's protocols the same.
# POLICIES="lru s3fifo" runs a sample.
POLICIES ?=
policies: $(B)/cellard $(B)/cellar-router $(B)/cellar-squeal $(B)/cellar-sim $(B)/cellar-ring \
          $(B)/cellar-bench $(B)/libcellar.so examples
	@for p in $(or $(POLICIES),$$($(B)/cellar-sim -l)); do \
	  out=$$(CELLARD=$(abspath $(B)/cellard) CELLARD_ARGS="-o evict=$$p" \
	    CELLAR_ROUTER=$(abspath $(B)/cellar-router) CELLAR_SQUEAL=$(abspath $(B)/cellar-squeal) \
	    CELLAR_RING=$(abspath $(B)/cellar-ring) CELLAR_LIB=$(abspath $(B)/libcellar.so) \
	    CELLAR_BENCH=$(abspath $(B)/cellar-bench) CELLAR_EXAMPLES=$(abspath $(B)/examples) \
	    /usr/bin/python3 -m pytest $(PYTEST_PAR) tests/integration 2>&1) || { echo "$$out"; exit 1; }; \
	  echo "-o evict=$$p: $$(echo "$$out" | tail -1)"; done

# The integration suite on the segment back end (-o storage=seg), once with
# FIFO, merging and S3-FIFO (a few minutes each on pytest-xdist; not part of
# `make test`), less the tests of what only the slab
# layout has (doc/storage.md): slab classes and their commands, the page
# mover, the hash table's growth, -M, a memory limit raised at run time,
# the segmented LRU, transient items and `stats sizes`.
SEG_SLAB_ONLY := test_dump.py::test_metadump_class_lists \
  test_dump.py::test_metadump_streams_while_others_are_served \
  test_dump.py::test_dump_client_that_goes_away \
  test_limits.py::test_out_of_memory_with_M test_limits.py::test_cache_memlimit_raises_the_limit \
  test_server_flags.py::test_hash_table_grows_in_the_background \
  test_server_flags.py::test_no_hashexpand_keeps_the_table \
  test_server_flags.py::test_slabs_and_lru_commands_match_memcached \
  test_server_flags.py::test_lru_tune_steers_the_segmented_lru \
  test_stats_counters.py::test_lru_and_buffer_counters_move \
  test_stats_sizes.py::test_stats_sizes_match_memcached \
  test_stats_slabs.py::test_per_class_counters_match_memcached \
  test_slab_mover.py test_lru_temp.py test_memory_limit.py
storage-seg: $(B)/cellard $(B)/cellar-router $(B)/cellar-squeal $(B)/cellar-sim $(B)/cellar-ring \
             $(B)/cellar-bench $(B)/libcellar.so examples
	@for p in fifo merge s3fifo; do \
	  echo "== -o storage=seg,evict=$$p"; \
	  CELLARD=$(abspath $(B)/cellard) CELLARD_ARGS="-o storage=seg,evict=$$p" \
	    CELLAR_RING=$(abspath $(B)/cellar-ring) CELLAR_BENCH=$(abspath $(B)/cellar-bench) \
	    CELLAR_ROUTER=$(abspath $(B)/cellar-router) CELLAR_SQUEAL=$(abspath $(B)/cellar-squeal) \
	    CELLAR_LIB=$(abspath $(B)/libcellar.so) CELLAR_EXAMPLES=$(abspath $(B)/examples) \
	    /usr/bin/python3 -m pytest $(PYTEST_PAR) tests/integration \
	    $(foreach t,$(SEG_SLAB_ONLY),--deselect $(t)) || exit 1; \
	done

# The build in parallel, one job a core (serially it took 4 of make test's 10
# minutes on 2 cores); the tests one after another.
test: deps
	$(MAKE) -j$$(nproc) all
	$(MAKE) check

asan: deps
	$(MAKE) B=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all check

clean:
	rm -rf build build-asan

-include $(shell find $(B) -name '*.d' 2>/dev/null)
