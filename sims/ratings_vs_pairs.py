"""Absolute 1-10 ratings vs pairwise comparisons at the same reading cost: it depends on the raters.

N responses with gold quality g. Labeller j perceives item i as u = g_i + t_ji + noise, where
t_ji is j's own taste (real disagreement, not noise: it is what makes two InstructGPT labellers
agree on only about 73-77% of comparisons, Ouyang et al. 2022, arXiv 2203.02155). A labeller
also has an offset a_j (a harsh or lenient grader) and a scale b_j (uses the whole 1-10 range
or hugs the middle), and each absolute score drifts with its context c (the items seen before,
fatigue, mood). Asked for a score, labeller j reports clip(round(5.5 + a_j + c + 1.5 b_j u), 1,
10). Asked to compare two responses, the same labeller prefers the one perceived as better,
with a bonus ``position_bias`` for the one shown first: a_j, b_j and c cancel in the
comparison; the taste, the perception noise and the position bias do not (positions are
randomised, so position bias is noise here; with a fixed order it is bias).

The cost axis is responses read: a rating reads one response, a comparison two, so at a budget
of B reads per response there are B ratings or B/2 comparisons per response. (Counting a
comparison like one rating, as an earlier version of this plot did, hands pairs twice the
reading.) The responses are ranked three ways: by the mean rating; by the mean of per-labeller
z-scored ratings (the usual fix, which needs enough ratings per labeller to estimate each one's
mean and spread); by a Bradley-Terry model fitted to the comparisons (one score per response,
maximum likelihood with a weak ridge prior; Bradley & Terry 1952). Spearman correlation with
gold is the metric. Two regimes of raters:
- miscalibrated (offsets, scales, drift): the mean rating inherits which labellers happened to
  rate an item; comparisons cancel it, and so does z-scoring each rater once each has rated
  enough. At equal reads, pairs only tie the mean rating, and from 4 reads per response (8
  ratings per rater) z-scored ratings beat pairs on every seed 0-19: what pairs buy is the
  cancellation of the rater, which per-rater normalisation also buys;
- calibrated (no offsets, one scale, little drift, as after rater training and a pilot that
  measures each rater's offset and scale): a rating is a direct noisy measurement of one item,
  a comparison one bit about a difference, so ratings win clearly (HelpSteer2-Preference, Wang
  et al. 2024, arXiv 2410.01257; Bansal, Dang & Grover 2024, "Peering through preferences",
  arXiv 2308.15812, on how the protocols disagree).
Where pairs still win in practice is outside this model: a comparison can be quicker than a
careful absolute score, and crowd raters who each rate a handful of items cannot be z-scored
(at 1 read per response z-scoring is the worst of the three here).
The simulated inter-labeller agreement on comparisons is reported to check it lies in the
InstructGPT range. Top: miscalibrated raters. Bottom: calibrated raters.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, seeded, style_panel

TITLE = "Ratings vs pairwise comparisons at equal reading cost: normalised ratings win here"
CAPTION = (
    "Cost = responses read (a comparison reads two). Top: raters with their own offsets, scales "
    "and drift: pairs only tie the mean rating, and once each rater has rated enough (4+ reads "
    "per response) per-rater z-scored ratings beat pairs on all 20 seeds (by >= 0.02). Bottom: "
    "calibrated raters: ratings beat pairs by >= 0.14 up to 4 reads per response."
)

METHODS = ("ratings_mean", "ratings_zscored", "pairs_bt")
REGIMES = ("miscalibrated", "calibrated")


@dataclass(frozen=True)
class Config:
    """Items, labellers, the two rater regimes, budgets."""

    n_items: int = 60
    """Responses to rank; gold quality ~ N(0, 1)."""
    n_labellers: int = 30
    """Labellers; each judgment is made by one drawn at random."""
    offset_std: float = 1.5
    """Std of a labeller's offset a_j on the 1-10 scale (miscalibrated regime; 0 when calibrated)."""
    scale_log_std: float = 0.5
    """Std of log b_j, the labeller's scale (miscalibrated regime; 0 when calibrated)."""
    context_std: float = 1.0
    """Std of the per-judgment drift of an absolute score (1-10 scale), miscalibrated regime."""
    calibrated_context_std: float = 0.3
    """The same drift for calibrated raters (trained raters drift less, not never)."""
    perception_noise: float = 0.45
    """Std of the noise in one perception of quality (gold units)."""
    taste_std: float = 0.4
    """Std of a labeller's own taste t_ji per item (real disagreement; never cancels)."""
    position_bias: float = 0.2
    """Bonus, in gold units, for the response shown first in a comparison."""
    judgments_per_item: tuple[int, ...] = (1, 2, 4, 8, 16)
    """Budgets in responses read per response: this x n_items responses read in all."""
    reads_per_comparison: int = 2
    """Responses a labeller reads for one comparison (a rating reads one), so at a budget of B
    reads per response there are B x n_items ratings or B x n_items / 2 comparisons."""
    l2: float = 0.1
    """Ridge penalty on the Bradley-Terry scores (a weak N(0, 1/l2) prior)."""
    seeds: int = 12
    """Independent worlds per budget and regime."""
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


