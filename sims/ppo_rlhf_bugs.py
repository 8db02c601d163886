"""A toy PPO-RLHF loop with five bugs, each found by the check that tells it apart.

Responses are a grid of (quality, length) pairs, length in hundreds of tokens. The reference
(SFT) policy writes medium-length answers, and its better answers are longer. The gold reward
is quality minus a penalty for padding beyond 500 tokens. The reward model is a linear
Bradley-Terry model fitted on preference pairs sampled from the reference and labelled by the
gold reward; it sees quality only through a noisy feature but sees length exactly, so it learns
"longer is better" from the correlation (the length bias of real reward models: Singhal et al.
2023, "A Long Way to Go: Investigating Length Correlations in RLHF", arXiv 2310.03716).

The policy is log-linear in (quality, length) plus a per-response logit, initialised at the
reference (with 1e-3 logit noise, the rounding a bf16 copy of the SFT weights carries). Each
iteration samples a batch and runs epochs of PPO-clip (Schulman et al. 2017, arXiv 1707.06347).
The fixed loop is the standard RLHF recipe (Ziegler et al. 2019, arXiv 1909.08593; Stiennon et
al. 2020; the details of Huang et al. 2024, arXiv 2403.17031): reward-model scores normalised to
mean 0, std 1 on reference samples; a per-sample KL penalty in the reward,
r - beta (log pi_old(y) - log pi_ref(y)) (the k1 estimator); a frozen SFT reference; old
log-probs from the policy being trained; a scalar value baseline and advantages whitened per
batch; clip 0.2; no entropy bonus. Each bug changes one thing, and each has a check that only it
fails:

- old log-probs from the sampler: rollouts drawn at temperature 0.7 and their log-probs recorded
  from that sampler, while training computes log-probs at temperature 1. Check: the probability
  ratio is exactly 1 on the first minibatch (nothing has been updated yet); here it is not.
- wrong reference: the KL is taken to the base model the SFT started from, not the SFT policy
  itself. Check: KL is 0 at step 0 (the policy *is* the reference); here it is not.
- KL sign flipped: the penalty becomes a bonus. Check: a run with the reward set to 0 must keep
  KL near 0 (the penalty pulls the policy back to the reference); here the 1e-3 rounding noise
  is amplified and the KL grows.
- raw reward scale: the reward model's raw scores (std 8) enter unnormalised and advantages are
  not whitened, so a beta tuned for unit rewards is 8x too weak. Check: the reward std on the
  first batch is about 1; here it is 8.
- no KL (beta = 0): nothing anchors the policy, which exploits the reward model's length bias.
  Check: mean response length grows, with none of the four checks above failing.

Length growth is the common symptom of over-optimisation (the raw-scale and flipped-sign bugs
show it too); the other four checks each point at one bug. What is not modelled: one-step
episodes make GAE trivial (pg_baseline covers the baseline), and the step-size bugs (learning
rate, clip range, epochs) are left out to keep one check per bug.

Plot (for a phone): top, the diagnosis chart, variants by checks, a cell red when the check
fails; below it, side by side with one legend, the zero-reward sanity run (KL must stay near 0)
and length growth.

The gold reward is not a diagnostic here: within 100 iterations the over-optimising bugs still
raise the gold reward too (the policy finds quality as well as length), so it is reported in the
metrics but not plotted; the checks are what tell the bugs apart.

Robustness: the asserted claims hold on seeds 0-19 of the default config (slow test).
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import (
    PALETTE,
    Adam,
    Result,
    phone_rows,
    save_png,
    seeded,
    style_panel,
)
from sims.reward_overoptimization import fit_bradley_terry

TITLE = "PPO-RLHF bugs: the check that finds each one"
CAPTION = (
    "Top: one row per bug, one column per check; red fails (ratio not 1 on the first minibatch, "
    "KL not 0 at step 0, KL growing with reward 0, reward std not 1, length growth). On seeds "
    "0-19 every red cell is at least 1.38 times its check's threshold and every other cell at most "
    "0.75 times it (closest: length growth 2.76 and 1.49 against 2). Bottom left: with reward 0 "
    "the fixed loop's KL stays near 0. Bottom right: over-optimising bugs pad their answers."
)

#: Variant name -> (label, settings that differ from the fixed loop).
VARIANTS: dict[str, tuple[str, dict[str, float]]] = {
    "fixed": ("fixed loop", {}),
    "old_logprobs_sampler": ("old log-probs at T=0.7", {"sampler_temperature": 0.7}),
    "wrong_reference": ("KL to the base model", {"wrong_reference": 1.0}),
    "kl_sign_flipped": ("KL sign flipped", {"kl_sign": -1.0}),
    "raw_reward_scale": ("raw reward scale", {"whiten": 0.0, "normalise": 0.0}),
    "no_kl": ("no KL (beta = 0)", {"beta": 0.0}),
}

#: Check name -> (column label, threshold: the check fails above it).
CHECKS: dict[str, tuple[str, float]] = {
    "ratio_dev_first_minibatch": ("ratio\nnot 1", 0.05),
    "kl_step0": ("KL at\nstep 0", 0.02),
    "kl_zero_reward_run": ("KL,\nreward 0", 0.5),
    "reward_std_step0": ("reward\nstd", 2.0),
    "length_growth": ("length\ngrowth", 2.0),
}


@dataclass(frozen=True)
class Config:
    """World, reward model, PPO hyper-parameters and bug magnitudes."""

    quality_levels: int = 11
    """Distinct answer qualities, from -2.5 to 2.5."""
    max_length: int = 12
    """Longest answer, in hundreds of tokens (lengths 1..max_length)."""
    length_quality_slope: float = 1.0
    """How much longer (in hundreds of tokens) the reference writes per unit of quality."""
    padding_start: float = 6.0
    """Length beyond which the gold reward penalises padding."""
    padding_penalty: float = 0.5
    """Gold penalty per squared hundred tokens beyond padding_start."""
    quality_noise: float = 2.0
    """Std of the noise on the quality feature the reward model sees."""
    n_pairs: int = 1000
    """Preference pairs from the reference policy for the reward model."""
    raw_reward_std: float = 8.0
    """Std of the reward model's raw scores on reference samples (normalising divides it out)."""
    iterations: int = 100
    """PPO iterations (sample a batch, then several epochs of updates)."""
    batch: int = 64
    """Responses sampled per iteration and run."""
    epochs: int = 4
    """PPO epochs over each batch (one minibatch per epoch)."""
    lr: float = 0.03
    """Adam learning rate."""
    clip: float = 0.2
    """PPO ratio clip range."""
    beta: float = 1.0
    """KL coefficient of the fixed loop (rewards normalised to unit scale)."""
    init_noise: float = 1e-3
    """Std of the logit noise of the initial policy (a bf16 copy of the reference)."""
    variants: tuple[str, ...] = tuple(VARIANTS)
    """Which variants to run (names of VARIANTS)."""
    replicates: int = 4
    """Independent runs per variant with the real reward; metrics are their means."""
    seed: int = 0
    """Seed for every random generator."""


