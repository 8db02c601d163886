"""SM-2 exactly as specified, including the float case that ceil gets wrong."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from supermemo2 import review as reference_review

from cards.sm2 import Sm2State, needs_same_day_repeat, review


def run(grades: list[int], state: Sm2State | None = None) -> list[Sm2State]:
    state = state or Sm2State()
    states = []
    for quality in grades:
        state = review(state, quality)
        states.append(state)
    return states


def test_default_state() -> None:
    assert Sm2State() == Sm2State(repetitions=0, easiness=2.5, interval_days=0)
    assert Sm2State(easiness=2.5).easiness == Decimal("2.50")


def test_all_fives_give_the_textbook_intervals() -> None:
    states = run([5] * 5)
    assert [s.interval_days for s in states] == [1, 6, 17, 48, 140]
    assert [s.easiness for s in states] == [Decimal(x) for x in ("2.6", "2.7", "2.8", "2.9", "3.0")]
    assert [s.repetitions for s in states] == [1, 2, 3, 4, 5]


def test_the_float_overshoot_case_is_exact() -> None:
    # 2.5 + 0.1 + 0.1 + 0.1 in floats is 2.8000000000000003, and ceil(5 * that) = 15.
    assert math.ceil(5 * (2.5 + 0.1 + 0.1 + 0.1)) == 15
    state = Sm2State(repetitions=2, easiness=Decimal("2.8"), interval_days=5)
    assert review(state, 5).interval_days == 14
    # Reached by grading, not by construction: three 5s from 2.5 give EF 2.8 exactly.
    assert run([5, 5, 5])[-1].easiness == Decimal("2.8")


def test_interval_uses_easiness_before_the_review() -> None:
    # q=3 lowers EF by 0.14, but the interval uses the old EF: ceil(6 * 2.5) = 15.
    state = Sm2State(repetitions=2, easiness=2.5, interval_days=6)
    after = review(state, 3)
    assert after.interval_days == 15
    assert after.easiness == Decimal("2.36")


def test_failure_resets_repetitions_and_still_updates_easiness() -> None:
    state = Sm2State(repetitions=4, easiness=2.5, interval_days=40)
    after = review(state, 2)
    assert (after.repetitions, after.interval_days) == (0, 1)
    assert after.easiness == Decimal("2.18")
    assert review(after, 4).interval_days == 1  # the ladder restarts at 1, then 6
    assert review(review(after, 4), 4).interval_days == 6


@pytest.mark.parametrize(
    ("quality", "delta"), [(5, "0.10"), (4, "0.00"), (3, "-0.14"), (2, "-0.32"), (1, "-0.54"), (0, "-0.80")]
)
def test_easiness_deltas(quality: int, delta: str) -> None:
    assert review(Sm2State(easiness=2.5), quality).easiness == Decimal("2.5") + Decimal(delta)


def test_easiness_is_floored_at_1_3() -> None:
    assert run([0, 0, 0])[-1].easiness == Decimal("1.3")


@pytest.mark.parametrize("bad", [-1, 6, 2.5, "3", None, True])
def test_quality_outside_0_to_5_raises(bad: object) -> None:
    with pytest.raises(ValueError, match="quality"):
        review(Sm2State(), bad)  # type: ignore[arg-type]


def test_invalid_states_raise() -> None:
    with pytest.raises(ValueError):
        Sm2State(easiness=1.2)
    with pytest.raises(ValueError):
        Sm2State(easiness="2.555")
    with pytest.raises(ValueError):
        Sm2State(repetitions=-1)


def test_same_day_repeat_below_four() -> None:
    assert [needs_same_day_repeat(q) for q in range(6)] == [True, True, True, True, False, False]


grades = st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=30)


@given(grades)
def test_properties(sequence: list[int]) -> None:
    state = Sm2State()
    for quality in sequence:
        before = state
        state = review(state, quality)
        assert state.easiness >= Decimal("1.3")
        assert state.interval_days >= 1
        if quality < 3:
            assert (state.repetitions, state.interval_days) == (0, 1)
        else:
            assert state.repetitions == before.repetitions + 1
            if before.repetitions >= 2:
                assert state.interval_days >= before.interval_days  # EF >= 1.3 never shrinks it


@given(grades)
def test_matches_supermemo2_package(sequence: list[int]) -> None:
    """The supermemo2 package follows the same rules with floats; compare with a tolerance
    on EF and exact intervals except where float rounding under ceil is to blame."""
    state = Sm2State()
    easiness, interval, repetitions = 2.5, 0, 0
    for quality in sequence:
        expected = reference_review(quality, easiness, interval, repetitions)
        state = review(state, quality)
        assert state.repetitions == expected["repetitions"]
        assert float(state.easiness) == pytest.approx(expected["easiness"], abs=1e-9)
        exact_product = Decimal(interval) * Decimal(str(round(easiness, 2)))
        if quality >= 3 and repetitions >= 2 and exact_product == exact_product.to_integral_value():
            # The float product overshoots an integer; the exact one must not.
            assert state.interval_days == int(exact_product)
        else:
            assert state.interval_days == expected["interval"]
        # Follow our exact state, so the float drift does not accumulate in the reference.
        easiness, interval, repetitions = float(state.easiness), state.interval_days, state.repetitions
