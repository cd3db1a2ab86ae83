"""Shards: one run's points split over N runners (machines of a CI matrix, a batch system),
each running its share into one shared store under one run.

The split is deterministic: the run's points in their stored order (sorted by scenario,
name and variant: experiments.py expands the same experiment to the same list anywhere),
dealt round-robin, so point i goes to shard i mod N + 1. Dealing rather than cutting into
N blocks gives every shard a mix of scenarios and libraries, so shards take about as long.

Every shard names the run by a key they share (`--run-key`, e.g. the CI pipeline's id): the
first to reach the store makes the run with every shard's points, the others join it
(store.start_or_join), and each executes only its own points. Run again with the same key,
a shard resumes: it runs what its points are missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tlsbench.core.errors import UserError

MAX_SHARDS = 1000
RUN_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")


@dataclass(frozen=True)
class Shard:
    index: int  # 1 ... count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> Shard:
    """`K/N` as the command line gives it: shard K of N, 1 <= K <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise UserError(f"--shard {text!r}: give K/N, e.g. --shard 2/4 (shard 2 of 4)")
    index, count = int(match[1]), int(match[2])
    if not 1 <= count <= MAX_SHARDS:
        raise UserError(f"--shard {text}: the number of shards must be 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise UserError(f"--shard {text}: K must be from 1 to {count}")
    return Shard(index, count)


def check_run_key(key: str) -> str:
    if not RUN_KEY.fullmatch(key):
        raise UserError(
            f"--run-key {key!r}: use 1 to 200 letters, digits and . _ : / @ + - (starting "
            "with a letter or digit), e.g. the CI pipeline's id"
        )
    return key


def shard_of(position: int, count: int) -> int:
    """The shard (1 ... count) that runs the point at `position` in the run's order."""
    return position % count + 1


def select(positions: list[int], shard: Shard) -> list[int]:
    """The positions shard `shard` runs."""
    return [p for p in positions if shard_of(p, shard.count) == shard.index]