def build_world(config: Config, gen):
    """Responses, reference log-probs, gold reward and the fitted (standardised) reward model."""
    import torch
    import torch.nn.functional as F

    quality_axis = torch.linspace(-2.5, 2.5, config.quality_levels)
    length_axis = torch.arange(1, config.max_length + 1, dtype=torch.float32)
    quality, length = (
        grid.flatten() for grid in torch.meshgrid(quality_axis, length_axis, indexing="ij")
    )
    typical_length = 3.0 + config.length_quality_slope * quality
    log_ref = F.log_softmax(-0.5 * quality**2 - 0.5 * (length - typical_length) ** 2, 0)
    gold = quality - config.padding_penalty * F.relu(length - config.padding_start) ** 2

    seen_quality = quality + config.quality_noise * torch.randn(quality.shape, generator=gen)
    features = torch.stack([seen_quality, length / 4], 1)
    ref_probs = log_ref.exp()
    first = torch.multinomial(ref_probs, config.n_pairs, True, generator=gen)
    second = torch.multinomial(ref_probs, config.n_pairs, True, generator=gen)
    labels = (
        torch.rand(config.n_pairs, generator=gen) < torch.sigmoid(gold[first] - gold[second])
    ).float()
    torch.manual_seed(config.seed)
    reward_model = torch.nn.Linear(2, 1)
    fit_bradley_terry(reward_model, features[first], features[second], labels, steps=300, lr=0.03)
    with torch.no_grad():
        proxy = reward_model(features).squeeze(-1)
    proxy = proxy - ref_probs @ proxy
    proxy = proxy / (ref_probs @ proxy**2).sqrt()  # unit std under the reference
    gold = gold - ref_probs @ gold  # gold gain over the reference
    weights = reward_model.weight.flatten()
    return {
        "quality": quality,
        "length": length,
        "log_ref": log_ref,
        "gold": gold,
        "proxy": proxy,
        "length_weight": float(weights[1] / 4),
        "quality_weight": float(weights[0]),
    }


