"""Cross-prompt preference pairs teach a reward model prompt difficulty, not response quality.

Synthetic preference data with a gold quality function. Each prompt has a topic vector z; its
difficulty shifts the gold score of every response to it by c = s * u.z (easy prompts get
high scores whatever the answer). Each response has quality features q (gold within-prompt score
w.q) and style features that echo its prompt's topic, t = z + noise (a response's wording gives
away what it is about). A Bradley-Terry reward model r(x) = theta.[q, t] is fitted by maximum
likelihood, P(A > B) = sigmoid(r(A) - r(B)), on the same number of labels built two ways:
same-prompt pairs (two answers to one prompt: the difficulty cancels in the comparison, so only
quality explains the labels, as in InstructGPT's comparisons, Ouyang et al. 2022,
arXiv 2203.02155) or cross-prompt pairs (an answer to X vs an answer to Y: the label is driven
by c_X - c_Y, which the style features predict, and the quality difference is a small term inside
a saturated sigmoid that carries little Fisher information). The cross-prompt model puts its
weight on the topic/style features; within a prompt those only add noise, so its held-out
within-prompt ranking accuracy falls toward chance as the spread of prompt difficulty grows.
The policy then exploits whatever response features carry the prompt (length, topic, format).
DPO on cross-prompt pairs is misspecified rather than undefined: its implicit reward
beta log(pi/pi_ref) equals r(x, y) - beta log Z(x), and across prompts the term
beta (log Z(x_A) - log Z(x_B)) is silently dropped (Rafailov et al. 2023, arXiv 2305.18290).
(Bradley & Terry 1952, "Rank analysis of incomplete block designs".) Top: within-prompt
pairwise accuracy vs difficulty spread at equal label budget. Bottom: share of the reward
model's weight on the prompt-topic features.

This module also holds the Bradley-Terry fitter and ranking metric the other preference sims use.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, seeded, style_panel

TITLE = "Cross-prompt preference pairs: the reward model learns the prompt"
CAPTION = (
    "Same number of labels. Pairs within one prompt teach response quality; pairs across prompts "
    "are decided mostly by prompt difficulty, so the reward model learns topic features and its "
    "within-prompt ranking falls toward chance (0.5) as difficulty spread grows."
)


@dataclass(frozen=True)
class Config:
    """Data generator, label budget and the difficulty spreads to sweep."""

    n_quality_features: int = 6
    """Dimensions of q; the gold within-prompt score is w.q with |w| = 1."""
    n_topic_features: int = 4
    """Dimensions of a prompt's topic z (and of each response's style t = z + noise)."""
    style_noise: float = 0.5
    """Std of the per-response noise in t around the prompt topic."""
    difficulty_spreads: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
    """s: std of prompt difficulty c = s * u.z, in units of the within-prompt quality std."""
    label_budget: int = 400
    """Preference labels per reward model (the same for both pair types)."""
    label_sharpness: float = 2.0
    """beta in P(A > B) = sigmoid(beta * (gold_A - gold_B)): annotator noise (lower = noisier)."""
    train_prompts: int = 100
    """Prompts the training pairs are drawn from."""
    test_prompts: int = 100
    """Held-out prompts for the within-prompt ranking accuracy."""
    responses_per_prompt: int = 8
    """Responses per prompt (training pool and held-out ranking)."""
    l2: float = 1.0
    """Ridge penalty of the reward-model fit (keeps separable fits finite)."""
    seeds: int = 6
    """Independent datasets per setting, fitted in one batch."""
    seed: int = 0
    """Seed for every random generator."""


def fit_bradley_terry(feature_diffs, labels, l2: float = 1.0, weights=None, iterations: int = 25):
    """Batched maximum-likelihood Bradley-Terry fit of a linear reward r(x) = theta.x.

    feature_diffs: (batch, n, d) = x_A - x_B; labels: (batch, n), 1 if A was preferred (values
    in [0, 1] are allowed, e.g. vote shares); weights: optional (batch, n) per-pair weights, 0 to
    drop a pair. Minimises sum_i weight_i * BCE(sigmoid(theta.d_i), y_i) + l2/2 |theta|^2 by
    Newton's method (IRLS), which converges in a few steps for this convex loss.
    """
    import torch

    batch, n, dim = feature_diffs.shape
    if weights is None:
        weights = torch.ones(batch, n, dtype=feature_diffs.dtype)
    theta = torch.zeros(batch, dim, dtype=feature_diffs.dtype)
    ridge = l2 * torch.eye(dim, dtype=feature_diffs.dtype)
    for _ in range(iterations):
        probs = torch.sigmoid(torch.einsum("bnd,bd->bn", feature_diffs, theta))
        residual = weights * (labels - probs)
        gradient = torch.einsum("bnd,bn->bd", feature_diffs, residual) - l2 * theta
        curvature = weights * probs * (1 - probs)
        hessian = torch.einsum("bnd,bn,bne->bde", feature_diffs, curvature, feature_diffs) + ridge
        theta = theta + torch.linalg.solve(hessian, gradient.unsqueeze(-1)).squeeze(-1)
    return theta


def within_prompt_accuracy(scores, gold):
    """Fraction of response pairs within each prompt that scores order like gold.

    scores, gold: (..., prompts, responses). Pairs with equal gold are skipped; tied scores count
    as half right. Returns (...,) accuracies, pooled over the prompts.
    """
    score_diff = scores.unsqueeze(-1) - scores.unsqueeze(-2)
    gold_diff = gold.unsqueeze(-1) - gold.unsqueeze(-2)
    upper = gold_diff > 0  # each unordered pair once, oriented so gold says "row beats column"
    agree = (score_diff > 0).to(scores.dtype) + 0.5 * (score_diff == 0).to(scores.dtype)
    total = upper.sum(dim=(-3, -2, -1)).clamp(min=1)
    return (agree * upper).sum(dim=(-3, -2, -1)) / total


def sample_world(config: Config, n_worlds: int, spreads, gen):
    """Gold quality direction w, difficulty direction u and spread s of n_worlds datasets.

    spreads: (n_worlds,) difficulty spread s of each world.
    """
    import torch

    dq, dt = config.n_quality_features, config.n_topic_features
    w_gold = torch.randn(n_worlds, dq, generator=gen, dtype=torch.float64)
    w_gold = w_gold / w_gold.norm(dim=-1, keepdim=True)
    u_gold = torch.randn(n_worlds, dt, generator=gen, dtype=torch.float64)
    u_gold = u_gold / u_gold.norm(dim=-1, keepdim=True)
    return {"w": w_gold, "u": u_gold, "spread": spreads}


def sample_responses(config: Config, world, n_prompts: int, gen):
    """Features (worlds, prompts, responses, dq + dt) and gold scores of fresh prompts."""
    import torch

    n_worlds = world["w"].shape[0]
    shape = (n_worlds, n_prompts, config.responses_per_prompt)
    f64 = torch.float64
    topics = torch.randn(n_worlds, n_prompts, 1, config.n_topic_features, generator=gen, dtype=f64)
    quality = torch.randn(*shape, config.n_quality_features, generator=gen, dtype=f64)
    style = topics + config.style_noise * torch.randn(
        *shape, config.n_topic_features, generator=gen, dtype=f64
    )
    difficulty = world["spread"][:, None, None] * torch.einsum("wpkd,wd->wpk", topics, world["u"])
    gold = torch.einsum("wprd,wd->wpr", quality, world["w"]) + difficulty
    return torch.cat([quality, style], dim=-1), gold


def sample_pairs(config: Config, features, gold, cross_prompt, gen):
    """label_budget pairs per world: both from one prompt, or from two different prompts.

    cross_prompt: (worlds,) bool. Returns feature differences and sampled BT labels.
    """
    import torch

    n_worlds, n_prompts, n_resp, _ = features.shape
    n = config.label_budget
    prompt_a = torch.randint(0, n_prompts, (n_worlds, n), generator=gen)
    # a different prompt for cross pairs: shift by 1..P-1 (uniform over the other prompts)
    shift = torch.randint(1, n_prompts, (n_worlds, n), generator=gen)
    prompt_b = torch.where(cross_prompt[:, None], (prompt_a + shift) % n_prompts, prompt_a)
    resp_a = torch.randint(0, n_resp, (n_worlds, n), generator=gen)
    # a different response when both come from the same prompt
    resp_b = (resp_a + torch.randint(1, n_resp, (n_worlds, n), generator=gen)) % n_resp
    world = torch.arange(n_worlds)[:, None]
    diffs = features[world, prompt_a, resp_a] - features[world, prompt_b, resp_b]
    gold_diff = gold[world, prompt_a, resp_a] - gold[world, prompt_b, resp_b]
    labels = torch.bernoulli(torch.sigmoid(config.label_sharpness * gold_diff), generator=gen)
    return diffs, labels


def run(config: Config = Config()) -> Result:
    """Fit same-prompt and cross-prompt reward models at every spread; rank held-out answers."""
    import torch

    gen = seeded(config.seed)
    spreads = torch.tensor(config.difficulty_spreads, dtype=torch.float64)
    n_spreads, seeds = len(spreads), config.seeds
    # one world per (pair type, spread, seed)
    world_spread = spreads.repeat_interleave(seeds).repeat(2)
    cross = torch.arange(2).repeat_interleave(n_spreads * seeds).bool()
    world = sample_world(config, len(world_spread), world_spread, gen)
    train_x, train_gold = sample_responses(config, world, config.train_prompts, gen)
    diffs, labels = sample_pairs(config, train_x, train_gold, cross, gen)
    theta = fit_bradley_terry(diffs, labels, config.l2)
    test_x, test_gold = sample_responses(config, world, config.test_prompts, gen)
    accuracy = within_prompt_accuracy(torch.einsum("wprd,wd->wpr", test_x, theta), test_gold)
    dq = config.n_quality_features
    topic_share = theta[:, dq:].norm(dim=-1) / theta.norm(dim=-1)

    def table(values):  # (pair type, spread) means over seeds
        return values.reshape(2, n_spreads, seeds).mean(-1)

    acc, share = table(accuracy), table(topic_share)
    series = {
        "spreads": [float(s) for s in spreads],
        "same_accuracy": acc[0].tolist(),
        "cross_accuracy": acc[1].tolist(),
        "same_topic_share": share[0].tolist(),
        "cross_topic_share": share[1].tolist(),
        "label_budget": config.label_budget,
    }
    metrics = {
        "same_accuracy_no_spread": float(acc[0, 0]),
        "cross_accuracy_no_spread": float(acc[1, 0]),
        "same_accuracy_max_spread": float(acc[0, -1]),
        "cross_accuracy_max_spread": float(acc[1, -1]),
        "same_topic_share_max_spread": float(share[0, -1]),
        "cross_topic_share_max_spread": float(share[1, -1]),
    }
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: within-prompt accuracy vs difficulty spread. Bottom: weight share on topic features."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=3.9,
        title="Pairs across prompts teach the reward model the prompt, not the answer",
    )
    for ax, key, title, ylabel in (
        (
            top,
            "accuracy",
            f"Ranking answers to one prompt ({s['label_budget']} labels each)",
            "accuracy vs gold",
        ),
        (bottom, "topic_share", "Weight on the prompt's topic features", "|theta_topic| / |theta|"),
    ):
        ax.plot(s["spreads"], s[f"same_{key}"], "o-", color=PALETTE[2], label="same-prompt pairs")
        ax.plot(s["spreads"], s[f"cross_{key}"], "s-", color=PALETTE[1], label="cross-prompt pairs")
        style_panel(ax, title, "spread of prompt difficulty", ylabel)
    top.axhline(0.5, color="gray", ls=":", label="chance")
    top.set_ylim(0.45, 1.0)
    bottom.set_ylim(-0.02, 1.02)
    legend_below(top, ncol=3)
    return save_png(fig)
