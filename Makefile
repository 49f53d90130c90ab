# The two commands of the README:
#   make run   — install what is missing, build, run the main job on the embedded defaults
#   make test  — the same set-up, then the whole test suite through ctest
BUILD_DIR ?= build
WERROR ?= OFF
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all setup configure build run test clean gpu-bundle

all: build

setup:
	@scripts/setup.sh

# Re-running cmake on an existing build tree takes about a second.
configure: setup
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCRL_WERROR=$(WERROR) $(CMAKE_FLAGS) > $(BUILD_DIR).configure.log 2>&1 \
	  || { cat $(BUILD_DIR).configure.log; exit 1; }

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The embedded contrastive-RL run on a local cluster (crl quickstart): about
# 20 minutes on two cores; the report lands in runs/<run id>/report.html.
run: build
	$(BUILD_DIR)/bin/crl quickstart

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR)
