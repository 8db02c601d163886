"""dpo_pair_labels: verifier pairs raise accuracy; a length-biased judge raises length instead;
pairs the verifier cannot order carry no signal."""

from __future__ import annotations

import pytest

from sims import dpo_pair_labels as sim
from sims.common import PHONE_WIDTH_PX, png_size


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics (6 worlds)."""
    # verifier labels: accuracy up toward the best reachable, length unchanged
    assert m["verifier_accuracy_gain"] > 0.3
    assert abs(m["verifier_length_gain"]) < 0.2
    assert m["initial_accuracy"] + m["verifier_accuracy_gain"] <= m["best_accuracy"] + 1e-6
    # length-biased self-judge: length up, accuracy not
    assert m["self_judge_length_gain"] > 1.0
    assert m["self_judge_accuracy_gain"] < m["verifier_accuracy_gain"] / 4
    # both-right / both-wrong pairs alone: no signal about correctness
    assert abs(m["ties_only_accuracy_gain"]) < m["verifier_accuracy_gain"] / 2
    # as the policy improves, fewer of its own pairs have exactly one right answer
    assert m["informative_share_last_round"] < m["informative_share_first_round"] / 3


def test_claims_hold_at_seed_0():
    check_claims(sim.run(sim.Config()).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_claims_hold_on_seeds_0_to_19(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_plot_is_phone_width():
    result = sim.run(sim.Config(train_prompts=16, test_prompts=16, seeds=2, rounds=2))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
