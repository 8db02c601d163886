"""Absolute 1-10 ratings vs pairwise comparisons at the same labelling budget.

N responses with gold quality g. Each labeller j perceives u = g + noise and has a personal
offset a_j (a harsh or lenient grader) and scale b_j (uses the whole 1-10 range or hugs the
middle); on top, each absolute score drifts with its context c (the previous items seen,
fatigue, mood: a per-judgment offset). Asked for a score, labeller j reports
clip(round(5.5 + a_j + c + 1.5 b_j u), 1, 10); asked to compare two responses side by side, the
same labeller prefers the one they perceive as better (a Thurstone comparison), so a_j, b_j and
the shared context c all cancel. At an equal number of judgments we rank the
responses three ways: by the mean rating; by the mean of per-labeller z-scored ratings (the
usual fix, which needs many ratings per labeller to estimate each labeller's mean and spread);
and by a Bradley-Terry model fitted to the comparisons (one score per response, maximum
likelihood with a weak ridge prior). With ratings, which labellers happened to rate an item
shifts its mean by their offsets, noise of the same size as the quality differences; the
rounding and the clipping at 1 and 10 lose more. Comparisons are relative, so the offsets
never enter. Spearman correlation with gold is the metric. (Christiano et al. 2017, "Deep
reinforcement learning from human preferences", arXiv 1706.03741, and Ouyang et al. 2022,
arXiv 2203.02155, collect comparisons for this reason; Bradley & Terry 1952.) Left: Spearman vs
judgments per response. Right: one labelling budget, estimated vs gold quality.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, figure_png, new_figure, seeded, style_axes

TITLE = "Ratings vs pairwise comparisons for ranking responses"
CAPTION = (
    "Same number of judgments. Averaged 1-10 ratings inherit each labeller's offset and scale; "
    "z-scoring per labeller helps only once each labeller has rated a lot. Pairwise labels "
    "fitted with Bradley-Terry cancel the offsets and rank closer to gold (higher Spearman)."
)

METHODS = ("ratings_mean", "ratings_zscored", "pairs_bt")


@dataclass(frozen=True)
class Config:
    """Items, labellers, budgets."""

    n_items: int = 60
    """Responses to rank; gold quality ~ N(0, 1)."""
    n_labellers: int = 30
    """Labellers; each judgment is made by one drawn at random."""
    offset_std: float = 1.5
    """Std of a labeller's offset a_j on the 1-10 scale."""
    scale_log_std: float = 0.5
    """Std of log b_j, the labeller's scale."""
    perception_noise: float = 0.5
    """Std of the noise in a labeller's perception of quality (gold units)."""
    context_std: float = 1.0
    """Std of the per-judgment drift of an absolute score (1-10 scale); cancels in a comparison."""
    judgments_per_item: tuple[int, ...] = (1, 2, 4, 8, 16)
    """Budgets: judgments = this x n_items (a rating and a comparison each count as one)."""
    scatter_budget: int = 4
    """Judgments per item of the run drawn on the right panel."""
    l2: float = 0.1
    """Ridge penalty on the Bradley-Terry scores (a weak N(0, 1/l2) prior)."""
    seeds: int = 12
    """Independent worlds per budget."""
    seed: int = 0
    """Seed for every random generator."""


def average_ranks(values):
    """Ranks along the last axis, ties sharing their average rank (as Spearman requires)."""
    below = (values.unsqueeze(-1) > values.unsqueeze(-2)).sum(-1)
    equal = (values.unsqueeze(-1) == values.unsqueeze(-2)).sum(-1)
    return below + (equal + 1) / 2


def spearman(x, y):
    """Spearman correlation along the last axis (Pearson correlation of average ranks)."""
    rx, ry = average_ranks(x), average_ranks(y)
    rx = rx - rx.mean(-1, keepdim=True)
    ry = ry - ry.mean(-1, keepdim=True)
    return (rx * ry).sum(-1) / (rx.norm(dim=-1) * ry.norm(dim=-1)).clamp(min=1e-12)


