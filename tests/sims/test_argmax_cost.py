"""argmax_cost: grid search is k^d and blows the 5 ms budget; CEM is fast on a state critic but
approximate at d = 14 and slow on images and Bellman batches; a trained actor is fast and
near-best (rl-24).

Action qualities and evaluation counts are exact for a seed and asserted on seeds 0-19 (slow
test; two seeds fast). Timings depend on the machine and its load, so only loose one-sided
bounds are asserted, chosen with a wide margin over what a busy 2-core machine measured.
"""

from __future__ import annotations

import pytest

from sims import argmax_cost as sim

FAST_SEEDS = (0, 5)


def assert_claims(m: dict[str, float]) -> None:
    assert m["grid_evals_target_dim"] == 3**14  # 4.8 million Q evaluations per action
    # Exact for the seed: CEM improves with iterations but stays approximate in 14 dimensions;
    # it beats random search with the same 192 evaluations; the trained actor is near-best.
    assert m["quality_cem1"] < m["quality_cem2"] < m["quality_cem3"] < 0.95
    assert m["quality_random"] < m["quality_cem3"]
    assert m["quality_actor"] > 0.97 > m["quality_cem3"]
    # Timings (loose): the grid is over the budget at d = 14 by orders of magnitude, and by
    # d = 10 already; one CEM on the state critic and the actor fit inside it.
    assert m["grid_seconds_target_dim_extrapolated"] > 20 * sim.BUDGET_S
    assert m["grid_first_dim_over_budget"] <= 10
    assert m["seconds_cem_state"] < sim.BUDGET_S
    assert m["seconds_actor"] < m["seconds_cem_state"]
    # CEM's real costs: a vision critic's passes and a batch of Bellman targets.
    assert m["seconds_cem_vision"] > 3 * m["seconds_cem_state"]
    assert m["seconds_cem_bellman_batch"] > 10 * m["seconds_cem_state"]


@pytest.mark.parametrize("seed", FAST_SEEDS)
def test_claims_on_the_default_config(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_on_seeds_0_to_19(seed):
    assert_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_grid_counts_every_action():
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    critic = sim.StateCritic(2, 3, 8, generator)
    assert sim.grid_argmax(critic, torch.zeros(1, 2), 3, 4) == 4**3


def test_cem_finds_the_peak_of_a_bowl():
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    target = torch.tensor([[0.3, -0.5]])

    def bowl(states, actions):
        return -((actions - target) ** 2).sum(-1)

    found = sim.cem(bowl, torch.zeros(1, 1), 2, 64, 6, 5, generator)
    assert torch.allclose(found, target, atol=0.05)


def test_quality_is_deterministic():
    config = sim.Config(max_measured_grid_dim=3, actor_steps=20, optimum_steps=20, repeats=1)
    first, second = sim.run(config).metrics, sim.run(config).metrics
    for key in ("quality_random", "quality_cem3", "quality_actor", "grid_evals_target_dim"):
        assert first[key] == second[key]
