"""A toy PPO-RLHF loop with switchable bugs, each leaving its own fingerprint.

Responses are a grid of (quality, length) pairs, length in hundreds of tokens. The reference
(SFT) policy writes medium-length answers, and its better answers are longer. The gold reward
is quality minus a penalty for padding beyond 500 tokens. The reward model is a linear
Bradley-Terry model fitted on preference pairs sampled from the reference and labelled by the
gold reward; it sees quality only through a noisy feature but sees length exactly, so it learns
"longer is better" from the correlation (the length bias of real reward models: Singhal et al.
2023, "A Long Way to Go: Investigating Length Correlations in RLHF", arXiv 2310.03716).

The policy is log-linear in (quality, length) plus a per-response logit, initialised at the
reference. Each iteration samples a batch and runs a few epochs of PPO-clip (Schulman et al.
2017, arXiv 1707.06347) with Adam, several independent runs per variant side by side. The fixed
loop whitens the reward scale (divides by a running std), subtracts a scalar value baseline,
normalises advantages per batch, adds beta KL(pi || pi_ref) to the loss (exact, since the whole
response distribution is at hand, as a full-vocabulary per-token KL would be), clips at 0.2 and
adds a small entropy bonus (implementation details as in Huang et al. 2024, "The N+
Implementation Details of RLHF with PPO", arXiv 2403.17031). Each bug changes one thing:

- raw reward, advantages not normalised: the reward model's raw scores (std ~8) drive the
  policy-gradient term, so a beta tuned for unit-scale rewards is 8x too weak: KL explodes and
  the policy pads its answers (proxy up, gold down);
- KL sign flipped: the penalty becomes a bonus for leaving the reference: KL explodes;
- adaptive KL target mis-set to 30 nats (the controller of Ziegler et al. 2019, arXiv
  1909.08593): it keeps lowering beta toward 0 and the same over-optimisation follows, later;
- learning rate x30 and clip range 10: a few huge steps put all mass on responses sampled
  early: entropy collapses;
- no KL and no entropy bonus: nothing holds the entropy up or the policy near the reference:
  entropy collapses and KL rises.

Not modelled: episodes are one step, so GAE reduces to A = R - V and its bugs (wrong lambda,
bootstrapping through the end of a sequence) do not exist here; and with Adam and ratio
clipping a missing baseline costs variance rather than changing the update's direction, so in
this toy it leaves no clear mark (``pg_baseline`` shows what a baseline does to a plain
policy-gradient step).

Plot: final KL to the reference, final entropy, and the gain of proxy and gold reward over the
reference per variant (means over the runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, figure_png, new_figure, seeded, style_axes
from sims.reward_overoptimization import fit_bradley_terry

TITLE = "PPO-RLHF bugs and their symptoms"
CAPTION = (
    "Each row is one PPO variant. The fixed loop keeps KL small, entropy high and raises "
    "the gold reward. Unwhitened reward, a flipped KL sign or a mis-set KL target blow up the KL "
    "(the proxy rises while gold falls); a huge step size or no KL/entropy term collapse entropy."
)

#: Variant name -> (label, settings that differ from the fixed loop).
VARIANTS: dict[str, tuple[str, dict[str, float]]] = {
    "fixed": ("fixed loop", {}),
    "raw_reward_scale": ("raw reward, adv. not normalised", {"whiten": 0.0, "normalise": 0.0}),
    "kl_sign_flipped": ("KL sign flipped", {"kl_sign": -1.0}),
    "kl_target_too_high": ("adaptive KL, target 30", {"adaptive": 1.0}),
    "step_too_large": ("lr x30, clip 10", {"lr_scale": 30.0, "clip": 10.0}),
    "no_kl_no_entropy": ("no KL, no entropy bonus", {"beta": 0.0, "entropy_bonus": 0.0}),
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
    padding_start: float = 5.0
    """Length beyond which the gold reward penalises padding."""
    padding_penalty: float = 0.2
    """Gold penalty per squared hundred tokens beyond padding_start."""
    quality_noise: float = 1.0
    """Std of the noise on the quality feature the reward model sees."""
    n_pairs: int = 1000
    """Preference pairs from the reference policy for the reward model."""
    raw_reward_std: float = 8.0
    """Std of the reward model's raw scores on reference samples (whitening divides it out)."""
    iterations: int = 150
    """PPO iterations (sample a batch, then several epochs of updates)."""
    batch: int = 64
    """Responses sampled per iteration and variant."""
    epochs: int = 4
    """PPO epochs over each batch."""
    lr: float = 0.03
    """Adam learning rate of the fixed loop."""
    clip: float = 0.2
    """PPO ratio clip range of the fixed loop."""
    beta: float = 0.5
    """KL coefficient of the fixed loop (rewards are whitened to unit scale)."""
    entropy_bonus: float = 0.01
    """Entropy bonus coefficient of the fixed loop."""
    kl_target: float = 30.0
    """The mis-set target (nats) of the adaptive-KL variant."""
    kl_controller_gain: float = 0.1
    """Adaptive controller gain: beta *= 1 + rate * clip(KL / target - 1, -0.2, 0.2)."""
    variants: tuple[str, ...] = tuple(VARIANTS)
    """Which variants to run (names of VARIANTS)."""
    replicates: int = 4
    """Independent runs per variant (one batch dimension); metrics are their means."""
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
    """Run every variant of the PPO loop side by side (vectorised over variants)."""
    import torch
    import torch.nn.functional as F

    gen = seeded(config.seed)
    world = build_world(config, gen)
    log_ref, proxy, gold, length = world["log_ref"], world["proxy"], world["gold"], world["length"]
    n_variants = len(config.variants)
    n_runs = n_variants * config.replicates  # row r is variant r // replicates

    def setting(key: str, default: float) -> torch.Tensor:
        values = torch.tensor([VARIANTS[name][1].get(key, default) for name in config.variants])
        return values.repeat_interleave(config.replicates)

    whiten = setting("whiten", 1.0).bool()
    normalise = setting("normalise", 1.0).bool()[:, None]
    kl_sign = setting("kl_sign", 1.0)
    adaptive = setting("adaptive", 0.0).bool()
    lr = (setting("lr_scale", 1.0) * config.lr)[:, None]
    clip = setting("clip", config.clip)[:, None]
    entropy_bonus = setting("entropy_bonus", config.entropy_bonus)
    beta = setting("beta", config.beta)

    features = torch.stack([world["quality"], length / 4], 1)
    tilt = torch.zeros(n_runs, 2, requires_grad=True)
    per_response = torch.zeros(n_runs, len(proxy), requires_grad=True)
    params = [tilt, per_response]

    def log_policy():
        return F.log_softmax(log_ref + tilt @ features.T + per_response, 1)

    first_moment = [torch.zeros_like(p) for p in params]
    second_moment = [torch.zeros_like(p) for p in params]
    raw_scores = proxy * config.raw_reward_std
    value = torch.zeros(n_runs)
    reward_std = torch.ones(n_runs)
    history = []
    adam_step = 0
    for iteration in range(config.iterations):
        with torch.no_grad():
            log_old = log_policy()
            samples = torch.multinomial(log_old.exp(), config.batch, True, generator=gen)
            log_old_sampled = log_old.gather(1, samples)
            scores = raw_scores[samples]
            batch_std = scores.std(1)
            reward_std = batch_std if iteration == 0 else 0.9 * reward_std + 0.1 * batch_std
            scale = torch.where(whiten, reward_std, torch.ones_like(reward_std))
            reward = scores / scale[:, None]
            advantage = reward - value[:, None]
            normalised = (advantage - advantage.mean(1, keepdim=True)) / (
                advantage.std(1, keepdim=True) + 1e-8
            )
            advantage = torch.where(normalise, normalised, advantage)
            value += 0.2 * (reward.mean(1) - value)
            kl_now = (log_old.exp() * (log_old - log_ref)).sum(1)
            error = (kl_now / config.kl_target - 1).clamp(-0.2, 0.2)
            beta = torch.where(adaptive, beta * (1 + config.kl_controller_gain * error), beta)
        for _ in range(config.epochs):
            log_new = log_policy()
            ratio = (log_new.gather(1, samples) - log_old_sampled).exp()
            surrogate = torch.minimum(
                ratio * advantage, ratio.clamp(1 - clip, 1 + clip) * advantage
            ).mean(1)
            entropy = -(log_new.exp() * log_new).sum(1)
            kl = (log_new.exp() * (log_new - log_ref)).sum(1)
            loss = -(surrogate - kl_sign * beta * kl + entropy_bonus * entropy).sum()
            grads = torch.autograd.grad(loss, params)
            adam_step += 1  # Adam by hand: its learning rate differs per variant
            with torch.no_grad():
                for p, g, m, v in zip(params, grads, first_moment, second_moment):
                    m.mul_(0.9).add_(g, alpha=0.1)
                    v.mul_(0.999).addcmul_(g, g, value=0.001)
                    m_hat = m / (1 - 0.9**adam_step)
                    v_hat = v / (1 - 0.999**adam_step)
                    p -= lr * m_hat / (v_hat.sqrt() + 1e-8)
        with torch.no_grad():
            log_now = log_policy()
            probs = log_now.exp()
            history.append(
                torch.stack(
                    [
                        (probs * (log_now - log_ref)).sum(1),
                        -(probs * log_now).sum(1),
                        probs @ gold,
                        probs @ proxy,
                        probs @ length,
                        beta,
                    ]
                )
            )
    # [iteration, quantity, variant], averaged over the replicates of each variant
    history_t = torch.stack(history).unflatten(2, (n_variants, config.replicates)).mean(3)
    ref_probs = log_ref.exp()
    metrics = {
        "entropy_ref": float(-(ref_probs * log_ref).sum()),
        "length_ref": float(ref_probs @ length),
        "reward_model_length_weight": world["length_weight"],
        "reward_model_quality_weight": world["quality_weight"],
        "gold_of_proxy_argmax": float(gold[proxy.argmax()]),
        "replicates": float(config.replicates),
    }
    for index, name in enumerate(config.variants):
        final = history_t[-1, :, index]
        metrics |= {
            f"kl_final_{name}": float(final[0]),
            f"entropy_final_{name}": float(final[1]),
            f"gold_final_{name}": float(final[2]),
            f"proxy_final_{name}": float(final[3]),
            f"length_final_{name}": float(final[4]),
            f"beta_final_{name}": float(final[5]),
            f"gold_peak_{name}": float(history_t[:, 2, index].max()),
        }
    series = {
        "variants": list(config.variants),
        "labels": [VARIANTS[name][0] for name in config.variants],
        "kl": history_t[:, 0].T.tolist(),
        "entropy": history_t[:, 1].T.tolist(),
        "gold": history_t[:, 2].T.tolist(),
        "proxy": history_t[:, 3].T.tolist(),
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Three bar panels: final KL, final entropy, and proxy vs gold reward change."""
    import numpy as np

    metrics, series = result.metrics, result.series
    names, labels = series["variants"], series["labels"]
    positions = np.arange(len(names))[::-1]
    colours = [PALETTE[2] if name == "fixed" else PALETTE[1] for name in names]
    fig, (kl_ax, entropy_ax, reward_ax) = new_figure(1, 3, height_px=520)

    kl_ax.barh(positions, [metrics[f"kl_final_{n}"] for n in names], color=colours)
    kl_ax.set_yticks(positions, labels, fontsize=10)
    style_axes(kl_ax, "KL to reference", "KL (nats)", "")

    entropy_ax.barh(positions, [metrics[f"entropy_final_{n}"] for n in names], color=colours)
    entropy_ax.axvline(metrics["entropy_ref"], color="black", ls=":", lw=1.2, label="reference")
    entropy_ax.set_yticks(positions, [])
    style_axes(entropy_ax, "Policy entropy", "entropy (nats)", "")

    height = 0.38
    reward_ax.barh(
        positions + height / 2,
        [metrics[f"proxy_final_{n}"] for n in names],
        height,
        color=PALETTE[0],
        label="proxy (reward model)",
    )
    reward_ax.barh(
        positions - height / 2,
        [metrics[f"gold_final_{n}"] for n in names],
        height,
        color=PALETTE[3],
        label="gold (true)",
    )
    reward_ax.axvline(0.0, color="black", lw=0.8)
    reward_ax.set_yticks(positions, [])
    style_axes(reward_ax, "Reward gain over reference", "reward (reference std units)", "")
    reward_ax.legend(fontsize=9, loc="lower right")
    for ax in (kl_ax, entropy_ax, reward_ax):
        ax.set_ylim(-1.9, len(names) - 0.5)  # a free row at the bottom for the legends
    replicates = metrics["replicates"]
    return figure_png(
        fig,
        suptitle=f"Toy PPO-RLHF, one bug per row (green = fixed loop; mean of {replicates:g} runs)",
    )
