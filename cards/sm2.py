"""SM-2 (Wozniak, 1990) with exact easiness arithmetic.

The easiness factor (EF) is held in integer hundredths, so ``ceil(interval * EF)``
is computed on integers and never overshoots the way floats do
(5 * 2.8000000000000003 rounds up to 15; the right answer is 14).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

MIN_EASINESS_HUNDREDTHS = 130
#: Quality at or above which a review counts as recalled (SM-2 step 5).
PASSING_QUALITY = 3
#: Step 7: a card graded below this is asked again the same day, without rescheduling.
SAME_DAY_REPEAT_BELOW = 4


def _to_hundredths(easiness: float | str | Decimal) -> int:
    value = Decimal(str(easiness)) * 100
    if value != value.to_integral_value():
        raise ValueError(f"easiness must have at most two decimals, got {easiness!r}")
    return int(value)


@dataclass(frozen=True)
class Sm2State:
    """What SM-2 remembers about one card for one learner."""

    repetitions: int = 0
    easiness: Decimal = field(default=Decimal("2.5"))
    interval_days: int = 0

    def __post_init__(self) -> None:
        hundredths = _to_hundredths(self.easiness)
        if hundredths < MIN_EASINESS_HUNDREDTHS:
            raise ValueError(f"easiness must be at least 1.3, got {self.easiness!r}")
        if self.repetitions < 0 or self.interval_days < 0:
            raise ValueError("repetitions and interval_days must be non-negative")
        object.__setattr__(self, "easiness", Decimal(hundredths) / 100)

    @property
    def easiness_hundredths(self) -> int:
        return int(self.easiness * 100)


def _check_quality(quality: object) -> int:
    # bool is an int subclass; True is not a grade.
    if not isinstance(quality, int) or isinstance(quality, bool) or not 0 <= quality <= 5:
        raise ValueError(f"quality must be an integer from 0 to 5, got {quality!r}")
    return quality


def easiness_delta_hundredths(quality: int) -> int:
    """EF' - EF in hundredths: 0.1 - (5-q)(0.08 + (5-q)0.02), times 100."""
    miss = 5 - _check_quality(quality)
    return 10 - miss * (8 + 2 * miss)


def review(state: Sm2State, quality: int) -> Sm2State:
    """Apply one graded review (SM-2 steps 3-6) and return the new state."""
    _check_quality(quality)
    ef = state.easiness_hundredths
    if quality >= PASSING_QUALITY:
        if state.repetitions == 0:
            interval = 1
        elif state.repetitions == 1:
            interval = 6
        else:
            # ceil(I * EF) with EF in hundredths, on integers; EF is the one before this review.
            interval = -(-state.interval_days * ef // 100)
        repetitions = state.repetitions + 1
    else:
        interval, repetitions = 1, 0
    new_ef = max(MIN_EASINESS_HUNDREDTHS, ef + easiness_delta_hundredths(quality))
    return Sm2State(repetitions=repetitions, easiness=Decimal(new_ef) / 100, interval_days=interval)


def needs_same_day_repeat(quality: int) -> bool:
    """SM-2 step 7: below 4, the card comes back later the same day until it scores 4+."""
    return _check_quality(quality) < SAME_DAY_REPEAT_BELOW
