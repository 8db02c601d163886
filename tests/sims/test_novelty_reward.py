"""novelty_reward: paid for score or per crash report the tester finds few bugs (and a crash
detector sees no behavioural bug); paid for new discrepancies from the reference, plus
coverage, it detects far more."""

from __future__ import annotations

import pytest

from sims import novelty_reward as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics (16 testers per reward)."""
    assert m["behavioural_share"] > 0.65  # most student bugs are behavioural
    # paid for score: the tester stays where the points are
    assert m["score_share_in_top_area"] > 0.5
    # paid per crash report: it farms area 0 and its oracle sees no behavioural bug
    assert m["crash_reports_share_in_area0"] > 0.7
    assert m["crash_reports_behavioural_bugs"] == 0
    # paid for new discrepancies from the reference, plus coverage: far more bugs
    best = m["discrepancy_coverage_distinct_bugs"]
    assert best > m["novel_discrepancy_distinct_bugs"] + 5
    assert best > 2 * m["score_distinct_bugs"]
    assert best > 5 * m["crash_reports_distinct_bugs"]
    assert m["discrepancy_coverage_behavioural_bugs"] > 0.6 * (
        m["behavioural_share"] * m["n_real_bugs"]
    )
    assert best <= m["n_real_bugs"]


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_plot_is_phone_width():
    result = sim.run(sim.Config(steps=50, seeds=2))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
