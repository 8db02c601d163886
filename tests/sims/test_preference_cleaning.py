"""preference_cleaning: dirty pairs teach the length shortcut; dedup + length balance fix it."""

from __future__ import annotations

import pytest

from sims import preference_cleaning as sim
from sims.common import png_size

SMALL = sim.Config(unique_pairs=800, seeds=4, test_pairs=1500)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_raw_data_teaches_the_length_shortcut(result):
    m = result.metrics
    assert m["raw_longer_chosen_rate"] > 0.65
    assert m["raw_length_share"] > 0.5
    assert m["raw_accuracy"] < m["ceiling_accuracy"] - 0.08


def test_dedup_and_length_balance_restore_gold_accuracy(result):
    m = result.metrics
    assert m["dedup_accuracy"] > m["raw_accuracy"] + 0.03
    assert m["dedup_balanced_accuracy"] > m["raw_accuracy"] + 0.08
    assert m["dedup_balanced_accuracy"] > m["ceiling_accuracy"] - 0.04
    assert abs(m["dedup_balanced_length_share"]) < 0.2
    assert m["all_three_accuracy"] > m["raw_accuracy"] + 0.08
    assert m["dedup_balanced_rows"] < m["raw_rows"]


def test_agreement_filtering_alone_keeps_a_shared_bias(result):
    m = result.metrics
    assert m["agreement_length_share"] > m["raw_length_share"] - 0.05
    assert m["agreement_accuracy"] < m["dedup_balanced_accuracy"] - 0.08


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
