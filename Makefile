# coxswain — GNU Makefile.
#
#   make            build build/bin/coxswain and build/bin/kubesim
#   make run        a local control plane on the embedded test API server
#   make test       every unit, integration and e2e test; one summary line
#   make test SANITIZE=1   the same, built with ASan+UBSan into build/asan
#   make valgrind   the unit tests under valgrind
#   make fuzz       short libFuzzer runs of every fuzz target (clang)
#   make bench      benchmarks; results in bench/results and docs/benchmarks.md
#   make chaos      3 replicas under random faults for CHAOS_SECONDS (600); docs/chaos.md
#   make fmt / lint clang-format / clang-format check + cppcheck
#   make deps       install missing Debian packages (as root)
#   make manifests  regenerate deploy/manifests from the Helm chart
#   make image      the OCI image (deploy/image/build.sh) in build/image; prints its digest
#   make test-image build the image and run its tests (tests/image)
#
# Variables: T=substring (only matching test programs), JOBS=n, V=1 (show
# commands), FUZZ_SECONDS=n; for make image see deploy/image/build.sh.

SHELL := /bin/bash
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SECONDARY:

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build/asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
BUILD ?= build
SANFLAGS :=
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS := libcurl libcjson libevent libevent_pthreads libevent_openssl libprotobuf-c libnghttp2 \
	openssl zlib yaml-0.1 re2
# Recursive (=) so pkg-config runs only when a recipe needs it, after `deps`.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lstdc++ -lpthread -lm

# ---- modules: one folder each, and what each may include -------------------
# A module's sources compile with the include paths of the modules it may
# depend on and nothing else, so (for example) the translator cannot reach a
# daemon header, and election/ sees only the Kubernetes client's interface.
# "gen" is the generated protobuf-c code. The I/O-free cores (common,
# filters, translator, election's core) must not include libevent, curl or
# nghttp2 either: tests/integration/layering checks every object's actual
# header list. Folders not listed here (tests, bench, kubesim) see everything.
CP := controlplane
MODULES := common filters election translator translator/cluster translator/route $(CP)/kube $(CP)/admin $(CP)/xds $(CP)/store \
	$(CP)/leader $(CP)/daemon $(CP)/cli
DEPS_common := common
DEPS_filters := common filters
DEPS_election := common election
DEPS_translator := common filters translator translator/cluster translator/route gen
DEPS_translator/cluster := $(DEPS_translator)
DEPS_translator/route := $(DEPS_translator)
DEPS_$(CP)/kube := common $(CP)/kube
DEPS_$(CP)/admin := common $(CP)/admin
DEPS_$(CP)/xds := common translator $(CP)/admin $(CP)/xds gen
DEPS_$(CP)/store := common filters translator $(CP)/kube $(CP)/store
DEPS_$(CP)/leader := common translator $(CP)/kube $(CP)/store $(CP)/leader
DEPS_$(CP)/daemon := common filters election translator $(CP)/kube $(CP)/admin $(CP)/xds \
	$(CP)/store $(CP)/leader $(CP)/daemon
DEPS_$(CP)/cli := $(DEPS_$(CP)/daemon) $(CP)/cli
ALL_INCLUDES := $(addprefix -I,$(MODULES)) -Itests/lib -I$(BUILD)/gen
# include flags for a source file: its module's list, or everything
mod_of = $(patsubst %/,%,$(dir $(1)))
inc_of = $(if $(DEPS_$(call mod_of,$(1))),$(patsubst -Igen,-I$(BUILD)/gen,$(addprefix -I,$(DEPS_$(call mod_of,$(1))))),$(ALL_INCLUDES))
INCLUDES := $(ALL_INCLUDES)
WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wvla
OPT ?= -O2 -g
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) $(SANFLAGS) -MMD -MP
CFLAGS = $(CFLAGS_BASE) $(WARN) $(call inc_of,$<) $(PKG_CFLAGS) -DCXT_DATA_DIR='"$(CURDIR)/tests/data"'
# C++ only for shims over C++ libraries (translator/xlate_re2.cc over libre2,
# tests/kubesim/ks_re2.cc),
# each exporting extern "C" functions; same include lists as C.
CXXFLAGS_BASE := -std=c++17 -D_GNU_SOURCE $(OPT) $(SANFLAGS) -MMD -MP
CXXFLAGS = $(CXXFLAGS_BASE) -Wall -Wextra -Werror -Wshadow -Wformat=2 $(call inc_of,$<) $(PKG_CFLAGS)
LDFLAGS += $(SANFLAGS)

