"""The unit tier builds nothing and runs no real driver: every build of a unit test is a fake
one (tests/fake/, the `fake_driver` fixture of tests/conftest.py), here and in the `tlsbench`
processes a test starts with fake.builds.run_fake / start_fake."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def unit_builds_are_fake(fake_driver: Path) -> Path:
    return fake_driver
