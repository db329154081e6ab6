# SPDX-License-Identifier: GPL-2.0-only
# pcmon — eBPF PC-sampling profiler.  `make deps all check`, in one run or three.

OUTPUT	:= .output
BIN	:= bin
PREFIX	?= /usr/local
DESTDIR	?=

CC	?= gcc
CXX	?= g++
CLANG	?= clang
# Debian's rustc (a rustup toolchain in ~/.cargo would be found first on PATH)
RUSTC	?= /usr/bin/rustc
PKG_CONFIG ?= pkg-config

UNAME_M	:= $(shell uname -m)
ARCH	:= $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(UNAME_M)))
VMLINUX	:= vmlinux/$(ARCH)/vmlinux.h
ifeq ($(wildcard $(VMLINUX)),)
$(error unsupported architecture '$(UNAME_M)': no $(VMLINUX); generate one with vmlinux/gen.sh)
endif

# What `make deps` installs is asked about only when a recipe first needs it — in `make
# deps all`, after deps has run, not when this file is read — and only once: each variable
# replaces itself with the answer ($(call memo,VAR,shell command)). A failed pkg-config stops
# the build with what to do, rather than with a missing header. (.SHELLSTATUS is not set by
# a $(shell) inside $(eval): the failure is told by a word in the answer.)
memo = $(eval $1 := $$(shell $2))$($1)
PKGS	:= libbpf libdw libelf libcjson
# pcmond alone reads a configuration file (daemon/service/conf.c): with inih, Debian's libinih;
# and serves HTTP (daemon/fleet/http.c), with libmicrohttpd, encodes OTLP profiles
# (daemon/fleet/otlp.c), with protobuf-c, and pushes them (daemon/fleet/push.c), with libcurl
DAEMON_PKGS := inih libmicrohttpd libprotobuf-c libcurl
pkg = $(if $(filter pkg-config-failed,$(call memo,$1,$(PKG_CONFIG) $2 $3 || echo pkg-config-failed)),$(error \
	'$(PKG_CONFIG) $2 $3' failed: install the build dependencies ('sudo make deps' on Debian 12)),$($1))
PKG_CFLAGS = $(call pkg,PKG_CFLAGS,--cflags,$(PKGS) $(DAEMON_PKGS))
PKG_LIBS   = $(call pkg,PKG_LIBS,--libs,$(PKGS))
DAEMON_PKG_LIBS = $(call pkg,DAEMON_PKG_LIBS,--libs,$(DAEMON_PKGS))
BPFTOOL	?= $(call memo,BPFTOOL,command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)

CFLAGS	?= -O2 -g
WARN	:= -Wall -Wextra -Werror
# the daemon's layers, bottom up (HACKING.md): the base every layer uses, symbols and
# unwinding, the pattern language, the views over results, the instruments, the engine,
# the service (pcmond's socket server and configuration file; its main, pcmond.c, apart)
DAEMON_DIRS := daemon/core daemon/symbols daemon/pattern daemon/views daemon/instruments \
	daemon/engine daemon/service
