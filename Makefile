# Everyday commands. `make run` and `make test` work on a fresh Debian machine:
# each first installs missing Debian packages (a quick no-op when all are there).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build run test bench bench-micro faults soak test-asan test-tsan clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# Word count with periodic checkpoints on a generated input (made once, reused).
run: build
	scripts/run-wordcount

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Macro-benchmarks (docs/benchmarks.md); `make bench BENCH_ARGS=--quick` for a smoke test.
bench: build
	$(BUILD)/cairn-bench $(BENCH_ARGS)

# Micro-benchmarks of the hot paths (Google Benchmark; about two minutes).
bench-micro: build
	$(BUILD)/cairn-micro-bench $(BENCH_ARGS)

test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS=-DCAIRN_SANITIZE=address

test-tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS=-DCAIRN_SANITIZE=thread

clean:
	rm -rf build build-asan build-tsan
