# Thin entry points; the work is done by the scripts in workbench/.
# See README.md.
WB := workbench

.PHONY: help deps fetch tree export build test test-subsets test-mainline run bench unit package docs clean

help:
	@echo "make help    - this list"
	@echo "make deps    - install the prerequisites (apt packages, the Python venv)"
	@echo "make fetch   - fetch and unpack the base kernel source into the cache"
	@echo "make run     - build the patched kernel, boot it, show the demo"
	@echo "make test    - unit tests, per-patch checks, build, selftests in a VM"
	@echo "make test-subsets - each subset of the series (up to a topic) built and its tests run"
	@echo "make test-mainline - the series' bug-finding selftests on a mainline kernel (sid's linux-source)"
	@echo "make tree    - materialise build/linux: base + one commit per patch"
	@echo "make export  - regenerate patches/ from build/linux"
	@echo "make build   - apply the series and build the kernel"
	@echo "make unit    - the workbench's own unit tests"
	@echo "make bench   - latency and memcached benchmarks (BASELINE=1: also the base)"
	@echo "make package - Debian packages of the patched kernel (PACKAGE_CONFIG=debian: hours)"
	@echo "make docs    - audit the base's drivers again, regenerate docs/testing.md's pattern table"
	@echo "make clean   - remove build/results (every target's results) and the installed selftests"

deps:
	$(WB)/deps.sh

fetch: deps
	$(WB)/fetch-base.sh

tree: fetch
	$(WB)/tree.sh

export:
	$(WB)/export.sh

build: deps
	$(WB)/prepare-tree.sh
	$(WB)/build.sh

unit: deps
	$(WB)/unit.sh

test:
	$(WB)/test.sh

test-subsets:
	$(WB)/test-subsets.sh

test-mainline:
	$(WB)/test-mainline.sh

run:
	$(WB)/run.sh

bench:
	$(WB)/bench.sh

package:
	$(WB)/package.sh

docs: fetch
	$(WB)/report/audit-docs.sh

clean:
	rm -rf build/results build/ksft build/ksft-mainline
