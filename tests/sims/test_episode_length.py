"""episode_length: long episodes fill the data with the sink and success from the start collapses;
cutting short episodes as if terminal biases the start value low."""

from __future__ import annotations

import pytest

from sims import episode_length as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics."""
    # same data budget: long episodes collapse success from the start ...
    assert m["success_shortest"] > 0.9
    assert m["success_longest"] < 0.2
    # ... because most data comes from the sink and the start is barely seen
    assert m["sink_share_longest"] > 0.9
    assert m["sink_share_shortest"] < 0.2
    assert m["start_share_shortest"] > 10 * m["start_share_longest"]
    # time-out treated as terminal biases V(start) low at short H; bootstrapping does not
    assert m["value_bias_terminal_shortest"] < -0.15
    assert abs(m["value_bias_bootstrap_shortest"]) < 0.05


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_deterministic():
    config = sim.Config(episode_lengths=(10, 100), total_steps=300, seeds=2, eval_rollouts=10)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_phone_width():
    config = sim.Config(episode_lengths=(10, 100), total_steps=300, seeds=2, eval_rollouts=10)
    assert png_size(sim.plot(sim.run(config)))[0] == PHONE_WIDTH_PX