def simulate(config: Config, offset_std: float, scale_log_std: float, context_std: float, gen):
    """Spearman vs gold of every method, (budgets, seeds), for one rater regime.

    Also returns how often two labellers agree on the same comparison.
    """
    import torch

    f64 = torch.float64
    budgets = torch.tensor(config.judgments_per_item) * config.n_items
    n_budgets, seeds, n_items = len(budgets), config.seeds, config.n_items
    batch, max_n = n_budgets * seeds, int(budgets.max())
    # row b*seeds + s uses the first budgets[b] judgments; the rest get weight 0
    weights = (torch.arange(max_n)[None, :] < budgets.repeat_interleave(seeds)[:, None]).to(f64)
    # the same reading budget buys 1/reads_per_comparison as many comparisons
    pair_budgets = budgets.repeat_interleave(seeds) / config.reads_per_comparison
    pair_weights = (torch.arange(max_n)[None, :] < pair_budgets[:, None]).to(f64)
    rows = torch.arange(batch)[:, None].expand(batch, max_n)

    gold = torch.randn(batch, n_items, generator=gen, dtype=f64)
    offset = offset_std * torch.randn(batch, config.n_labellers, generator=gen, dtype=f64)
    scale = torch.exp(
        scale_log_std * torch.randn(batch, config.n_labellers, generator=gen, dtype=f64)
    )
    taste = config.taste_std * torch.randn(
        batch, config.n_labellers, n_items, generator=gen, dtype=f64
    )

    def perceive(items, raters):
        noise = config.perception_noise * torch.randn(items.shape, generator=gen, dtype=f64)
        return gold[rows, items] + taste[rows, raters, items] + noise

    # ratings: one (item, labeller) per judgment
    items = torch.randint(0, n_items, (batch, max_n), generator=gen)
    raters = torch.randint(0, config.n_labellers, (batch, max_n), generator=gen)
    context = context_std * torch.randn(batch, max_n, generator=gen, dtype=f64)
    raw = 5.5 + offset[rows, raters] + context + 1.5 * scale[rows, raters] * perceive(items, raters)
    ratings = raw.round().clamp(1, 10)
    mean_rating = per_item_mean(ratings, items, weights, n_items)
    # z-score each labeller's ratings by that labeller's own mean and std over what they rated
    rater_mean = per_item_mean(ratings, raters, weights, config.n_labellers)
    rater_sq = per_item_mean(ratings**2, raters, weights, config.n_labellers)
    rater_std = (rater_sq - rater_mean**2).clamp(min=0).sqrt()
    rater_std = torch.where(rater_std > 0, rater_std, torch.ones_like(rater_std))
    z = (ratings - rater_mean[rows, raters]) / rater_std[rows, raters]
    mean_z = per_item_mean(z, items, weights, n_items)

    # comparisons: two distinct items, the first shown gets the position bonus; the judge's
    # offset, scale and context are common to both sides and cancel, taste and noise do not
    first = torch.randint(0, n_items, (batch, max_n), generator=gen)
    second = (first + torch.randint(1, n_items, (batch, max_n), generator=gen)) % n_items
    judges = torch.randint(0, config.n_labellers, (batch, max_n), generator=gen)

    def compare(judge):
        return perceive(first, judge) + config.position_bias > perceive(second, judge)

    first_better = compare(judges)
    winners = torch.where(first_better, first, second)
    losers = torch.where(first_better, second, first)
    bt_scores = fit_item_scores(winners, losers, pair_weights, n_items, config.l2)
    # a second, different labeller judges the same pairs: how often do two labellers agree?
    others = (judges + torch.randint(1, config.n_labellers, judges.shape, generator=gen)) % (
        config.n_labellers
    )
    agreement = (compare(others) == first_better).to(f64).mean()

    estimates = {"ratings_mean": mean_rating, "ratings_zscored": mean_z, "pairs_bt": bt_scores}
    rho = {
        name: spearman(value, gold).reshape(n_budgets, seeds) for name, value in estimates.items()
    }
    return rho, float(agreement)


def run(config: Config = Config()) -> Result:
    """Rank items from ratings and from comparisons at each budget, for both rater regimes."""
    gen = seeded(config.seed)
    regimes = {
        "miscalibrated": (config.offset_std, config.scale_log_std, config.context_std),
        "calibrated": (0.0, 0.0, config.calibrated_context_std),
    }
    per_item = list(config.judgments_per_item)
    series: dict = {"judgments_per_item": per_item}
    metrics: dict[str, float] = {}
    for regime, (offset_std, scale_log_std, context_std) in regimes.items():
        rho, agreement = simulate(config, offset_std, scale_log_std, context_std, gen)
        metrics[f"{regime}_pair_agreement"] = agreement
        for name, values in rho.items():
            series[f"{regime}_{name}_spearman"] = values.mean(-1).tolist()
            series[f"{regime}_{name}_spearman_std"] = values.std(-1).tolist()
            for budget, value in zip(per_item, values.mean(-1).tolist()):
                metrics[f"{regime}_{name}_spearman_{budget}"] = value
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Spearman vs judgments per response: miscalibrated raters on top, calibrated below."""
    s = result.series
    fig, axes = phone_figure(
        2,
        height_per_panel=4.0,
        title="At equal reading cost, per-rater z-scored ratings beat pairs once each rater has rated enough",
    )
    labels = {
        "ratings_mean": "mean 1-10 rating",
        "ratings_zscored": "ratings z-scored per rater",
        "pairs_bt": "pairs + Bradley-Terry",
    }
    colors = dict(zip(METHODS, (PALETTE[1], PALETTE[3], PALETTE[2])))
    titles = {
        "miscalibrated": "Raters with own offsets, scales and drift",
        "calibrated": "Calibrated raters (no offsets, one scale)",
    }
    for ax, regime in zip(axes, REGIMES):
        for name, label in labels.items():
            ax.errorbar(
                s["judgments_per_item"],
                s[f"{regime}_{name}_spearman"],
                yerr=s[f"{regime}_{name}_spearman_std"],
                fmt="o-",
                color=colors[name],
                capsize=3,
                label=label,
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(s["judgments_per_item"], [str(v) for v in s["judgments_per_item"]])
        ax.set_ylim(0.3, 1)
        style_panel(ax, titles[regime], "responses read per response", "Spearman vs gold")
    legend_below(axes[1])
    return save_png(fig)
