"""Dirty preference data teaches a reward model the length shortcut; cleaning restores accuracy.

Synthetic pairs with a gold quality g = w.q. The reward model sees a noisy view of the quality
features and the response length, and is a linear Bradley-Terry model fitted by maximum
likelihood. The raw data has four defects: (1) a length confound: in the collected pool longer
answers are better on average (corr(length, gold) = 0.5) and annotators also lean toward the
longer answer; (2) annotator noise: 40% of votes are careless coin flips, 3 votes per pair,
majority label; (3) duplicates: 40 pairs from a templated source, each copied 15 times, whose
labels are "the longer one wins"; (4) the three defects stack up so that length alone predicts
most labels. The gold test pairs come from a pool where length is unrelated to quality (e.g. a
policy that has learned to be verbose), so every unit of weight on length costs gold accuracy
(Singhal, Goyal, Xu & Durrett 2023, "A long way to go: investigating length correlations in
RLHF", arXiv 2310.03716). Cleaning steps, alone and combined: dedup (keep one copy of each pair),
agreement filtering (keep pairs whose 3 votes are unanimous), length balancing (subsample so the
chosen answer is the longer one in exactly half the pairs: one way of handling the length
confound; a length term in the reward model or length-matched pairs are others) and soft
labels (fit the vote share instead of the majority, keeping every pair and its margin).

Agreement filtering alone ends below the raw data, and the reason is in what it keeps. Only
about 40% of ordinary pairs get three unanimous votes (agreement is low: it measures how noisy
a single label is), while every copy of the templated "longer wins" source is unanimous by
construction: the filter drops most ordinary pairs and keeps all the copies, so the biased
source grows from a third of the rows to more than half and the length shortcut strengthens.
Filtering on agreement cannot remove a bias the annotators share. The fair comparison of the
ways to treat disagreement holds dedup and length balancing fixed and changes only the labels:
hard majority labels on every pair, only the unanimous pairs (about a third of the rows), or
soft labels (the vote share) on every pair. Here the three land within 0.01 of each other and
of the ceiling on every seed 0-19: once the duplicates and the length confound are handled,
how the split pairs are labelled barely matters in this sim, whose disagreement is coin-flip
noise with no information about quality beyond the majority; dedup and balancing did the work.
(Cf. Wang et al. 2024, "Secrets of RLHF in large language models part II: reward modeling",
arXiv 2401.06080, on noisy preference data.) Top: gold pairwise accuracy per variant. Bottom:
share of the reward model's weight on length, and share of the kept rows from the templated
source.
"""

from __future__ import annotations

from dataclasses import dataclass

from sims.common import PALETTE, Result, legend_below, phone_figure, save_png, seeded, style_panel
from sims.cross_prompt_pairs import fit_bradley_terry

TITLE = "Cleaning preference data: duplicates, disagreement and the length shortcut"
CAPTION = (
    "Raw data (length-biased labels, duplicates, noisy votes) teaches the reward model to "
    "reward length. Agreement filtering alone does worse than raw: the duplicated 'longer wins' "
    "source is unanimous, so it keeps all of it. Dedup + length balance remove the shortcut; "
    "with those fixed, hard labels, unanimous-only and soft labels differ by < 0.01 (seeds 0-19)."
)

VARIANTS = (
    "raw",
    "dedup",
    "agreement",
    "dedup_balanced",
    "dedup_balanced_agreement",
    "dedup_balanced_soft",
)
LABELS = {
    "raw": "raw",
    "dedup": "dedup",
    "agreement": "agreement filter",
    "dedup_balanced": "dedup + balance",
    "dedup_balanced_agreement": "dedup + balance,\nunanimous only",
    "dedup_balanced_soft": "dedup + balance,\nsoft labels",
}


@dataclass(frozen=True)
class Config:
    """Data defects, label budget and reward-model fit."""

    n_quality_features: int = 6
    """Dimensions of the true quality q (gold g = w.q, |w| = 1)."""
    observation_noise: float = 0.7
    """Std of the noise on the quality features the reward model sees."""
    length_gold_correlation: float = 0.5
    """corr(length, gold) in the collected training pool (0 in the test pool)."""
    annotator_sharpness: float = 2.0
    """beta: careful annotators vote A with probability sigmoid(beta * dg + kappa * dlength)."""
    annotator_length_bias: float = 0.3
    """kappa: how much careful annotators lean toward the longer answer (per length std)."""
    careless_share: float = 0.4
    """Share of votes that are coin flips."""
    unique_pairs: int = 1200
    """Ordinary pairs in the raw data, 3 votes each."""
    duplicated_pairs: int = 40
    """Pairs from a templated source labelled 'longer wins' ..."""
    copies: int = 15
    """... each present this many times."""
    test_pairs: int = 4000
    """Gold test pairs, from a pool where length is independent of quality."""
    l2: float = 1.0
    """Ridge penalty of the reward-model fit."""
    seeds: int = 12
    """Independent raw datasets; every cleaning variant is applied to each."""
    seed: int = 0
    """Seed for every random generator."""