def run(config: Config = Config()) -> Result:
    """Run every variant side by side (vectorised), plus one zero-reward run per variant."""
    import torch
    import torch.nn.functional as F

    gen = seeded(config.seed)
    world = build_world(config, gen)
    log_ref, proxy, gold, length = world["log_ref"], world["proxy"], world["gold"], world["length"]
    quality = world["quality"]
    # The base model the SFT policy was tuned from: same quality preference, no length habit.
    log_base = F.log_softmax(-0.5 * quality**2 - 0.5 * (length - 3.0) ** 2, 0)
    n_variants = len(config.variants)
    per_variant = config.replicates + 1  # the last run of each variant gets reward 0
    n_runs = n_variants * per_variant

    def setting(key: str, default: float) -> torch.Tensor:
        values = torch.tensor([VARIANTS[name][1].get(key, default) for name in config.variants])
        return values.repeat_interleave(per_variant)

    whiten = setting("whiten", 1.0).bool()[:, None]
    normalise = setting("normalise", 1.0).bool()[:, None]
    kl_sign = setting("kl_sign", 1.0)[:, None]
    beta = setting("beta", config.beta)[:, None]
    sampler_temperature = setting("sampler_temperature", 1.0)[:, None]
    wrong_reference = setting("wrong_reference", 0.0).bool()[:, None]
    log_ref_used = torch.where(wrong_reference, log_base, log_ref)  # [run, response]
    zero_reward = (torch.arange(n_runs) % per_variant == config.replicates)[:, None]

    features = torch.stack([quality, length / 4], 1)
    tilt = torch.zeros(n_runs, 2, requires_grad=True)
    offset = config.init_noise * torch.randn(n_runs, len(proxy), generator=gen)
    per_response = offset.clone().requires_grad_(True)
    optimiser = Adam([([tilt, per_response], config.lr)])

    def logits():
        return log_ref + tilt @ features.T + per_response

    raw_scores = proxy * config.raw_reward_std  # the reward model's own, unnormalised scale
    value = torch.zeros(n_runs, 1)
    history, first = [], {}
    for iteration in range(config.iterations):
        with torch.no_grad():
            log_train = F.log_softmax(logits(), 1)  # what the training step computes
            log_sampler = F.log_softmax(logits() / sampler_temperature, 1)
            samples = torch.multinomial(log_sampler.exp(), config.batch, True, generator=gen)
            # Old log-probs as recorded at rollout time: from the sampler. Only when the
            # sampler runs at T = 1 do they equal the training log-probs (ratio 1 at start).
            log_old = log_sampler.gather(1, samples)
            scores = torch.where(zero_reward, 0.0, raw_scores[samples])
            score = torch.where(whiten, scores / config.raw_reward_std, scores)
            kl_sample = log_old - log_ref_used.gather(1, samples)  # k1 estimator per sample
            reward = score - kl_sign * beta * kl_sample
            advantage = reward - value
            whitened = (advantage - advantage.mean(1, keepdim=True)) / (
                advantage.std(1, keepdim=True) + 1e-8
            )
            advantage = torch.where(normalise, whitened, advantage)
            value += 0.2 * (reward.mean(1, keepdim=True) - value)
            kl_true = (log_train.exp() * (log_train - log_ref_used)).sum(1)
        for epoch in range(config.epochs):
            log_new = F.log_softmax(logits(), 1).gather(1, samples)
            ratio = (log_new - log_old).exp()
            if iteration == 0 and epoch == 0:
                first["ratio_dev"] = (ratio - 1).abs().mean(1).detach()
                first["kl"] = kl_true.clone()
                first["reward_std"] = score.std(1)
            surrogate = torch.minimum(
                ratio * advantage, ratio.clamp(1 - config.clip, 1 + config.clip) * advantage
            ).mean(1)
            optimiser.zero_grad()
            (-surrogate.sum()).backward()
            optimiser.step()
        with torch.no_grad():
            log_now = F.log_softmax(logits(), 1)
            probs = log_now.exp()
            history.append(
                torch.stack(
                    [
                        (probs * (log_now - log_ref_used)).sum(1),  # the KL the loop logs
                        probs @ gold,
                        probs @ proxy,
                        probs @ length,
                    ]
                )
            )
    history_t = torch.stack(history).unflatten(2, (n_variants, per_variant))  # [it, q, v, run]
    real = history_t[..., : config.replicates].mean(3)  # [iteration, quantity, variant]
    zero_kl = history_t[:, 0, :, -1]  # [iteration, variant], the zero-reward runs
    firsts = {key: value.unflatten(0, (n_variants, per_variant)) for key, value in first.items()}
    ref_probs = log_ref.exp()
    length_ref = float(ref_probs @ length)
    metrics = {
        "length_ref": length_ref,
        "reward_model_length_weight": world["length_weight"],
        "gold_of_proxy_argmax": float(gold[proxy.argmax()]),
        "kl_sft_to_base": float((ref_probs * (log_ref - log_base)).sum()),
        "replicates": float(config.replicates),
    }
    for index, name in enumerate(config.variants):
        real_runs = slice(0, config.replicates)
        metrics |= {
            f"ratio_dev_first_minibatch_{name}": float(
                firsts["ratio_dev"][index, real_runs].mean()
            ),
            f"kl_step0_{name}": float(firsts["kl"][index, real_runs].mean()),
            f"kl_zero_reward_run_{name}": float(zero_kl[-1, index]),
            f"reward_std_step0_{name}": float(firsts["reward_std"][index, real_runs].mean()),
            f"length_growth_{name}": float(real[-1, 3, index]) - length_ref,
            f"kl_final_{name}": float(real[-1, 0, index]),
            f"gold_final_{name}": float(real[-1, 1, index]),
            f"proxy_final_{name}": float(real[-1, 2, index]),
        }
    series = {
        "variants": list(config.variants),
        "labels": [VARIANTS[name][0] for name in config.variants],
        "checks": list(CHECKS),
        "gold": real[:, 1].T.tolist(),
        "length": (real[:, 3].T - length_ref).tolist(),
        "kl_zero_reward": zero_kl.T.tolist(),
    }
    return Result(metrics=metrics, series=series)


