"""The larger RSA sets (the unit tier makes the fast kinds) are the published bytes too: made
in an empty cache, each kind's digest is the one builds/certs.py publishes. RSA-8192 is left
out: its ten 4096-bit primes take minutes in Python, by the same code as these."""

from __future__ import annotations

from pathlib import Path

import pytest

from tlsbench.builds import certs


@pytest.mark.parametrize("kind", ["rsa3072", "rsa4096"])
def test_larger_rsa_sets_are_the_published_ones(kind: str, tmp_path: Path) -> None:
    made = certs.digest(kind, tmp_path)
    assert certs.published(kind, made) is True, (kind, made)