def fit_item_scores(winners, losers, weights, n_items: int, l2: float, iterations: int = 15):
    """Bradley-Terry scores, one per item: P(i beats k) = sigmoid(s_i - s_k).

    The same likelihood as cross_prompt_pairs.fit_bradley_terry with one-hot features, written
    with index arithmetic: the Hessian of a comparison (i, k) touches only entries (i, i),
    (k, k), (i, k), (k, i). winners, losers, weights: (batch, n); weight 0 drops a comparison.
    """
    import torch

    batch = winners.shape[0]
    dtype = weights.dtype
    scores = torch.zeros(batch, n_items, dtype=dtype)
    rows = torch.arange(batch)[:, None].expand_as(winners)
    for _ in range(iterations):
        p_win = torch.sigmoid(scores[rows, winners] - scores[rows, losers])
        residual = weights * (1 - p_win)  # d log-likelihood / d s_winner
        gradient = torch.zeros(batch, n_items, dtype=dtype)
        gradient.index_put_((rows, winners), residual, accumulate=True)
        gradient.index_put_((rows, losers), -residual, accumulate=True)
        gradient -= l2 * scores
        curvature = weights * p_win * (1 - p_win)
        hessian = l2 * torch.eye(n_items, dtype=dtype).repeat(batch, 1, 1)
        hessian.index_put_((rows, winners, winners), curvature, accumulate=True)
        hessian.index_put_((rows, losers, losers), curvature, accumulate=True)
        hessian.index_put_((rows, winners, losers), -curvature, accumulate=True)
        hessian.index_put_((rows, losers, winners), -curvature, accumulate=True)
        scores = scores + torch.linalg.solve(hessian, gradient.unsqueeze(-1)).squeeze(-1)
    return scores


def per_item_mean(values, items, weights, n_items: int):
    """Weighted mean of values per item; items never judged get the overall mean (a tie)."""
    import torch

    batch = values.shape[0]
    rows = torch.arange(batch)[:, None].expand_as(items)
    totals = torch.zeros(batch, n_items, dtype=values.dtype)
    counts = torch.zeros(batch, n_items, dtype=values.dtype)
    totals.index_put_((rows, items), weights * values, accumulate=True)
    counts.index_put_((rows, items), weights, accumulate=True)
    overall = (weights * values).sum(-1, keepdim=True) / weights.sum(-1, keepdim=True)
    return torch.where(counts > 0, totals / counts.clamp(min=1e-12), overall)