DAEMON_INC  := $(addprefix -I,$(DAEMON_DIRS))
# pcmond's own part, which the CLI's engine library leaves out: OTLP (docs/exports.md), its
# C code generated from daemon/fleet/*.proto by protoc-c into $(OUTPUT)/fleet
FLEET_DIR   := daemon/fleet
FLEET_GEN   := $(OUTPUT)/fleet
FLEET_PROTOS := $(wildcard $(FLEET_DIR)/*.proto)
FLEET_PB_SRCS := $(patsubst $(FLEET_DIR)/%.proto,$(FLEET_GEN)/%.pb-c.c,$(FLEET_PROTOS))
FLEET_PB_HDRS := $(FLEET_PB_SRCS:.c=.h)
FLEET_SRCS  := $(wildcard $(FLEET_DIR)/*.c)
# the page pcmond serves, built in (daemon/fleet/web/embed.sh)
FLEET_WEB   := $(sort $(wildcard $(addprefix $(FLEET_DIR)/web/*.,html js css svg)))
FLEET_NAMES := $(notdir $(FLEET_SRCS:.c=.o) $(FLEET_PB_SRCS:.c=.o)) web_assets.o
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -Iinclude $(DAEMON_INC) -I$(FLEET_DIR) \
	-I$(FLEET_GEN) -I$(OUTPUT) $(PKG_CFLAGS) -MMD -MP
LIBS	= $(PKG_LIBS) -liberty -lz -lpthread -lm
# pcmond, and the tests that link its engine library whole
DAEMON_LIBS = $(LIBS) $(DAEMON_PKG_LIBS)
# The CLI proper links only what formatting and the socket need: every library mapped at
# start-up makes a command wait longer on a loaded machine (see cli/engine_load.c). The
# engine is a private library it opens when it runs one, ncurses is opened by top.
CLI_LIBS = $(call memo,CJSON_LIBS,$(PKG_CONFIG) --libs libcjson) -lz -lm
SAN	:= -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS	 := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

ENGINE_SRCS := $(filter-out daemon/service/pcmond.c,$(wildcard $(addsuffix /*.c,$(DAEMON_DIRS))))
ENGINE_HDRS := $(wildcard $(addsuffix /*.h,$(DAEMON_DIRS)))
ENGINE_OBJS := $(patsubst %.c,$(OUTPUT)/pic/%.o,$(notdir $(ENGINE_SRCS))) \
	$(addprefix $(OUTPUT)/pic/,$(FLEET_NAMES))
# what pcmond has and an engine the CLI runs has not: the socket server, the configuration
# file, the HTTP server and what it serves (OTLP)
DAEMON_ONLY_OBJS := $(OUTPUT)/pic/srv.o $(OUTPUT)/pic/conf.o $(addprefix $(OUTPUT)/pic/,$(FLEET_NAMES))
ASAN_OBJS   := $(patsubst %.c,$(OUTPUT)/asan/%.o,$(notdir $(ENGINE_SRCS))) \
	$(addprefix $(OUTPUT)/asan/,$(FLEET_NAMES))
vpath %.c $(DAEMON_DIRS) $(FLEET_DIR)
CLI_SRCS    := $(wildcard cli/*.c)
CLI_OBJS    := $(patsubst cli/%.c,$(OUTPUT)/cli/%.o,$(CLI_SRCS))
# what the CLI shares with the engine: the protocol, the helpers, the exports' encoders
# (pcmond serves them too) and diff's statistics and document
CLI_ENGINE_OBJS := $(addprefix $(OUTPUT)/pic/,proto.o util.o export.o pprof.o flame.o diffstat.o diffdoc.o)

UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
UNIT_BINS   := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
WORK_SRCS   := $(wildcard tests/workloads/*.c)
WORK_BINS   := $(patsubst tests/workloads/%.c,$(OUTPUT)/workloads/%,$(WORK_SRCS))
# the bash completion, written by pcmon from the option tables it parses with (cli/help.c)
COMPLETION  := $(OUTPUT)/pcmon.bash-completion

DEPS_APT := make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev \
	libcjson-dev libcmocka-dev libiberty-dev systemtap-sdt-dev pkg-config linux-perf bpftrace \
	libclang-rt-14-dev binutils python3 util-linux \
	libdebuginfod-dev debuginfod dwz xz-utils nodejs libbpf-tools \
	libncurses-dev golang-go chromium tmux libcapstone-dev libinih-dev libmicrohttpd-dev \
	libcurl4-openssl-dev \
	protobuf-c-compiler libprotobuf-c-dev protobuf-compiler prometheus \
	g++ rustc dpkg-dev debhelper lintian fakeroot adduser python3.11 python3.11-dev

# The shell command `make deps` runs (tests/integration/test_build.py puts a stand-in).
DEPS_INSTALL = if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root (apt-get install)"; exit 1; fi; \
	missing=$$(for p in $(DEPS_APT); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "all build and test dependencies are installed"; fi; \
	if command -v npm >/dev/null; then npm ci --prefix tests/web --no-audit --no-fund \
		--ignore-scripts --loglevel=error; else echo "no npm: test_web's browser test is skipped"; fi

.SECONDARY:
.PHONY: soak all deps check unit fuzz integration demo bench bench-full install clean format deb
all: $(BIN)/pcmon $(BIN)/pcmond $(BIN)/pcmon-engine.so $(COMPLETION)

deps:
	@$(DEPS_INSTALL)

DIRS := $(OUTPUT) $(OUTPUT)/pic $(OUTPUT)/asan $(OUTPUT)/cli $(OUTPUT)/tests $(OUTPUT)/fuzz \
	$(OUTPUT)/workloads $(FLEET_GEN) $(OUTPUT)/tools $(BIN)
$(DIRS):
	@mkdir -p $@
# `make deps demo` (the README's first command) in one run, on a machine without the
# dependencies: everything that builds makes its output directory first, so nothing starts
# before deps is done, under -j too.
ifneq ($(filter deps,$(MAKECMDGOALS)),)
$(DIRS): | deps
endif

# --- BPF: .bpf.c -> .bpf.o -> .skel.h
$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h include/pcmon_*.h) $(VMLINUX) | $(OUTPUT)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
		-Ivmlinux/$(ARCH) -Iinclude -idirafter /usr/include/$(UNAME_M)-linux-gnu -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# --- engine library: linked into pcmond, and the CLI's pcmon-engine.so, which exports
# engine.h's functions and nothing else (position-independent for it: in a directory of
# its own, so that a tree built before never links objects that are not)
# (the generated headers first, for otlp.c and the tests; -MMD tracks them from then on)
$(OUTPUT)/pic/%.o: %.c $(SKELS) | $(OUTPUT)/pic $(FLEET_PB_HDRS)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(OUTPUT)/asan/%.o: %.c $(SKELS) | $(OUTPUT)/asan $(FLEET_PB_HDRS)
	$(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@

# --- OTLP: protoc-c writes a .pb-c.c and its .pb-c.h at once (a grouped pattern rule)
$(FLEET_GEN)/%.pb-c.c $(FLEET_GEN)/%.pb-c.h: $(FLEET_DIR)/%.proto | $(FLEET_GEN)
	protoc-c --proto_path=$(FLEET_DIR) --c_out=$(FLEET_GEN) $<
# (what a file generates depends on the files it imports too: a handful, all of them)
$(FLEET_PB_SRCS) $(FLEET_PB_HDRS): $(FLEET_PROTOS)
$(OUTPUT)/pic/%.pb-c.o: $(FLEET_GEN)/%.pb-c.c | $(OUTPUT)/pic $(FLEET_PB_HDRS)
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(OUTPUT)/asan/%.pb-c.o: $(FLEET_GEN)/%.pb-c.c | $(OUTPUT)/asan $(FLEET_PB_HDRS)
	$(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@
$(FLEET_GEN)/web_assets.c: $(FLEET_WEB) $(FLEET_DIR)/web/embed.sh | $(FLEET_GEN)
	sh $(FLEET_DIR)/web/embed.sh $(FLEET_WEB) > $@.tmp && mv $@.tmp $@
$(OUTPUT)/pic/web_assets.o: $(FLEET_GEN)/web_assets.c | $(OUTPUT)/pic
	$(CC) $(ALL_CFLAGS) -fPIC -c $< -o $@
$(OUTPUT)/asan/web_assets.o: $(FLEET_GEN)/web_assets.c | $(OUTPUT)/asan
	$(CC) $(ALL_CFLAGS) $(SAN) -c $< -o $@
$(OUTPUT)/libpcmon.a: $(ENGINE_OBJS)
	$(AR) rcs $@ $^
$(OUTPUT)/libpcmon-asan.a: $(ASAN_OBJS)
	$(AR) rcs $@ $^

$(OUTPUT)/pcmond.o: daemon/service/pcmond.c $(SKELS) | $(OUTPUT)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(OUTPUT)/cli/%.o: cli/%.c | $(OUTPUT)/cli
	$(CC) $(ALL_CFLAGS) -Icli -c $< -o $@

$(BIN)/pcmond: $(OUTPUT)/pcmond.o $(OUTPUT)/libpcmon.a | $(BIN)
	$(CC) $(CFLAGS) $^ $(DAEMON_LIBS) -o $@
$(BIN)/pcmon: $(CLI_OBJS) $(CLI_ENGINE_OBJS) | $(BIN)
	$(CC) $(CFLAGS) $^ $(CLI_LIBS) -o $@
$(BIN)/pcmon-engine.so: $(ENGINE_OBJS) daemon/engine.map | $(BIN)
	$(CC) $(CFLAGS) -shared -Wl,-z,defs -Wl,-Bsymbolic -Wl,--version-script=daemon/engine.map \
		$(filter-out $(DAEMON_ONLY_OBJS),$(ENGINE_OBJS)) $(LIBS) -o $@
# (the engine says which values an enumeration takes: --unwind's)
$(COMPLETION): $(BIN)/pcmon $(BIN)/pcmon-engine.so | $(OUTPUT)
	$(BIN)/pcmon --completion bash > $@.tmp && mv $@.tmp $@

# --- tests
$(OUTPUT)/tests/%: tests/unit/%.c $(OUTPUT)/libpcmon-asan.a | $(OUTPUT)/tests
	$(CC) $(ALL_CFLAGS) $(SAN) $< $(OUTPUT)/libpcmon-asan.a $(DAEMON_LIBS) -lcmocka -o $@
# each fuzz target names the daemon sources (and libraries) it is built with
FUZZ_fuzz_pat_SRCS   := $(wildcard daemon/pattern/pat*.c) daemon/symbols/demangle.c
FUZZ_fuzz_pat_LIBS   := -liberty
FUZZ_fuzz_http_SRCS  := daemon/fleet/http_route.c daemon/core/util.c
FUZZ_fuzz_http_LIBS  :=
FUZZ_fuzz_proto_SRCS := daemon/core/proto.c daemon/core/util.c
FUZZ_fuzz_proto_LIBS := $(shell $(PKG_CONFIG) --libs libcjson 2>/dev/null)
# (pcmond.conf is checked against every instrument's start fields: the whole engine too)
FUZZ_fuzz_conf_SRCS := $(ENGINE_SRCS)
FUZZ_fuzz_conf_LIBS = $(DAEMON_LIBS)
# (a results file holds every instrument's section: the store is built with the whole engine)
FUZZ_fuzz_store_SRCS := $(filter-out daemon/service/conf.c,$(ENGINE_SRCS))
FUZZ_fuzz_store_LIBS = $(LIBS)
$(OUTPUT)/fuzz/%: tests/fuzz/%.c $(ENGINE_SRCS) $(ENGINE_HDRS) $(FLEET_SRCS) $(SKELS) | $(OUTPUT)/fuzz
	$(CLANG) -std=gnu11 -D_GNU_SOURCE -g -O1 -Iinclude $(DAEMON_INC) -I$(FLEET_DIR) -I$(OUTPUT) $(PKG_CFLAGS) \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $< $(FUZZ_$*_SRCS) $(FUZZ_$*_LIBS) -o $@
$(OUTPUT)/workloads/%: tests/workloads/%.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-Iinclude $< -lpthread -lm -ldl -o $@

# a library for the dlopen tests, next to the workloads
$(OUTPUT)/workloads/libcritlib.so: tests/workloads/lib/critlib.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fPIC -shared -fno-omit-frame-pointer \
		-mno-omit-leaf-frame-pointer -Iinclude $< -o $@

# workloads built the way real programs are: no frame pointers, leaf frames omitted,
# debug info split off (by build-id, and by .gnu_debuglink next to the binary)
BUILT_APART := $(OUTPUT)/workloads/qsort_nofp $(OUTPUT)/workloads/leaf_fp $(OUTPUT)/workloads/inlined \
	$(OUTPUT)/workloads/inlined_stripped $(OUTPUT)/workloads/inline_chain \
	$(OUTPUT)/workloads/lines_nodebug $(OUTPUT)/workloads/manystacks \
	$(OUTPUT)/workloads/bigframe_nofp $(OUTPUT)/workloads/cxxnames $(OUTPUT)/workloads/cxxnames_nofp \
	$(OUTPUT)/workloads/cxxallocs \
	$(OUTPUT)/workloads/rustnames $(OUTPUT)/workloads/rustnames_v0 \
	$(OUTPUT)/workloads/fakepy $(OUTPUT)/workloads/fakepy_published \
	$(OUTPUT)/workloads/fakejvm/fakejvm \
	$(OUTPUT)/workloads/whenleaf_nofp $(OUTPUT)/workloads/threefn_nobid
# the benchmark's workload of ever-new stacks, for the keep-up tests
$(OUTPUT)/workloads/manystacks: bench/manystacks.c bench/bench.h tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		$< -lpthread -o $@
$(OUTPUT)/workloads/qsort_nofp: tests/workloads/special/qsort_nofp.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fomit-frame-pointer $< -o $@
$(OUTPUT)/workloads/leaf_fp: tests/workloads/special/leaf_fp.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer $< -o $@
$(OUTPUT)/workloads/inlined: tests/workloads/special/inlined.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g $< -o $@
$(OUTPUT)/workloads/inline_chain: tests/workloads/special/inline_chain.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g $< -o $@
# a CPython pcmon has no table for, publishing its offsets or not (test_python.py)
$(OUTPUT)/workloads/fakepy: tests/workloads/special/fakepy.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer $< -o $@
$(OUTPUT)/workloads/fakepy_published: tests/workloads/special/fakepy.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -DPUBLISH $< -o $@
# a HotSpot JVM pcmon cannot read: a libjvm.so whose tables lack the code cache (test_java.py)
$(OUTPUT)/workloads/fakejvm/libjvm.so: tests/workloads/special/fakejvm.c | $(OUTPUT)/workloads
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -shared -fPIC $< -o $@
$(OUTPUT)/workloads/fakejvm/fakejvm: tests/workloads/special/fakejvm.c tests/workloads/workload.h $(OUTPUT)/workloads/fakejvm/libjvm.so
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -DMAIN $< \
		-L$(dir $@) -ljvm -Wl,-rpath,'$$ORIGIN' -o $@
$(OUTPUT)/workloads/bigframe_nofp: tests/workloads/bigframe.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fomit-frame-pointer $< -o $@
# WHEN at probes: the stack walk cut short
$(OUTPUT)/workloads/whenleaf_nofp: tests/workloads/whenleaf.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fomit-frame-pointer $< -o $@
# C++ and Rust names (the Rust program in both of its manglings: legacy, the default, and v0)
$(OUTPUT)/workloads/cxxnames: tests/workloads/cxx/names.cc | $(OUTPUT)/workloads
	$(CXX) $(WARN) -O2 -g -fno-omit-frame-pointer $< -o $@
$(OUTPUT)/workloads/cxxallocs: tests/workloads/cxx/allocs.cc | $(OUTPUT)/workloads
	$(CXX) $(WARN) -O2 -g -fno-omit-frame-pointer $< -o $@
$(OUTPUT)/workloads/cxxnames_nofp: tests/workloads/cxx/names.cc | $(OUTPUT)/workloads
	$(CXX) $(WARN) -O2 -g -fomit-frame-pointer $< -o $@
$(OUTPUT)/workloads/rustnames: tests/workloads/rust/names.rs | $(OUTPUT)/workloads
	$(RUSTC) -O -g -C force-frame-pointers=yes $< -o $@
$(OUTPUT)/workloads/rustnames_v0: tests/workloads/rust/names.rs | $(OUTPUT)/workloads
	$(RUSTC) -O -g -C force-frame-pointers=yes -C symbol-mangling-version=v0 $< -o $@
# a program without a build-id (test_sanitizers.py: nothing to compare when opened again)
$(OUTPUT)/workloads/threefn_nobid: tests/workloads/threefn.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 -g -fno-omit-frame-pointer -Wl,--build-id=none $< -o $@
# symbols, but no DWARF: no line tables
$(OUTPUT)/workloads/lines_nodebug: tests/workloads/lines.c tests/workloads/workload.h | $(OUTPUT)/workloads
	$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) -O2 $< -o $@
$(OUTPUT)/workloads/inlined_stripped: $(OUTPUT)/workloads/inlined
	cp $< $@
	objcopy --only-keep-debug $@ $@.debug
	objcopy --strip-all --add-gnu-debuglink=$@.debug $@

# the CLI under ASan/UBSan, for the sanitizer integration test: its engine linked in
$(OUTPUT)/pcmon-asan: $(CLI_SRCS) $(OUTPUT)/libpcmon-asan.a
	$(CC) $(ALL_CFLAGS) $(SAN) -Icli $(filter-out cli/engine_load.c,$(CLI_SRCS)) \
		$(OUTPUT)/libpcmon-asan.a $(LIBS) $(CLI_LIBS) -o $@

# the OTLP encoder on a `pcmon export --format json` file, for tests/integration/test_otlp.py
OTLP_ENCODE := $(OUTPUT)/tools/otlp_encode
$(OTLP_ENCODE): tests/tools/otlp_encode.c $(OUTPUT)/libpcmon.a | $(OUTPUT)/tools
	$(CC) $(ALL_CFLAGS) $< $(OUTPUT)/libpcmon.a $(DAEMON_LIBS) -o $@

$(OUTPUT)/pcmond-asan: daemon/service/pcmond.c $(OUTPUT)/libpcmon-asan.a
	$(CC) $(ALL_CFLAGS) $(SAN) $< $(OUTPUT)/libpcmon-asan.a $(DAEMON_LIBS) -o $@

# The CPython offsets (docs/python.md) against each version's own headers present: the
# system's python3.11-dev and pyenv's builds of 3.8 to 3.13 (a version absent is skipped,
# and said); compiling is the check
PY311_INC ?= /usr/include/python3.11
PYENV_ROOT ?= $(HOME)/.pyenv
PY_VERSIONS := 8 9 10 11 12 13
PY_INCS := $(wildcard $(PY311_INC)) $(foreach v,$(PY_VERSIONS),$(lastword $(sort \
	$(wildcard $(PYENV_ROOT)/versions/3.$(v).*/include/python3.$(v)))))
