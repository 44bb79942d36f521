# Everyday commands. `make run` and `make test` work on a fresh Debian machine:
# each first installs missing Debian packages (a quick no-op when all are there).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

# `make test-net`: the network data plane's tests again in a network namespace under a
# bandwidth limit and packet drops on its loopback device (scripts/test-net; needs `unshare -rn`).
.PHONY: all deps build run demo test test-net bench nexmark bench-micro faults fuzz soak test-asan test-tsan clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/Makefile: CMakeLists.txt
	$(CMAKE_ENV) cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS) $(BUILD_TARGETS)

# Word count with periodic checkpoints on a generated input (made once, reused), paced to about
# 15 s; `make run RUN_ARGS="--http 127.0.0.1:8081"` serves the web page too.
run: build
	scripts/run-wordcount $(RUN_ARGS)

# Kill -9 mid-run, restore from the latest checkpoint, check exactly-once (scripts/demo).
demo: build
	scripts/demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Macro-benchmarks (docs/benchmarks.md); `make bench BENCH_ARGS=--quick` for a smoke test.
bench: build
	$(BUILD)/cairn-bench $(BENCH_ARGS)

# The Nexmark queries at parallelism 1 and 2 (docs/benchmarks.md, "Nexmark");
# `make nexmark BENCH_ARGS=--quick` for a smoke test.
nexmark: build
	$(BUILD)/cairn-bench --only nexmark $(BENCH_ARGS)

# Micro-benchmarks of the hot paths (Google Benchmark; about two minutes).
bench-micro: build
	$(BUILD)/cairn-micro-bench $(BENCH_ARGS)

# The suite under AddressSanitizer + UBSan (gcc), and under ThreadSanitizer (clang, see
# CMakeLists.txt); only what the suite runs is built. The options (halt on the first finding)
# are compiled in: tests/sanitizers/.
test-asan:
	$(MAKE) --no-print-directory test BUILD=build-asan CMAKE_FLAGS=-DCAIRN_SANITIZE=address BUILD_TARGETS="--target cairn cairn_tests"

test-tsan:
	@scripts/install-deps clang libclang-rt-dev
	$(MAKE) --no-print-directory test BUILD=build-tsan CMAKE_ENV="CC=clang CXX=clang++" CMAKE_FLAGS=-DCAIRN_SANITIZE=thread \
	  BUILD_TARGETS="--target cairn cairn_tests"

# The long fault battery: every crash point several times, random SIGKILLs, storage faults,
# each checked for exactly-once output; a summary table at the end (docs/faults.md).
faults: build
	scripts/fault-battery

test-net: build
	BUILD=$(BUILD) scripts/test-net

# The randomized topology soak (not in `make test`): random jobs (fan-out, fan-in, chains, the
# bank's cycle, mixed parallelism), checkpoint modes and intervals, SIGKILLs at observed progress
# and crash points, parallelism changes on restore; each case checked for exactly-once output and
# per-checkpoint invariants; a summary table at the end (docs/faults.md). SOAK_SEED=S replays
# one case; SOAK_CASES=N and SOAK_MINUTES=M (default 10) bound the run; SOAK_RESCALE=off keeps
# every parallelism; SOAK_MASTER_SEED draws the same sequence of cases again.
SOAK_SEED ?=
SOAK_CASES ?=
SOAK_MINUTES ?= 10
SOAK_RESCALE ?= on
SOAK_MASTER_SEED ?=
soak: BUILD_TARGETS = --target cairn
soak: build
	SOAK_SEED="$(SOAK_SEED)" SOAK_CASES="$(SOAK_CASES)" SOAK_MINUTES="$(SOAK_MINUTES)" SOAK_RESCALE="$(SOAK_RESCALE)" \
	  SOAK_MASTER_SEED="$(SOAK_MASTER_SEED)" CAIRN=$(BUILD)/cairn SOAK_DIR=$(BUILD)/soak scripts/soak

# libFuzzer targets (tests/fuzz), built with clang, each run for FUZZ_SECONDS from the seed
# corpus; new inputs go to build-fuzz/corpus/, crashing ones to build-fuzz/artifacts/.
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/install-deps clang libclang-rt-dev
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAIRN_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz_job_loader fuzz_checkpoint_metadata
	@for t in job_loader checkpoint_metadata; do \
	  mkdir -p build-fuzz/corpus/$$t build-fuzz/artifacts/$$t && \
	  echo "fuzz: fuzz_$$t for $(FUZZ_SECONDS) s" && \
	  build-fuzz/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/artifacts/$$t/ build-fuzz/corpus/$$t \
	    tests/fuzz/corpus/$$t || exit 1; \
	done

clean:
	rm -rf build build-asan build-tsan build-fuzz
