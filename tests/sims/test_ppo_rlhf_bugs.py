"""ppo_rlhf_bugs: each bug leaves its symptom; the fixed loop does not."""

import pytest

from sims import ppo_rlhf_bugs as sim
from sims.common import png_size

KL_BUGS = ("raw_reward_scale", "kl_sign_flipped", "kl_target_too_high")
COLLAPSE_BUGS = ("step_too_large", "no_kl_no_entropy")


@pytest.fixture(scope="module", params=[0, 1], ids=lambda seed: f"seed{seed}")
def metrics(request):
    return sim.run(sim.Config(iterations=120, replicates=3, seed=request.param)).metrics


def test_reward_model_learned_the_length_bias(metrics):
    assert metrics["reward_model_length_weight"] > 0.1
    assert metrics["gold_of_proxy_argmax"] < 0.0  # its favourite answer is a padded one


def test_fixed_loop_is_healthy(metrics):
    assert metrics["kl_final_fixed"] < 5.0
    assert metrics["entropy_final_fixed"] > 0.45 * metrics["entropy_ref"]
    assert metrics["gold_final_fixed"] > 0.5  # gold went up from the reference (0)


def test_kl_bugs_explode_the_kl_and_hack_the_proxy(metrics):
    fixed = {key: metrics[f"{key}_fixed"] for key in ("kl_final", "proxy_final", "gold_final")}
    for bug in KL_BUGS:
        assert metrics[f"kl_final_{bug}"] > 1.5 * fixed["kl_final"], bug
        assert metrics[f"proxy_final_{bug}"] > fixed["proxy_final"], bug
        assert metrics[f"length_final_{bug}"] > metrics["length_final_fixed"], bug
    mean_gold = sum(metrics[f"gold_final_{bug}"] for bug in KL_BUGS) / len(KL_BUGS)
    assert mean_gold < fixed["gold_final"] - 0.5  # proxy up, gold down
    assert metrics["beta_final_kl_target_too_high"] < 0.2 * metrics["beta_final_fixed"]


def test_step_and_entropy_bugs_collapse_entropy(metrics):
    for bug in COLLAPSE_BUGS:
        assert metrics[f"entropy_final_{bug}"] < 0.3 * metrics["entropy_final_fixed"], bug
    assert metrics["kl_final_no_kl_no_entropy"] > 1.5 * metrics["kl_final_fixed"]


def test_deterministic():
    tiny = sim.Config(iterations=10, replicates=1, batch=16, epochs=2)
    assert sim.run(tiny).metrics == sim.run(tiny).metrics


def test_plot_is_a_wide_png():
    result = sim.run(sim.Config(iterations=5, replicates=1, batch=16, epochs=1))
    width, _ = png_size(sim.plot(result))
    assert 950 <= width <= 1050
