"""The search of `tlsbench bisect`: the first commit of a range whose figure moved, as a loop
over a predicate and nothing else (git's `git bisect run`, asv's `asv find`).

The commits after GOOD are numbered 0 .. count - 1, oldest first (count - 1 is BAD); GOOD
itself is known good. The answer is the first bad one, or none (count): count + 1
possibilities, so that a search that skips nothing asks at most ceil(log2(count + 1))
questions. BAD is never assumed bad: it is asked like any other commit, when the search gets
there, so that a range in which nothing moved costs no more than one that regressed.

`test(i)` says `good`, `bad` or `skip` (with why: the commit does not build, its run fails);
a skipped commit is left out as `git bisect skip` leaves it out, and the next question is
the untested commit nearest the middle. Verdicts already known (a bisect that was
interrupted and resumed) are taken from `known` without asking. Building, measuring and
storing are the caller's: this module never names a commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

VERDICTS = ("good", "bad", "skip")


@dataclass(frozen=True)
class Verdict:
    verdict: str  # good | bad | skip
    reason: str = ""  # why a commit was skipped

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"a verdict is one of {', '.join(VERDICTS)}, not {self.verdict!r}")


@dataclass(frozen=True)
class Step:
    index: int
    verdict: Verdict
    stored: bool  # taken from `known`, not asked


@dataclass(frozen=True)
class Outcome:
    """What the search found: `culprit` the first bad commit, when one is named; else
    `candidates`, the commits it could be where skipped commits hide which (the skipped
    ones, then the first bad one), empty when no tested commit is bad."""

    culprit: int | None
    candidates: tuple[int, ...]
    steps: tuple[Step, ...]  # in the order the search took them
    # The skipped commits the answer's range still holds: what could not be told (where
    # nothing is bad, the commits after the last good one that could not be measured).
    skipped: tuple[int, ...] = ()

    @property
    def asked(self) -> int:
        """Questions asked now (stored verdicts not counted)."""
        return sum(1 for s in self.steps if not s.stored)


def _bounds(count: int, verdicts: Mapping[int, Verdict]) -> tuple[int, int]:
    """[low, high]: the answer's range. low: after the last good commit; high: the first
    bad commit at or after low, or count (none) when no such commit is known bad."""
    good = [i for i, v in verdicts.items() if v.verdict == "good"]
    low = max(good, default=-1) + 1
    bad = [i for i, v in verdicts.items() if v.verdict == "bad" and i >= low]
    return low, min(bad, default=count)


def next_question(count: int, verdicts: Mapping[int, Verdict]) -> int | None:
    """The commit to ask next: the untested one nearest the middle of the answer's range
    (the lower of two as near), None when every commit that could decide has a verdict."""
    low, high = _bounds(count, verdicts)
    untested = [i for i in range(low, high) if i not in verdicts]
    if not untested:
        return None
    # A question at m leaves [m + 1, high] if good, [low, m] if bad: m = the range's middle
    # splits high - low + 1 possibilities into two of at most half each (rounded up).
    middle = low + (high - low) // 2
    return min(untested, key=lambda i: (abs(i - middle), i))


def first_bad(
    count: int,
    test: Callable[[int], Verdict],
    known: Mapping[int, Verdict] | None = None,
    seen: Callable[[Step], None] | None = None,
) -> Outcome:
    """The first bad commit of `count` (see the module's docstring); `seen` is told each
    step as it is taken (stored or asked), e.g. to print it."""
    if count < 1:
        raise ValueError("a range holds at least one commit after GOOD")
    verdicts: dict[int, Verdict] = {}
    steps: list[Step] = []
    known = {i: v for i, v in (known or {}).items() if 0 <= i < count}
    while (index := next_question(count, verdicts)) is not None:
        stored = index in known
        verdict = known[index] if stored else test(index)
        verdicts[index] = verdict
        steps.append(Step(index, verdict, stored))
        if seen is not None:
            seen(steps[-1])
    low, high = _bounds(count, verdicts)
    skipped = tuple(i for i in range(low, high) if verdicts[i].verdict == "skip")
    if high == count:  # no commit after the last good one is known bad
        return Outcome(None, (), tuple(steps), skipped)
    if skipped:
        return Outcome(None, (*skipped, high), tuple(steps), skipped)
    return Outcome(high, (high,), tuple(steps))


def most_questions(count: int) -> int:
    """The most questions a search of `count` commits after GOOD asks when it skips none:
    ceil(log2(count + 1))."""
    return (count).bit_length()