# ---- sources ---------------------------------------------------------------
MAIN_SRC := $(CP)/cli/main.c
LIB_SRC := $(filter-out $(MAIN_SRC),$(wildcard $(addsuffix /*.c,$(MODULES))))
LIB_CXX_SRC := $(wildcard $(addsuffix /*.cc,$(MODULES)))
KUBESIM_SRC := $(wildcard tests/kubesim/*.c)
KUBESIM_CXX_SRC := $(wildcard tests/kubesim/*.cc)
TESTLIB_SRC := $(wildcard tests/lib/*.c)
UNIT_SRC := $(shell find tests/unit -name 'test_*.c' | sort)
ITEST_SRC := $(wildcard tests/integration/*/test_*.c tests/e2e/*/test_*.c tests/hostile/test_*.c)
BENCH_SRC := $(wildcard bench/bench_*.c)
BENCHLIB_SRC := $(filter-out $(BENCH_SRC),$(wildcard bench/*.c))
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
# the fuzz targets built with a plain main that replays their corpora
FUZZ_REPLAY_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz-replay/%,$(FUZZ_SRC))

PROTO_DIR := api/proto
PROTOS := $(patsubst $(PROTO_DIR)/%,%,$(shell find $(PROTO_DIR) -name '*.proto' | sort))
WKT := google/protobuf/any.proto google/protobuf/duration.proto google/protobuf/struct.proto \
	google/protobuf/wrappers.proto google/protobuf/timestamp.proto
GEN_SRC := $(addprefix $(BUILD)/gen/,$(PROTOS:.proto=.pb-c.c) $(WKT:.proto=.pb-c.c))
GEN_STAMP := $(BUILD)/gen/.stamp

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJ := $(call obj,$(LIB_SRC)) $(patsubst %.cc,$(BUILD)/obj/%.cc.o,$(LIB_CXX_SRC)) $(patsubst $(BUILD)/gen/%.c,$(BUILD)/obj/gen/%.o,$(GEN_SRC))
LIB := $(BUILD)/lib/libcoxswain.a
TESTLIB_OBJ := $(call obj,$(TESTLIB_SRC))
TESTLIB := $(BUILD)/lib/libcxtest.a

COXSWAIN := $(BUILD)/bin/coxswain
KUBESIM := $(if $(KUBESIM_SRC),$(BUILD)/bin/kubesim)
UNIT_BIN := $(patsubst %.c,$(BUILD)/%,$(UNIT_SRC))
ITEST_BIN := $(patsubst %.c,$(BUILD)/%,$(ITEST_SRC))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bin/%,$(BENCH_SRC))
BINARIES := $(COXSWAIN) $(KUBESIM)

.PHONY: all deps deps-image binaries tests test run valgrind fuzz fuzz-build bench soak chaos fmt lint clean help \
	manifests image test-image print-cflags

# ---- entry points: each makes sure the Debian packages are there first ------
all: deps
	$(Q)$(MAKE) --no-print-directory binaries

deps:
	$(Q)mk/deps.sh

# deps plus the image tools (mmdebstrap, umoci, skopeo), which only make
# image needs
deps-image:
	$(Q)mk/deps.sh image

# make test and make valgrind build on every core unless given -jN (CI runs
# a plain `make test` on a fresh clone, which built one file at a time)
BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))

test: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD_JOBS) binaries tests
	$(Q)BUILD=$(BUILD) COXSWAIN_SANITIZE=$(SANITIZE) tests/run.sh

valgrind: deps
	$(Q)$(MAKE) --no-print-directory $(BUILD_JOBS) binaries tests
	$(Q)BUILD=$(BUILD) COXSWAIN_SANITIZE=valgrind VALGRIND=1 T=$(or $(T),/tests/unit/) tests/run.sh

run: deps
	$(Q)$(MAKE) --no-print-directory binaries
	$(Q)BUILD=$(BUILD) mk/run.sh

bench: deps
	$(Q)$(MAKE) --no-print-directory binaries $(BENCH_BIN)
	$(Q)BUILD=$(BUILD) bench/run.sh

# A 10-minute quiet soak of the informers against kubesim emulating 1.28
# over HTTP/2 (SOAK_SECONDS to change it); not part of make test.
soak: deps
	$(Q)$(MAKE) --no-print-directory binaries
	$(Q)BUILD=$(BUILD) COXSWAIN_BUILD=$(abspath $(BUILD)) /usr/bin/python3 bench/soak_informers.py

chaos: deps
	$(Q)$(MAKE) --no-print-directory binaries
	$(Q)BUILD=$(BUILD) tests/chaos/run.sh

binaries: $(BINARIES)
tests: $(UNIT_BIN) $(ITEST_BIN) $(BENCH_BIN) $(FUZZ_REPLAY_BIN)

# deploy/manifests from the Helm chart (deploy/gen-manifests.sh --check in tests)
manifests: deps
	$(Q)deploy/gen-manifests.sh

# ---- the container image ----------------------------------------------------
# The image's binary is built apart (build/image), never with sanitizers,
# and with source paths mapped away so that its bytes do not depend on
# where the checkout lives.
IMAGE_BUILD := build/image
image: deps-image
	$(Q)$(MAKE) --no-print-directory BUILD=$(IMAGE_BUILD) SANITIZE=0 \
		OPT="-O2 -g -ffile-prefix-map=$(CURDIR)/=" $(IMAGE_BUILD)/bin/coxswain
	$(Q)deploy/image/build.sh --binary $(IMAGE_BUILD)/bin/coxswain --out $(IMAGE_BUILD)

test-image: image deps
	$(Q)$(MAKE) --no-print-directory binaries
	$(Q)BUILD=$(BUILD) COXSWAIN_IMAGE=$(CURDIR)/$(IMAGE_BUILD) TEST_SUITES=image T=/tests/image/ \
		tests/run.sh

# ---- code generation ------------------------------------------------------
$(GEN_STAMP): $(addprefix $(PROTO_DIR)/,$(PROTOS))
	@mkdir -p $(BUILD)/gen
	@echo "  PROTOC-C $(PROTO_DIR)"
	$(Q)protoc-c --c_out=$(BUILD)/gen -I$(PROTO_DIR) -I/usr/include $(PROTOS) $(WKT)
	$(Q)touch $@

# The headers too: objects depend on them through their .d files, and make
# must know a .proto change remakes them, or it compares the old mtimes and
# keeps stale objects until the next run.
$(GEN_SRC) $(GEN_SRC:.c=.h): $(GEN_STAMP)
	@true

# ---- compilation ----------------------------------------------------------
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c $(GEN_STAMP)
	@mkdir -p $(@D)
	@echo "  CC       $<"
	$(Q)$(CC) $(CFLAGS_BASE) -w -I$(BUILD)/gen $(PKG_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(GEN_STAMP)
	@mkdir -p $(@D)
	@echo "  CC       $<"
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.cc.o: %.cc | $(GEN_STAMP)
	@mkdir -p $(@D)
	@echo "  CXX      $<"
	$(Q)$(CXX) $(CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	@echo "  AR       $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(TESTLIB): $(TESTLIB_OBJ)
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(COXSWAIN): $(call obj,$(MAIN_SRC)) $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/bin/kubesim: $(call obj,$(KUBESIM_SRC)) $(patsubst %.cc,$(BUILD)/obj/%.cc.o,$(KUBESIM_CXX_SRC)) $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB) $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/bin/bench_%: $(BUILD)/obj/bench/bench_%.o $(call obj,$(BENCHLIB_SRC)) $(TESTLIB) $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# ---- fuzzing (clang + libFuzzer, separate build dir) ------------------------
FUZZ_SECONDS ?= 20
FUZZ_BUILD := build/fuzz
fuzz: deps
	$(Q)$(MAKE) --no-print-directory fuzz-build BUILD=$(FUZZ_BUILD) CC=clang CXX=clang++ \
		SANFLAGS="-fsanitize=address,undefined,fuzzer-no-link" OPT="-O1 -g"
	$(Q)FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

# C++ links: the shims over libre2 need UBSan's C++ runtime
fuzz-build: $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/%.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CXX) -fsanitize=address,undefined,fuzzer -o $@ $(filter-out $(LIB),$^) $(LIB) $(PKG_LIBS)

# targets that link kubesim's objects (all but its main) instead of
# including its sources
KUBESIM_NOMAIN_OBJ = $(call obj,$(filter-out tests/kubesim/ks_main.c,$(KUBESIM_SRC))) \
	$(patsubst %.cc,$(BUILD)/obj/%.cc.o,$(KUBESIM_CXX_SRC))
$(BUILD)/fuzz/fuzz_kubesim_schema $(BUILD)/fuzz-replay/fuzz_kubesim_schema: $(KUBESIM_NOMAIN_OBJ)

$(BUILD)/fuzz-replay/%: $(BUILD)/obj/tests/fuzz/%.o $(BUILD)/obj/tests/fuzz/replay_main.o $(LIB)
	@mkdir -p $(@D)
	@echo "  LD       $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter-out $(LIB),$^) $(LIB) $(PKG_LIBS)

# ---- style ----------------------------------------------------------------
FMT_SRC = $(shell find $(MODULES) tests bench \( -name '*.[ch]' -o -name '*.cc' \) -not -path '*/node_modules/*' 2>/dev/null)
fmt:
	$(Q)clang-format -i $(FMT_SRC)

# cppcheck reads no system header, so kubesim's <sys/queue.h> lists
# (LIST_HEAD(, ...) in a struct) were syntax errors to it: that one header
# is read, for every file.
QUEUE_H := $(firstword $(wildcard /usr/include/*/sys/queue.h /usr/include/sys/queue.h))
lint: deps
	$(Q)clang-format --dry-run -Werror $(FMT_SRC)
	$(Q)cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
		--inline-suppr --suppress=missingIncludeSystem --suppress=preprocessorErrorDirective --suppress=varFuncNullUB $(INCLUDES) -D__GNUC__ \
		$(if $(QUEUE_H),--include=$(QUEUE_H)) \
		$(LIB_SRC) $(MAIN_SRC) $(KUBESIM_SRC)

clean:
	rm -rf build

# the include flags a source file compiles with (tests/integration/layering)
print-cflags:
	@echo $(if $(filter %.cc,$(F)),$(CXXFLAGS_BASE),$(CFLAGS_BASE)) $(call inc_of,$(F)) $(PKG_CFLAGS)

help:
	@sed -n '2,18p' Makefile | sed 's/^# \{0,1\}//'

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
