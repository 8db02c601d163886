"""What the offline judge's cut-points can trade: how many of one style's answers it can put
on the right side of the pass mark, and what every other style keeps meanwhile.

The shipped reading (its learner and parameters, ``grader/offline_model.json``) is fitted
without each card in turn on the fitting rows (``grader.calibration.train``; the held-out sets
are not read); every cut of ``train.CUT_GRID`` then grades every row. For each share of the
chosen style graded right, the script prints the cuts that keep the worst of the other styles
highest: the Pareto frontier. A goal such as "partly-wrong at 90%, every style at 90%" is
within the reading's reach only if the frontier holds a line with both.

    python -m grader.calibration.frontier --rows-cache /tmp/rows.pkl   # 25 minutes; 15 with the rows kept
    python -m grader.calibration.frontier --style missing-core
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.calibration import train
from grader.offline.evidence import ALL_MISCONCEPTION_FEATURES, ALL_POINT_FEATURES
from grader.offline.judge import MODEL_PATH

Cuts = tuple[float, ...]


def frontier(results: Sequence[tuple[Cuts, dict[str, float]]], style: str) -> list[tuple[Cuts, dict[str, float]]]:
    """The (cuts, agreement per style) not dominated on (``style``, the worst other style),
    best ``style`` first; ties keep the first cuts met."""
    def worst_other(agreement: dict[str, float]) -> float:
        return min(v for k, v in agreement.items() if k != style)

    ordered = sorted(results, key=lambda r: (-r[1][style], -worst_other(r[1])))
    kept: list[tuple[Cuts, dict[str, float]]] = []
    for cuts, agreement in ordered:
        if not kept or worst_other(agreement) > worst_other(kept[-1][1]):
            kept.append((cuts, agreement))
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--style", default="partly-wrong", help="the style to trade for")
    parser.add_argument("--model", type=Path, default=MODEL_PATH, help="whose learner to refit")
    parser.add_argument("--rows-cache", type=Path, help="features kept between runs (as train's)")
    args = parser.parse_args(argv)
    rows = train.fitting_rows(cache=args.rows_cache)
    if args.style not in {r.kind for r in rows}:
        parser.error(f"no fitting answer has the style {args.style!r}")
    shipped = json.loads(args.model.read_text(encoding="utf-8"))
    params = shipped["params"]
    learner = (shipped["learner"], tuple(params) if isinstance(params, list) else params)
    columns = (
        [ALL_POINT_FEATURES.index(name) for name in shipped["point_features"]],
        [ALL_MISCONCEPTION_FEATURES.index(name) for name in shipped["misconception_features"]],
    )
    read = train.held_readings(rows, train.cross_fitted(rows, learner, columns))
    results = []
    for number, cuts in enumerate(train.CUT_GRID, 1):
        results.append((cuts, train.style_agreement(rows, train.graded_at(rows, read, cuts))))
        if number % 100 == 0 or number == len(train.CUT_GRID):
            print(f"  [{number}/{len(train.CUT_GRID)}] cut-points graded", file=sys.stderr, flush=True)
    styles = sorted(results[0][1])
    print(f"{learner}, leave-one-card-out on {len(rows)} fitting answers; pass/fail agreement per style, %")
    print("cuts (present, partial, asserted, contradicted) | " + " ".join(styles))
    for cuts, agreement in frontier(results, args.style):
        print(f"{cuts} | " + " ".join(f"{100 * agreement[s]:.0f}" for s in styles))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
