"""trajectory_stitching: step-level Q-learning stitches flawed traces; SFT clones B's luck."""

from __future__ import annotations

import pytest

from sims import trajectory_stitching as sim
from sims.common import png_size

SMALL = sim.Config(sweep=(0.2, 0.5, 0.8), attempts_b=30)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_q_learning_beats_both_traces_and_sft(result):
    m = result.metrics
    assert m["trace_a_success"] < 0.01
    assert m["q_learning_success"] > 0.99
    assert m["q_learning_success"] > m["sft_success"] + 0.5
    # Q prefers the correct first step: it knows the prefix leads to a winnable last step.
    assert m["q_first_step_gap"] > 0.3


def test_sft_success_is_trace_b_luck(result):
    m = result.metrics
    assert m["sft_success"] == pytest.approx(SMALL.recovery_probability, abs=0.02)
    for p, sft, q in zip(result.series["sweep_p"], result.series["sweep_sft"],
                         result.series["sweep_q_learning"]):
        assert sft == pytest.approx(p, abs=0.02)
        assert q > 0.99


def test_deterministic():
    config = sim.Config(sweep=(0.3,), attempts_b=10)
    assert sim.run(config).metrics == sim.run(config).metrics


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
