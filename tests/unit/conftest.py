"""The unit tier builds nothing and runs no real driver: every Builder of a unit test hands
out builds whose drivers are the fake one (tests/fake/), and `fake_tlsbench` runs the
command line the same way in a process of its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fake.builds import ROOT_VARIABLE, install, run_fake
from tlsbench.build import Builder
from tlsbench.scenarios import declared


@pytest.fixture(scope="session")
def fake_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's folder of fake builds (the real cache is never touched)."""
    return tmp_path_factory.mktemp("fake-builds")


@pytest.fixture(autouse=True)
def fake_driver(fake_builds: Path, monkeypatch: pytest.MonkeyPatch):
    """Every build of the test is a fake one; so is the driver's declaration."""
    real = Builder.build
    install(fake_builds)
    monkeypatch.setenv(ROOT_VARIABLE, str(fake_builds))
    yield fake_builds
    Builder.build = real  # type: ignore[method-assign]
    declared.cache_clear()


@pytest.fixture
def fake_tlsbench():
    """The command line with fake builds: fake_tlsbench("run", ...)."""
    assert os.environ.get(ROOT_VARIABLE)
    return run_fake
