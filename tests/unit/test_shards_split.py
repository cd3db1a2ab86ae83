"""Shards: the split of a run's points among N runners is deterministic and covers every point
once; a shard and a run key are checked."""

from __future__ import annotations

import pytest

from tlsbench.core.errors import UserError
from tlsbench.run import shards


# Cheap points (the fake driver, tests/fake/): seconds for the whole run.
def test_the_split_is_deterministic_and_covers_every_point_once() -> None:
    positions = list(range(11))
    parts = [shards.select(positions, shards.Shard(k, 3)) for k in (1, 2, 3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]
    assert shards.parse(" 2/3 ") == shards.Shard(2, 3)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0"):
        with pytest.raises(UserError, match="--shard"):
            shards.parse(bad)
    with pytest.raises(UserError, match="--run-key"):
        shards.check_run_key("two words")
