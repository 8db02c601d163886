"""classifier_reward: a memorised success classifier gives no signal; a regularised one gives a
shaped reward and the agent learns, fitted once as well as refitted (VICE)."""

from __future__ import annotations

import pytest

from sims import classifier_reward as sim
from sims.common import PHONE_WIDTH_PX, png_size

DEFAULT = sim.Config()


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    # memorising: ~0 reward off the examples, the agent never finds the goal
    assert m["memorised_max_reward_outside_goal"] < 0.01
    assert m["memorised_final_success"] < 0.05
    # regularised: graded toward the goal and the agent learns, fixed or refitted
    for arm in ("fixed", "vice"):
        assert m[f"{arm}_reward_progress_correlation"] > 0.8
        assert m[f"{arm}_final_success"] > 0.8
    # the honest part: refitting adds nothing measurable in this world
    assert abs(m["vice_final_success"] - m["fixed_final_success"]) < 0.1


def test_claims_hold_at_seed_0():
    check_claims(sim.run(DEFAULT).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_claims_hold_on_ten_seeds(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_plot_is_phone_width():
    result = sim.run(sim.Config(iterations=4))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
