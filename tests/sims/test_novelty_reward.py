"""novelty_reward: paid per report the tester farms; paid per novel verified bug it finds more."""

from __future__ import annotations

import pytest

from sims import novelty_reward as sim
from sims.common import png_size

SMALL = sim.Config(steps=1500, seeds=8)


@pytest.fixture(scope="module")
def result():
    return sim.run(SMALL)


def test_per_report_reward_is_farmed(result):
    m = result.metrics
    # the proxy (reports) is highest for the agent paid per report ...
    assert m["per_report_reports"] > 2 * m["novel_verified_reports"]
    assert m["per_report_reports"] > 2 * m["novel_plus_coverage_reports"]
    # ... because it keeps probing one area
    assert m["per_report_share_in_top_area"] > 0.5
    assert m["novel_plus_coverage_share_in_top_area"] < 0.2


def test_novel_verified_reward_finds_more_distinct_bugs(result):
    m = result.metrics
    assert m["novel_verified_distinct_bugs"] > m["per_report_distinct_bugs"] + 2
    assert m["novel_plus_coverage_distinct_bugs"] > 1.8 * m["per_report_distinct_bugs"]
    assert m["novel_plus_coverage_distinct_bugs"] <= m["n_real_bugs"]


def test_plot_is_a_1000px_png(result):
    png = sim.plot(result)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert abs(png_size(png)[0] - 1000) <= 20
