"""Shared fixtures: real builds in the user's cache (shared with `make run`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tlsbench.builds.build import Build, Builder
from tlsbench.builds.variants import Catalog
from tlsbench.driver import cpuprofile


def pytest_report_header() -> str:
    profile = cpuprofile.active()
    return f"tlsbench CPU profile: {profile.name} ({profile.summary})"


@pytest.fixture(scope="session", autouse=True)
def cpu_profile_switches():
    """Under $TLSBENCH_CPU_PROFILE (`make test CPU_PROFILE=avx2`), every library process a
    test starts itself sees the profile's switches, as the runner's drivers do."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in cpuprofile.active_environment().items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog()


@pytest.fixture(scope="session")
def builder() -> Builder:
    return Builder()


@pytest.fixture(scope="session")
def build_of(catalog: Catalog, builder: Builder):
    """Builds (or finds in the cache) a variant by spec."""
    cache: dict[str, Build] = {}

    def get(spec: str) -> Build:
        if spec not in cache:
            cache[spec] = builder.build(catalog.resolve(spec))
        return cache[spec]

    return get


@pytest.fixture(scope="session")
def postgres_server():
    """A throw-away PostgreSQL server for the session (tests/pgserver.py); skipped with the
    reason where the package is not installed."""
    import pgserver

    reason = pgserver.missing_reason()
    if reason:
        pytest.skip(reason)
    with pgserver.running() as server:
        yield server


@pytest.fixture
def pg_url(postgres_server) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.database()


@pytest.fixture(scope="session")
def fake_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's folder of fake builds (tests/fake/; the real cache is never touched)."""
    return tmp_path_factory.mktemp("fake-builds")


@pytest.fixture
def fake_driver(fake_builds: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every build of the test is a fake one (tests/fake/builds.py), in this process and in
    the `tlsbench` processes it starts with fake.builds.run_fake / start_fake; so is the
    driver's declaration."""
    from fake.builds import ROOT_VARIABLE, install
    from tlsbench.driver.declaration import declared

    real = Builder.build
    install(fake_builds)
    monkeypatch.setenv(ROOT_VARIABLE, str(fake_builds))
    yield fake_builds
    Builder.build = real  # type: ignore[method-assign]
    declared.cache_clear()
