# tlsbench: `make run` does the main job, `make test` runs the tests. Both install what is
# missing first (Debian packages when run as root, the virtual environment, sources, builds)
# and reuse what is there.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python

# Debian packages the builds, drivers and tests need.
DEBIAN_PACKAGES := gcc g++ gcc-multilib make cmake ninja-build autoconf automake libtool git \
	perl pkgconf python3-venv valgrind bzip2 xz-utils ca-certificates debian-archive-keyring \
	nettle-dev libgmp-dev libtasn1-6-dev libunistring-dev libssl-dev libgnutls28-dev \
	clang-format openssl gnutls-bin chromium nginx-light nghttp2-client curl iproute2 \
	clang-14 binutils-arm-linux-gnueabihf libc6-dev-armhf-cross libgcc-12-dev-armhf-cross qemu-user \
	gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm postgresql openssh-server \
	gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc libcapstone-dev \
	libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0

# rustup's cargo and rustc, where rustup installs them: rustls-ffi is built with cargo, and
# Debian 12's cargo (0.66) cannot read crates.io's index.
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: run test test-fast check format deps venv build bench fuzz

# The main job: the `quick` experiment into results/tlsbench.db, its summary in the terminal
# (a row per library), and results/report.md + results/report.html (plots in
# results/plots/). A point that failed makes the exit status non-zero, after the report is
# written.
run: deps venv
	@status=0; ./tlsbench run quick || status=$$?; \
	./tlsbench report latest --format md --out results/report.md && \
	./tlsbench report latest --format html --out results/report.html --summary && \
	echo "also: results/report.md, plots in results/plots/" && exit $$status

# CPU_PROFILE=avx2|sse4|valgrind runs the suite as on a CPU without some extensions (the
# libraries' own capability switches; src/tlsbench/driver/cpuprofile.py): a test that holds on this
# CPU only fails here, not on the next CI machine.
# The tests live in tiers by folder (docs/testing.md): tests/unit (no builds, the fake
# driver), tests/null (the null variant's driver only), tests/libraries (real library
# builds), tests/long (load, networks, firmware, own code, findings). `test` runs them all.
# The two tiers that build no library run a test per CPU at a time (pytest-xdist: their
# figures are the fake driver's or the null variant's, nothing they assert is a speed); the
# tiers with real builds run one test at a time, so that no figure competes for the CPU.
CPU_PROFILE ?=
# Both halves run even when the first fails; the status is non-zero when either failed.
test: deps venv
	@status=0; export TLSBENCH_CPU_PROFILE=$(CPU_PROFILE); \
	$(VENV)/bin/pytest -v -n auto --durations=15 tests/unit tests/null || status=$$?; \
	$(VENV)/bin/pytest -v --durations=25 tests/libraries tests/long || status=$$?; \
	exit $$status

# The fast tiers, for development: no library build (the null variant builds in seconds),
# a test per CPU at a time.
test-fast: venv
	TLSBENCH_CPU_PROFILE=$(CPU_PROFILE) $(VENV)/bin/pytest -q -n auto tests/unit tests/null

# Many more mutations of the user-edited files than `make test` tries (FUZZ_COUNT per file kind,
# seeds FUZZ_SEEDS): exit 0 or 2, never a traceback, never a store change.
FUZZ_COUNT ?= 2000
FUZZ_SEEDS ?= 1 2 3 4 5
fuzz: venv
	@for seed in $(FUZZ_SEEDS); do \
		TLSBENCH_FUZZ_SEED=$$seed TLSBENCH_FUZZ_COUNT=$(FUZZ_COUNT) \
			$(VENV)/bin/pytest -q -s tests/unit/test_fuzz_inputs.py || exit 1; \
	done

check: venv
	$(VENV)/bin/ruff format --check src tests
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/unit/test_layers.py
	clang-format --dry-run -Werror $$(find drivers src -name '*.[ch]' -o -name '*.cpp')

format: venv
	$(VENV)/bin/ruff format src tests
	$(VENV)/bin/ruff check --fix src tests
	clang-format -i $$(find drivers src -name '*.[ch]' -o -name '*.cpp')

# Installs only the Debian packages that are missing; needs root for that.
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			log=$$(mktemp -t tlsbench-apt.XXXXXX.log); \
			echo "installing Debian packages:" $$missing "(apt's output: $$log)"; \
			{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; } > "$$log" 2>&1 \
				|| { tail -n 40 "$$log"; echo "apt-get failed: its whole output is in $$log"; exit 1; }; \
		else \
			echo "missing Debian packages: $$missing"; \
			echo "install them with: sudo apt-get install $$missing"; exit 1; \
		fi; \
	fi

venv:
	@./tlsbench --help > /dev/null

build: deps venv
	./tlsbench build

# Benchmarks of tlsbench itself, with default arguments; their figures are in docs/results.md
# (not tests: the machine is shared). bench/kill9_resume.py and `make fuzz` run on their own.
bench: deps venv
	$(VENV)/bin/python bench/build_times.py
	$(VENV)/bin/python bench/harness_overhead.py
	$(VENV)/bin/python bench/aead_vs_openssl_speed.py
	$(VENV)/bin/python bench/self_compare.py
	$(VENV)/bin/python bench/openssl_generations.py
