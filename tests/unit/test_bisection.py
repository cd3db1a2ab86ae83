"""The search of `tlsbench bisect` (core/bisection.py) with an injected predicate: every
position of the first bad commit in ranges of 1 to 64 commits, at most ceil(log2 N) + 1
builds, skipped commits, and a search that is interrupted and resumed from its stored steps."""

from __future__ import annotations

import math
import random

import pytest

from tlsbench.core.bisection import Verdict, first_bad, most_questions, next_question


def predicate(
    first: int | None, skip: frozenset[int] = frozenset(), asked: list[int] | None = None
):
    """Commits from `first` on are bad (None: none is); those in `skip` do not build."""

    def test(index: int) -> Verdict:
        if asked is not None:
            asked.append(index)
        if index in skip:
            return Verdict("skip", f"commit {index} does not build")
        return Verdict("bad" if first is not None and index >= first else "good")

    return test


@pytest.mark.parametrize("count", [*range(1, 20), 31, 32, 33, 64])
def test_every_position_is_found_within_the_bound(count: int) -> None:
    for first in [*range(count), None]:
        asked: list[int] = []
        outcome = first_bad(count, predicate(first, asked=asked))
        assert outcome.culprit == first
        assert len(asked) == len(set(asked)), "a commit asked twice"
        # N = the range's commits with GOOD: GOOD's build + one per question.
        builds = 1 + len(asked)
        assert builds <= math.ceil(math.log2(count + 1)) + 1
        assert len(asked) <= most_questions(count)
        if first is not None:
            # Named only once its parent (or GOOD) is known good.
            verdicts = {s.index: s.verdict.verdict for s in outcome.steps}
            assert verdicts[first] == "bad"
            assert first == 0 or verdicts[first - 1] == "good"


def test_bad_is_asked_like_any_commit() -> None:
    """Nothing moved: the search walks up to BAD and finds it good (no commit crosses)."""
    asked: list[int] = []
    outcome = first_bad(8, predicate(None, asked=asked))
    assert outcome.culprit is None and outcome.candidates == ()
    assert asked[-1] == 7 and asked == [4, 6, 7]


def test_the_first_question_is_the_middle() -> None:
    assert next_question(8, {}) == 4
    assert next_question(1, {}) == 0
    # After 4 good: [5, 8]; after 4 bad: [0, 4].
    assert next_question(8, {4: Verdict("good")}) == 6
    assert next_question(8, {4: Verdict("bad")}) == 2


def test_a_skipped_commit_is_left_out_and_its_neighbour_asked() -> None:
    asked: list[int] = []
    outcome = first_bad(8, predicate(6, skip=frozenset({4}), asked=asked))
    assert outcome.culprit == 6
    assert asked[:2] == [4, 3]  # the middle, then the nearest below it
    assert [s.verdict.reason for s in outcome.steps if s.verdict.verdict == "skip"] == [
        "commit 4 does not build"
    ]


def test_skips_that_hide_the_culprit_give_the_candidates() -> None:
    """The culprit is 3, and 2 does not build: it is 2 or 3 (as git bisect says)."""
    outcome = first_bad(8, predicate(3, skip=frozenset({2})))
    assert outcome.culprit is None
    assert outcome.candidates == (2, 3) and outcome.skipped == (2,)


def test_a_bad_that_does_not_build_leaves_the_end_untold() -> None:
    outcome = first_bad(4, predicate(None, skip=frozenset({3})))
    assert outcome.culprit is None and outcome.candidates == ()
    assert outcome.skipped == (3,)


def test_every_commit_skipped() -> None:
    outcome = first_bad(5, predicate(2, skip=frozenset(range(5))))
    assert outcome.culprit is None and outcome.skipped == (0, 1, 2, 3, 4)
    assert outcome.asked == 5


def test_random_skips_never_name_a_wrong_commit() -> None:
    rng = random.Random(7)
    for _ in range(500):
        count = rng.randint(1, 40)
        first = rng.choice([*range(count), None])
        skip = frozenset(i for i in range(count) if rng.random() < 0.25)
        outcome = first_bad(count, predicate(first, skip))
        if outcome.culprit is not None:
            assert outcome.culprit == first
        elif outcome.candidates:
            assert first in outcome.candidates
            assert all(i in skip for i in outcome.candidates[:-1])
        else:  # nothing bad was measured: the first bad, if any, was skipped
            assert (
                first is None
                or first in skip
                or all(i in skip for i in range(first, count))
                or first in outcome.skipped
            )


class Interrupted(Exception):
    pass


def test_an_interrupted_search_resumes_from_its_stored_steps() -> None:
    count, first = 33, 21
    stored: dict[int, Verdict] = {}
    test = predicate(first, skip=frozenset({16}))

    def interrupted_after(n: int):
        def ask(index: int) -> Verdict:
            if len(stored) >= n:
                raise Interrupted
            stored[index] = verdict = test(index)  # stored as each step is taken
            return verdict

        return ask

    with pytest.raises(Interrupted):
        first_bad(count, interrupted_after(3))
    assert len(stored) == 3
    asked: list[int] = []
    told: list[tuple[int, bool]] = []
    resumed = first_bad(
        count,
        predicate(first, skip=frozenset({16}), asked=asked),
        known=stored,
        seen=lambda step: told.append((step.index, step.stored)),
    )
    assert resumed.culprit == first
    # Every step is told as it is taken, the stored ones first (the search took them first).
    assert told == [(s.index, s.stored) for s in resumed.steps]
    assert [i for i, was_stored in told[:3]] == list(stored) and all(w for _, w in told[:3])
    assert not set(asked) & set(stored), "a stored step was asked again"
    assert [s.index for s in resumed.steps if s.stored] == list(stored)
    # The same questions, in the same order, as a search that was never interrupted.
    whole = first_bad(count, test)
    assert [s.index for s in resumed.steps] == [s.index for s in whole.steps]


def test_known_verdicts_outside_the_range_are_ignored() -> None:
    outcome = first_bad(4, predicate(2), known={-1: Verdict("bad"), 9: Verdict("good")})
    assert outcome.culprit == 2


def test_an_unknown_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="one of good, bad, skip"):
        Verdict("maybe")