def failing(metrics: dict[str, float], variant: str) -> list[str]:
    """The checks a variant fails (value above the check's threshold)."""
    return [
        check
        for check, (_, threshold) in CHECKS.items()
        if metrics[f"{check}_{variant}"] > threshold
    ]


def plot(result: Result) -> bytes:
    """The diagnosis chart (variants x checks), the zero-reward run, and length growth."""
    import numpy as np
    from matplotlib.colors import ListedColormap

    metrics, series = result.metrics, result.series
    names, labels, checks = series["variants"], series["labels"], series["checks"]
    fig, axes = phone_rows(
        [["chart", "chart"], ["zero_run", "lengths"]],
        row_heights=[3.9, 4.4],
        title="Each PPO-RLHF bug fails its own check; the fixed loop passes them all",
    )
    chart, zero_run, lengths = axes["chart"], axes["zero_run"], axes["lengths"]
    fails = np.array([[check in failing(metrics, name) for check in checks] for name in names])
    chart.imshow(fails, cmap=ListedColormap(["#e3f2e3", "#f4a6a6"]), vmin=0, vmax=1, aspect="auto")
    for row, name in enumerate(names):
        for column, check in enumerate(checks):
            value = metrics[f"{check}_{name}"]
            chart.text(
                column,
                row,
                f"{value:.2f}" if abs(value) < 10 else f"{value:.0f}",
                ha="center",
                va="center",
                fontsize=16,
                fontweight="bold" if fails[row, column] else "normal",
            )
    chart.set_xticks(range(len(checks)), [CHECKS[check][0] for check in checks])
    chart.xaxis.tick_top()
    chart.set_yticks(range(len(names)), labels)
    chart.tick_params(length=0)
    chart.grid(False)
    chart.set_xlabel("red = the check fails")

    # The two runs below share one legend: a variant keeps its colour in both.
    colours = {
        "fixed": PALETTE[2],
        "wrong_reference": PALETTE[4],
        "kl_sign_flipped": PALETTE[1],
        "raw_reward_scale": PALETTE[3],
        "no_kl": PALETTE[0],
    }
    handles = {}
    for ax, key, shown in (
        (zero_run, "kl_zero_reward", ("fixed", "wrong_reference", "kl_sign_flipped")),
        (lengths, "length", ("fixed", "raw_reward_scale", "kl_sign_flipped", "no_kl")),
    ):
        for name in shown:
            if name in names:
                index = names.index(name)
                (handles[labels[index]],) = ax.plot(series[key][index], color=colours[name])
    lengths.axhline(CHECKS["length_growth"][1], color="black", lw=1.5, ls=":")
    # Half-width panels: titles wrapped by hand.
    style_panel(zero_run, "Reward 0: KL must\nstay near 0", "PPO iteration", "KL")
    style_panel(lengths, "Length growth (the\nRM likes length)", "PPO iteration", "+100 tokens")
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=2, frameon=False)
    return save_png(fig)