PY_ABSENT := $(strip $(foreach v,$(PY_VERSIONS),$(if $(filter %/python3.$(v),$(PY_INCS)),,3.$(v))))
$(OUTPUT)/tests/pyoffsets_check.o: tests/unit/pyoffsets_check.c daemon/symbols/python_layouts.h \
		daemon/symbols/python_fields.h | $(OUTPUT)/tests
	@$(if $(PY_ABSENT),echo "  pyoffsets: no headers of CPython $(PY_ABSENT) here: not checked";) true
	@for inc in $(PY_INCS); do \
		echo "  pyoffsets $$inc"; \
		$(CC) -std=gnu11 $(WARN) -Wno-unused-parameter -Idaemon/symbols -I$$inc -c $< -o $@ || exit 1; \
	done

# the unit tests, built and run: no root, no BPF (tests/unit/test_engine.c fakes the sampler)
unit: $(UNIT_BINS) $(OUTPUT)/tests/pyoffsets_check.o
	@tests/run.sh --unit
fuzz: $(FUZZ_BINS)
# the Java workloads (test_java.py), with the JDK's javac if there is one
JAVA_SRCS := $(wildcard tests/workloads/java/*.java)
JAVA_WORK := $(OUTPUT)/workloads/java/.built
$(JAVA_WORK): $(JAVA_SRCS) | $(OUTPUT)/workloads
	@if command -v javac >/dev/null; then \
		mkdir -p $(OUTPUT)/workloads/java && \
		javac -g -d $(OUTPUT)/workloads/java $(JAVA_SRCS) && touch $@; \
	else echo "javac not found: the Java workloads are not built (test_java.py skips)"; fi
workloads: $(WORK_BINS) $(OUTPUT)/workloads/libcritlib.so $(BUILT_APART) $(JAVA_WORK)

check: all $(UNIT_BINS) fuzz workloads $(OUTPUT)/pcmon-asan $(OUTPUT)/pcmond-asan $(OTLP_ENCODE)
	@tests/run.sh

demo: all workloads
	@tests/demo.sh

# the benchmark (bench/README.md), as root: `make bench`, its default form, at most 10
# minutes on a 2-CPU machine; `make bench-full`, every section (the slow peer, deep stacks,
# serving, churn, Python; BENCH_BASELINE), about 18. Each keeps the other's figures it does
# not measure, dated; either exits non-zero when a cell of its table FAILED.
bench: all workloads
	@bench/run.sh
bench-full: all workloads
	@BENCH_FORM=full bench/run.sh

# pcmond --all on a compile loop for 10 minutes (SOAK_S): its CPU and memory over time
soak: all
	@/usr/bin/python3 bench/soak.py

# (pcmond reads /etc/pcmon/pcmond.conf whatever the prefix; a file already there is kept)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/lib/pcmon \
		$(DESTDIR)$(PREFIX)/include/pcmon \
		$(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)/lib/systemd/system $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BIN)/pcmon $(DESTDIR)$(PREFIX)/bin/pcmon
	install -m 0644 $(BIN)/pcmon-engine.so $(DESTDIR)$(PREFIX)/lib/pcmon/pcmon-engine.so
	install -m 0755 $(BIN)/pcmond $(DESTDIR)$(PREFIX)/sbin/pcmond
	[ ! -f include/pcmon/critical.h ] || install -m 0644 include/pcmon/critical.h $(DESTDIR)$(PREFIX)/include/pcmon/critical.h
	install -m 0644 packaging/pcmon.1 $(DESTDIR)$(PREFIX)/share/man/man1/pcmon.1
	install -m 0644 packaging/pcmond.8 $(DESTDIR)$(PREFIX)/share/man/man8/pcmond.8
	sed 's|@SBINDIR@|$(PREFIX)/sbin|' packaging/pcmond.service > $(DESTDIR)/lib/systemd/system/pcmond.service
	install -m 0644 packaging/pcmond.socket $(DESTDIR)/lib/systemd/system/pcmond.socket
	install -m 0644 $(COMPLETION) $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pcmon
	install -d $(DESTDIR)/etc/pcmon
	[ -e $(DESTDIR)/etc/pcmon/pcmond.conf ] || \
		install -m 0644 packaging/pcmond.conf $(DESTDIR)/etc/pcmon/pcmond.conf

# A Debian package, built by dpkg-buildpackage in a copy of the tree (its clean step must
# not touch this one): ./pcmon_VERSION_amd64.deb and ./pcmon-dev_VERSION_all.deb.
deb:
	rm -rf $(OUTPUT)/deb && mkdir -p $(OUTPUT)/deb/src
	tar -c --exclude=./.output --exclude=./bin --exclude=./.git --exclude='./*.deb' . | \
		tar -x -C $(OUTPUT)/deb/src
	cd $(OUTPUT)/deb/src && dpkg-buildpackage -us -uc -b
	cp $(OUTPUT)/deb/*.deb .

format:
	clang-format -i $(wildcard daemon/*.c $(addsuffix /*.[ch],$(DAEMON_DIRS) $(FLEET_DIR)) cli/*.[ch] include/*.h bpf/*.c tests/unit/*.c tests/workloads/*.[ch])

clean:
	rm -rf $(OUTPUT) $(BIN)

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*.d)
