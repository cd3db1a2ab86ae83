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
