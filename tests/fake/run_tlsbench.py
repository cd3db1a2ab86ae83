"""`tlsbench` with the fake driver (tests/fake/builds.py): the real command line, runner,
store and reports, with builds that build nothing. Fake builds go where $TLSBENCH_FAKE_BUILDS
says. Run as `python tests/fake/run_tlsbench.py ARGS...` (what the `fake_tlsbench` fixture
does)."""

from __future__ import annotations

import sys

from builds import install_from_environment

from tlsbench.cli import main

if __name__ == "__main__":
    install_from_environment()
    sys.exit(main(sys.argv[1:]))