def sample_pool(config: Config, w_gold, n: int, length_correlation: float, gen):
    """Reward-model features [noisy q, length] and gold scores of n responses per world."""
    import torch

    f64 = torch.float64
    worlds, dim = w_gold.shape
    quality = torch.randn(worlds, n, dim, generator=gen, dtype=f64)
    gold = torch.einsum("wnd,wd->wn", quality, w_gold)
    independent = torch.randn(worlds, n, generator=gen, dtype=f64)
    length = length_correlation * gold + (1 - length_correlation**2) ** 0.5 * independent
    seen = quality + config.observation_noise * torch.randn(
        worlds, n, dim, generator=gen, dtype=f64
    )
    return torch.cat([seen, length.unsqueeze(-1)], dim=-1), gold, length


def balanced_subset(candidates, longer_chosen, gen):
    """Keep every candidate row of the rarer kind and an equal random number of the other kind.

    candidates, longer_chosen: (worlds, rows) bool. Afterwards the chosen answer is the longer
    one in exactly half of the kept pairs of each world.
    """
    import torch

    keep = torch.zeros_like(candidates)
    for world in range(candidates.shape[0]):
        longer = torch.nonzero(candidates[world] & longer_chosen[world]).flatten()
        shorter = torch.nonzero(candidates[world] & ~longer_chosen[world]).flatten()
        size = min(len(longer), len(shorter))
        for rows in (longer, shorter):
            keep[world, rows[torch.randperm(len(rows), generator=gen)[:size]]] = True
    return keep


def run(config: Config = Config()) -> Result:
    """Build one raw dataset per seed, clean it six ways, fit, score on gold test pairs."""
    import torch

    gen = seeded(config.seed)
    f64 = torch.float64
    seeds = config.seeds
    w_gold = torch.randn(seeds, config.n_quality_features, generator=gen, dtype=f64)
    w_gold = w_gold / w_gold.norm(dim=-1, keepdim=True)

    # distinct pairs: the ordinary ones first, then the templated sources
    n_distinct = config.unique_pairs + config.duplicated_pairs
    rho = config.length_gold_correlation
    x_a, gold_a, len_a = sample_pool(config, w_gold, n_distinct, rho, gen)
    x_b, gold_b, len_b = sample_pool(config, w_gold, n_distinct, rho, gen)
    careful = torch.sigmoid(
        config.annotator_sharpness * (gold_a - gold_b)
        + config.annotator_length_bias * (len_a - len_b)
    )
    vote_prob = torch.where(
        torch.rand(seeds, n_distinct, 3, generator=gen, dtype=f64) < config.careless_share,
        torch.full((), 0.5, dtype=f64),
        careful.unsqueeze(-1).expand(-1, -1, 3),
    )
    votes = torch.bernoulli(vote_prob, generator=gen)
    templated = torch.arange(n_distinct) >= config.unique_pairs
    votes[:, templated] = (len_a > len_b)[:, templated].unsqueeze(-1).to(f64)  # "longer wins"

    # the raw table: ordinary pairs once, templated pairs copies times
    rows = torch.cat(
        [
            torch.arange(config.unique_pairs),
            torch.arange(config.unique_pairs, n_distinct).repeat_interleave(config.copies),
        ]
    )
    diffs = (x_a - x_b)[:, rows]
    row_votes = votes[:, rows]
    labels = (row_votes.mean(-1) > 0.5).to(f64)  # majority of 3
    unanimous = row_votes.amin(-1) == row_votes.amax(-1)
    longer_chosen = (len_a > len_b)[:, rows] == labels.bool()
    first_copy = torch.ones(len(rows), dtype=torch.bool)
    first_copy[1:] = rows[1:] != rows[:-1]
    first_copy = first_copy.expand(seeds, -1)
    everything = torch.ones_like(first_copy)

    dedup_balanced = balanced_subset(first_copy, longer_chosen, gen)
    masks = {
        "raw": everything,
        "dedup": first_copy,
        "agreement": unanimous,
        "dedup_balanced": dedup_balanced,
        # the same dedup and balance, then only the pairs whose 3 votes agree
        "dedup_balanced_agreement": balanced_subset(first_copy & unanimous, longer_chosen, gen),
        "dedup_balanced_soft": dedup_balanced,
    }
    # soft labels: the share of the 3 votes for A instead of the majority (keeps the margin)
    soft = row_votes.mean(-1)
    stacked_labels = torch.cat([soft if name.endswith("_soft") else labels for name in VARIANTS])
    stacked_masks = torch.cat([masks[name] for name in VARIANTS]).to(f64)
    n_variants = len(VARIANTS)
    theta = fit_bradley_terry(
        diffs.repeat(n_variants, 1, 1), stacked_labels, config.l2, stacked_masks
    )
    duplicate_rows = (~first_copy | templated[rows]).to(f64)  # rows of the templated source

    # gold test pairs: length independent of quality
    test_a, test_gold_a, _ = sample_pool(config, w_gold, config.test_pairs, 0.0, gen)
    test_b, test_gold_b, _ = sample_pool(config, w_gold, config.test_pairs, 0.0, gen)
    test_diff = (test_a - test_b).repeat(n_variants, 1, 1)
    gold_sign = torch.sign(test_gold_a - test_gold_b).repeat(n_variants, 1)
    predicted = torch.sign(torch.einsum("wnd,wd->wn", test_diff, theta))
    accuracy = (predicted == gold_sign).to(f64).mean(-1).reshape(n_variants, seeds)
    length_share = (theta[:, -1] / theta.norm(dim=-1)).reshape(n_variants, seeds)
    kept_rows = stacked_masks.sum(-1).reshape(n_variants, seeds)
    # reference: the true quality direction on the features the model sees, zero weight on length
    ideal = torch.cat([w_gold, torch.zeros(seeds, 1, dtype=f64)], dim=-1)
    ideal_pred = torch.sign(torch.einsum("wnd,wd->wn", test_a - test_b, ideal))
    ceiling = (ideal_pred == torch.sign(test_gold_a - test_gold_b)).to(f64).mean()

    metrics: dict[str, float] = {"ceiling_accuracy": float(ceiling)}
    series: dict = {"variants": list(VARIANTS), "ceiling": float(ceiling)}
    for index, name in enumerate(VARIANTS):
        metrics[f"{name}_accuracy"] = float(accuracy[index].mean())
        metrics[f"{name}_length_share"] = float(length_share[index].mean())
        metrics[f"{name}_rows"] = float(kept_rows[index].mean())
        kept = stacked_masks[index * seeds : (index + 1) * seeds]
        metrics[f"{name}_templated_share"] = float(
            ((kept * duplicate_rows).sum(-1) / kept.sum(-1)).mean()
        )
        series[f"{name}_accuracy_std"] = float(accuracy[index].std())
    metrics["raw_longer_chosen_rate"] = float(longer_chosen.to(f64).mean())
    # how often annotators agree: unanimous ordinary pairs (the cap on any label-based accuracy)
    metrics["ordinary_unanimous_rate"] = float(unanimous[:, : config.unique_pairs].to(f64).mean())
    series.update(metrics)
    return Result(metrics=metrics, series=series)


