"""trajectory_stitching: step-level Q-learning stitches flawed traces; SFT on successes clones B's
luck; online outcome RL, with fresh samples, learns too."""

from __future__ import annotations

import pytest

from sims import trajectory_stitching as sim
from sims.common import PHONE_WIDTH_PX, png_size

DEFAULT = sim.Config()


def check_claims(result: sim.Result, config: sim.Config = DEFAULT) -> None:
    """Every claim of the caption, on one run."""
    m, s = result.metrics, result.series
    assert m["trace_a_success"] < 0.01
    # offline Q-learning stitches A's prefix to B's last step: success 1, whatever p is
    assert m["q_learning_success"] > 0.99
    assert m["q_first_step_gap"] > 0.3  # it knows the prefix leads to a winnable last step
    # SFT on the fixed set's successes succeeds as often as B's luck
    assert m["sft_success"] == pytest.approx(config.recovery_probability, abs=0.02)
    for p, sft, q in zip(s["sweep_p"], s["sweep_sft"], s["sweep_q_learning"]):
        assert sft == pytest.approx(p, abs=0.02)
        # (nearly) every time: at p = 0.9 the data may show every repair working, and then the
        # empirical model values the mistake like the right step
        assert q > (0.99 if p <= 0.8 else 0.94)
    # online outcome RL is unbiased and learns too, from new episodes
    assert m["online_rl_success"] > m["sft_success"] + 0.5
    assert m["sweep_min_online_rl"] > 0.7


def test_claims_hold_at_seed_0():
    check_claims(sim.run(DEFAULT))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)))


def test_deterministic():
    config = sim.Config(sweep=(0.3,), attempts_b=10, online_iterations=3)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_phone_width():
    result = sim.run(sim.Config(sweep=(0.3,), attempts_b=10, online_iterations=3))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
