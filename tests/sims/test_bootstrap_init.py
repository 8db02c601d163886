"""bootstrap_init: from V0 = -1000, TD's errors look small while the values stay ~1000 off; the
correction crawls back about one state per sweep; Monte Carlo forgets V0 in a few episodes."""

from __future__ import annotations

import pytest

from sims import bootstrap_init as sim
from sims.common import PHONE_WIDTH_PX, png_size

DEFAULT = sim.Config()


def check_claims(m: dict[str, float], config: sim.Config = DEFAULT) -> None:
    """Every claim of the caption, on one run's metrics."""
    gap = (1 - config.discount) * -config.initial_value  # r + gamma V0 - V0 = r + 10
    assert m["initial_value_error"] > 900
    # a non-terminal TD error is r + 10 at initialisation: small ...
    assert abs(m["td_nonterminal_delta_first_episode"] - gap) < 1.0
    # ... only the step into the terminal state shows the 1000
    assert m["td_terminal_delta_first_episode"] > 900
    # while the TD error stays small the values stay ~1000 off, for half the chain's sweeps
    assert m["td_delta_over_value_error_max_early"] < 0.06
    assert m["td_value_error_halfway"] > 0.5 * m["initial_value_error"]
    # MC's error signal is ~1000 on every state (the huge step); one update removes alpha of it
    assert m["mc_smallest_first_error_signal"] > 900
    assert m["mc_value_error_first_episode"] < (1 - config.step_size + 0.05) * 1000
    # TD needs episodes in proportion to d (about 1/alpha per state); MC's count ignores d
    per_state = 1 / config.step_size
    assert 0.8 * per_state < m["td_episodes_per_state"] < 1.25 * per_state
    assert m["td_episodes_longest_chain"] > 8 * m["mc_episodes_max"]
    assert m["mc_episodes_max"] - m["mc_episodes_min"] <= 1
    assert m["mc_episodes_max"] <= 10  # a few episodes
    # once both forgot V0, TD's lower variance gives it the lower floor
    assert m["td_final_error"] < m["mc_final_error"]


def test_claims_hold_at_seed_0():
    check_claims(sim.run(DEFAULT).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_first_td_error_is_r_plus_ten_not_a_thousand():
    """The arithmetic of the card, on a chain with no reward noise."""
    config = sim.Config(reward_noise=0.0, episodes=1, chain_length=4)
    trace = sim.learn("td", 4, config, __import__("numpy").random.default_rng(0))
    assert trace["nonterminal"][0] == pytest.approx(10.0)  # 0 + 0.99 (-1000) + 1000
    assert trace["terminal"][0] == pytest.approx(1001.0)  # 1 + 0 + 1000


def test_deterministic():
    config = sim.Config(episodes=30, scaling_lengths=(5, 10))
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_phone_width():
    config = sim.Config(episodes=40, scaling_lengths=(5, 10))
    assert png_size(sim.plot(sim.run(config)))[0] == PHONE_WIDTH_PX