def plot(result: Result) -> bytes:
    """Top: gold accuracy per variant. Bottom: weight on length and templated share per variant."""
    s = result.series
    fig, (top, bottom) = phone_figure(
        2,
        height_per_panel=4.6,
        title=(
            "Agreement filtering alone keeps every copy of a biased source; "
            "dedup and length balance are what fix it"
        ),
    )
    names = list(reversed(s["variants"]))  # raw on top
    positions = range(len(names))
    labels = [LABELS[name] for name in names]
    colors = [PALETTE[1] if name in ("raw", "agreement") else PALETTE[0] for name in names]
    accuracies = [s[f"{name}_accuracy"] for name in names]
    top.barh(
        positions,
        accuracies,
        color=colors,
        xerr=[s[f"{name}_accuracy_std"] for name in names],
        capsize=4,
    )
    for position, value in zip(positions, accuracies):
        top.text(0.505, position, f"{value:.2f}", va="center", color="white", fontsize=16)
    top.axvline(s["ceiling"], color="gray", ls="--", label="true quality weights (ceiling)")
    top.set_yticks(list(positions), labels)
    top.set_xlim(0.5, 0.85)
    style_panel(top, "Reward model accuracy on gold test pairs", "accuracy")
    legend_below(top)

    height = 0.4
    bottom.barh(
        [p + height / 2 for p in positions],
        [s[f"{name}_length_share"] for name in names],
        height,
        color=PALETTE[3],
        label="weight on length (theta_len / |theta|)",
    )
    bottom.barh(
        [p - height / 2 for p in positions],
        [s[f"{name}_templated_share"] for name in names],
        height,
        color=PALETTE[4],
        label="share of rows from the templated source",
    )
    bottom.set_yticks(list(positions), labels)
    bottom.set_xlim(-0.1, 1)
    style_panel(bottom, "The length shortcut and what was kept", "share")
    legend_below(bottom)
    return save_png(fig)
