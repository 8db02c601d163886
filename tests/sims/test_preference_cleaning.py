"""preference_cleaning: dirty pairs teach the length shortcut; agreement filtering alone keeps a
biased duplicated source; dedup + length balance (hard or soft labels) fix it."""

from __future__ import annotations

import pytest

from sims import preference_cleaning as sim
from sims.common import PHONE_WIDTH_PX, png_size

DEFAULT = sim.Config()


def check_claims(m: dict[str, float]) -> None:
    """Every claim of the caption, on one run's metrics (12 datasets)."""
    # raw data teaches the length shortcut
    assert m["raw_longer_chosen_rate"] > 0.7
    assert m["raw_length_share"] > 0.7
    assert m["raw_accuracy"] < m["ceiling_accuracy"] - 0.1
    assert m["dedup_accuracy"] > m["raw_accuracy"] + 0.05
    # agreement filtering alone is worse than raw, because it keeps the biased source
    assert m["ordinary_unanimous_rate"] < 0.5
    assert m["agreement_accuracy"] < m["raw_accuracy"] - 0.02
    assert m["agreement_templated_share"] > m["raw_templated_share"] + 0.15
    assert m["agreement_length_share"] > m["raw_length_share"]
    # with length balancing the shortcut goes
    assert m["agreement_balanced_accuracy"] > m["raw_accuracy"] + 0.08
    assert m["agreement_balanced_length_share"] < 0.3
    assert m["dedup_balanced_accuracy"] > m["ceiling_accuracy"] - 0.02
    assert abs(m["dedup_balanced_length_share"]) < 0.1
    # soft labels keep every pair and do at least as well as dropping disagreements
    assert m["dedup_balanced_soft_accuracy"] > m["agreement_balanced_accuracy"] + 0.01
    assert m["dedup_balanced_soft_rows"] > 2 * m["agreement_balanced_rows"]
    assert m["dedup_balanced_soft_accuracy"] > m["ceiling_accuracy"] - 0.02


def test_claims_hold_at_seed_0():
    check_claims(sim.run(DEFAULT).metrics)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_claims_hold_on_ten_seeds(seed):
    check_claims(sim.run(sim.Config(seed=seed)).metrics)


def test_balanced_subset_halves_longer_chosen():
    import torch

    gen = torch.Generator().manual_seed(0)
    candidates = torch.ones(1, 10, dtype=torch.bool)
    longer = torch.tensor([[True] * 7 + [False] * 3])
    keep = sim.balanced_subset(candidates, longer, gen)
    assert int((keep & longer).sum()) == int((keep & ~longer).sum()) == 3


def test_plot_is_phone_width():
    result = sim.run(sim.Config(unique_pairs=100, seeds=2, test_pairs=100))
    assert png_size(sim.plot(result))[0] == PHONE_WIDTH_PX