def run(config: Config = Config()) -> Result:
    """Rank items from ratings and from comparisons at each budget; Spearman vs gold."""
    import torch

    gen = seeded(config.seed)
    f64 = torch.float64
    budgets = torch.tensor(config.judgments_per_item) * config.n_items
    n_budgets, seeds, n_items = len(budgets), config.seeds, config.n_items
    batch, max_n = n_budgets * seeds, int(budgets.max())
    # row b*seeds + s uses the first budgets[b] judgments; the rest get weight 0
    weights = (torch.arange(max_n)[None, :] < budgets.repeat_interleave(seeds)[:, None]).to(f64)
    rows = torch.arange(batch)[:, None].expand(batch, max_n)

    gold = torch.randn(batch, n_items, generator=gen, dtype=f64)
    offset = config.offset_std * torch.randn(batch, config.n_labellers, generator=gen, dtype=f64)
    scale = torch.exp(
        config.scale_log_std * torch.randn(batch, config.n_labellers, generator=gen, dtype=f64)
    )

    def perceive(items):
        noise = torch.randn(items.shape, generator=gen, dtype=f64)
        return gold[rows, items] + config.perception_noise * noise

    # ratings: one (item, labeller) per judgment
    items = torch.randint(0, n_items, (batch, max_n), generator=gen)
    raters = torch.randint(0, config.n_labellers, (batch, max_n), generator=gen)
    context = config.context_std * torch.randn(batch, max_n, generator=gen, dtype=f64)
    raw = 5.5 + offset[rows, raters] + context + 1.5 * scale[rows, raters] * perceive(items)
    ratings = raw.round().clamp(1, 10)
    mean_rating = per_item_mean(ratings, items, weights, n_items)
    # z-score each labeller's ratings by that labeller's own mean and std over what they rated
    rater_mean = per_item_mean(ratings, raters, weights, config.n_labellers)
    rater_sq = per_item_mean(ratings**2, raters, weights, config.n_labellers)
    rater_std = (rater_sq - rater_mean**2).clamp(min=0).sqrt()
    rater_std = torch.where(rater_std > 0, rater_std, torch.ones_like(rater_std))
    z = (ratings - rater_mean[rows, raters]) / rater_std[rows, raters]
    mean_z = per_item_mean(z, items, weights, n_items)

    # comparisons: two distinct items per judgment; the judge's offset, scale and context are
    # common to both sides and cancel, so only the perception noise remains
    first = torch.randint(0, n_items, (batch, max_n), generator=gen)
    second = (first + torch.randint(1, n_items, (batch, max_n), generator=gen)) % n_items
    first_better = perceive(first) > perceive(second)
    winners = torch.where(first_better, first, second)
    losers = torch.where(first_better, second, first)
    bt_scores = fit_item_scores(winners, losers, weights, n_items, config.l2)

    estimates = {"ratings_mean": mean_rating, "ratings_zscored": mean_z, "pairs_bt": bt_scores}
    per_item = list(config.judgments_per_item)
    series: dict = {"judgments_per_item": per_item}
    metrics: dict[str, float] = {}
    for name, estimate in estimates.items():
        rho = spearman(estimate, gold).reshape(n_budgets, seeds)
        series[f"{name}_spearman"] = rho.mean(-1).tolist()
        series[f"{name}_spearman_std"] = rho.std(-1).tolist()
        for budget, value in zip(per_item, rho.mean(-1).tolist()):
            metrics[f"{name}_spearman_{budget}"] = value
    scatter_row = per_item.index(config.scatter_budget) * seeds
    series["scatter_budget"] = config.scatter_budget
    series["scatter_gold"] = gold[scatter_row].tolist()
    for name, estimate in estimates.items():
        series[f"scatter_{name}"] = estimate[scatter_row].tolist()
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Left: Spearman vs judgments per item. Right: estimates vs gold at one budget."""
    s = result.series
    fig, (left, right) = new_figure(1, 2, height_px=520)
    labels = {
        "ratings_mean": "mean 1-10 rating",
        "ratings_zscored": "ratings z-scored per labeller",
        "pairs_bt": "pairwise labels + Bradley-Terry",
    }
    colors = dict(zip(METHODS, (PALETTE[1], PALETTE[3], PALETTE[2])))
    for name, label in labels.items():
        left.errorbar(
            s["judgments_per_item"],
            s[f"{name}_spearman"],
            yerr=s[f"{name}_spearman_std"],
            fmt="o-",
            color=colors[name],
            lw=2,
            capsize=3,
            label=label,
        )
    left.set_xscale("log", base=2)
    left.set_xticks(s["judgments_per_item"], [str(v) for v in s["judgments_per_item"]])
    left.set_ylim(0, 1)
    style_axes(
        left, "Ranking quality at equal budget", "judgments per response", "Spearman vs gold"
    )
    left.legend(fontsize=9, loc="lower right")

    def standardise(values):
        mean = sum(values) / len(values)
        std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
        return [(v - mean) / std for v in values]

    for name in ("ratings_mean", "pairs_bt"):
        right.scatter(
            s["scatter_gold"],
            standardise(s[f"scatter_{name}"]),
            color=colors[name],
            s=22,
            alpha=0.8,
            label=labels[name],
        )
    style_axes(
        right,
        f"{s['scatter_budget']} judgments per response, one world",
        "gold quality",
        "estimate (standardised)",
    )
    return figure_png(fig)
