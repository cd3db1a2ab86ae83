"""Shared fixtures: real builds in the user's cache (shared with `make run`)."""

from __future__ import annotations

import pytest

from tlsbench.build import Build, Builder
from tlsbench.variants import Catalog


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
