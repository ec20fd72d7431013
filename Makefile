# Quick start:  make serve   (installs, builds, serves the built-in demo model over HTTP)
#               make test    (installs, builds, runs the whole test suite)
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup configure build serve test sdk-deps bench format tidy clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

serve: build
	./$(BUILD_DIR)/bin/herd serve $(ARGS)

test: build sdk-deps
	@python3 tools/check_layers.py
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) -LE slow

# The pinned npm SDKs for the SDK end-to-end tests (ctest label sdk): npm ci from
# tests/sdk/package-lock.json unless node_modules is current; a note and nothing else without node.
sdk-deps: setup
	@bash tests/sdk/run.sh --install

bench: build
	./$(BUILD_DIR)/bin/herd bench-model -m $(MODEL) -p 256 -n 128 -r 3

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
